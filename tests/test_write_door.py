"""The write door (issue 53): README's permission table is the code's, row by row; every action refuses each role
below it, writes nothing and leaves exactly one audit row; a write and its audit row commit together; a refusal
inside an act rolls it back; a job stops at its next chunk once its starter loses the role. On real store files."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from backend import actions
from backend.actions import jobs as job_actions
from backend.actions import ratings as rating_actions
from backend.actions import slices as slice_actions
from backend.actions import studies as study_actions
from backend.actions.door import DOORS
from backend.execution import batch, runs
from backend.identity import links, permissions, roles
from backend.identity.actor import STARTED_BY, Actor, starter_env
from backend.identity.permissions import ACTIONS, OWN_WORK, RANK, Forbidden
from backend.imports import datasets as user_datasets
from backend.imports.ingest import ingest
from backend.store import access
from backend.store.connection import connect
from backend.store.examples import Slice
from backend.studies import collection
from backend.studio import templates
from backend.views import report
from backend.views import study as study_view
from tests.helpers.data import make_falseqa
from tests.helpers.people import LOCAL, give_roles

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PEOPLE = {role: Actor(f"{role}@lab.example", role, "sign-in") for role in ("viewer", "analyst", "owner")}
ELSE = "someone-else@lab.example"
RUN = "nope/RoBERTa-large/mnli-snli-anli-fever/1"
TABLE = pd.DataFrame({"a": [1, 2]})
STUDY = (Path(__file__).resolve().parents[1] / "data" / "studies" / "stop-study.yaml").read_text()
TABLES = ("report_items", "saved_slices", "ratings", "rating_tasks", "links", "studies", "runs", "datasets", "meta")


def table_rows() -> list[dict]:
    """README's permission table: per row, the actions it names, whether it is about others' work, and each role's
    cell (✓, — or the rater's words)."""
    text = README.read_text()
    head = "| what | checked as (`backend/identity/permissions.py`) | viewer | analyst | owner | rater |"
    lines = text[text.index(head) :].splitlines()[2:]
    found = []
    for line in lines:
        if not line.startswith("|"):
            break
        what, checked, *cells = (cell.strip() for cell in line.strip("|").split("|"))
        found.append(
            {
                "what": what,
                "actions": re.findall(r"`([^`]+)`", checked),
                "others": "(others')" in checked,
                "cells": dict(zip(("viewer", "analyst", "owner", "rater"), cells)),
            }
        )
    return found


@pytest.fixture()
def store(tmp_path):
    path = tmp_path / "lab.duckdb"
    connect(path).close()
    give_roles(path, *PEOPLE.values())
    with access.session(path) as con:
        link = links.create(con, path, "r", "rating-task:nothing", 7, by=PEOPLE["owner"].id)
        yield path, con, links.opened(con, path, link.token)


def counts(con) -> dict[str, int]:
    return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in (*TABLES, "audit")}


def test_the_readme_permission_table_is_the_code_row_by_row(store):
    _, con, _ = store
    rows = table_rows()
    named = {action for row in rows for action in row["actions"]}
    assert named == set(ACTIONS), "every action of the code is in README's table, and no other"
    assert {a for row in rows if row["others"] for a in row["actions"]} == OWN_WORK
    checked = 0
    for row in rows:
        for action in row["actions"]:
            for role, person in PEOPLE.items():
                owner = (ELSE if row["others"] else person.id) if action in OWN_WORK else None
                allowed = permissions.needs(con, person, action, owner=owner) is None
                assert allowed == (row["cells"][role] == "✓"), (row["what"], action, role)
                checked += 1
            cell = row["cells"]["rater"]
            kind = {"assigned tasks only": "rating-task", "the study their link opens only": "study"}.get(cell)
            assert kind or cell == "—", (row["what"], cell)
            assert permissions.may(Actor("r", "rater", "link", scope="x:1"), action) == bool(kind)
            if kind:  # within the one object a link opens, and never outside it
                holder = Actor("r", "rater", "link", scope=f"{kind}:1")
                assert permissions.needs(con, holder, action, scope=f"{kind}:1") is None
                assert permissions.needs(con, holder, action, scope=f"{kind}:2") is not None
    assert checked == 3 * sum(len(row["actions"]) for row in rows)


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_every_action_refuses_each_role_below_it_writes_nothing_and_audits_it_once(store, action):
    _, con, holder = store
    below = [p for role, p in PEOPLE.items() if RANK[role] < RANK[ACTIONS[action]]]
    below += [holder]  # a live link to a rating task: no action outside it
    for person in below:
        before, ran = counts(con), []
        with pytest.raises(Forbidden) as refused, permissions.acting(con, person, action, "t", owner=ELSE):
            ran.append(con.execute("INSERT INTO meta VALUES ('written', 'yes')"))
        after = counts(con)
        assert not ran and after == {**before, "audit": before["audit"] + 1}, (action, person)
        row = con.execute(
            "SELECT actor, role, action, target, outcome, detail FROM audit ORDER BY happened_at DESC LIMIT 1"
        ).fetchone()
        assert row[:5] == (person.id, person.role, action, "t", "refused") and row[5] == str(refused.value)
        if person.role != "rater":
            assert f"that needs the {ACTIONS[action]} role" in row[5]


def test_a_fault_between_a_write_and_its_audit_row_leaves_neither(store, monkeypatch):
    """The audit row is written in the write's own transaction. A mock stands for the fault: DuckDB cannot be made
    to fail that one INSERT on demand (a full disk would), so `record` raises for the 'done' row only."""
    _, con, _ = store
    written = permissions.record

    def failing(con, actor, action, target, outcome, *more, **named):
        if outcome == "done":
            raise OSError("the disk is full")
        return written(con, actor, action, target, outcome, *more, **named)

    monkeypatch.setattr(permissions, "record", failing)
    with pytest.raises(OSError, match="disk is full"):
        report.pin(con, "table", "t", "c", report.table_json(TABLE), actor=PEOPLE["analyst"])
    assert con.execute("SELECT count(*) FROM report_items").fetchone()[0] == 0
    assert con.execute("SELECT outcome FROM audit").fetchall() == [("failed",)]


def test_a_refusal_inside_an_act_rolls_the_act_back_and_is_its_one_audit_row(store):
    _, con, _ = store
    analyst = PEOPLE["analyst"]
    refused = pytest.raises(Forbidden, match="that needs the owner role")
    with refused, permissions.acting(con, analyst, "save slice", "mine"):
        con.execute("INSERT INTO meta VALUES ('half-written', 'yes')")
        permissions.check(con, analyst, "delete slice", "mine", owner=ELSE)  # replacing someone else's
    assert not con.execute("SELECT * FROM meta WHERE key = 'half-written'").fetchall()
    assert con.execute("SELECT actor, action, outcome FROM audit").fetchall() == [
        (analyst.id, "delete slice", "refused")
    ]


def test_the_page_write_functions_act_through_the_door_as_the_person_given(real_store, tmp_path):
    path = tmp_path / "lab.duckdb"
    shutil.copy(real_store, path)
    owner, analyst, viewer = PEOPLE["owner"], PEOPLE["analyst"], PEOPLE["viewer"]
    give_roles(path, owner, analyst, viewer)
    with access.session(path) as con:
        item = report.pin(con, "table", "owner's", "c", report.table_json(TABLE), actor=owner)
        task = rating_actions.create_task(con, RUN, 2, "Rate it.", sample=2, actor=analyst)
        before = counts(con)
        refusals = [
            lambda: report.remove(con, item, actor=analyst),
            lambda: report.move(con, item, 1, actor=analyst),
            lambda: report.rename(con, item, "theirs", actor=analyst),
            lambda: report.pin(con, "table", "v", "c", report.table_json(TABLE), actor=viewer),
            lambda: slice_actions.save(con, "v", Slice("nope", ()), actor=viewer),
            lambda: rating_actions.make_links(con, path, task, ["r-1"], 7, actor=viewer),
            lambda: study_actions.create(con, STUDY, actor=viewer),
        ]
        for attempt in refusals:
            with pytest.raises(Forbidden):
                attempt()
        assert counts(con) == {**before, "audit": before["audit"] + len(refusals)}
        made = rating_actions.make_links(con, path, task, ["r-1", "r-2"], 7, actor=analyst)
        done = con.execute(
            "SELECT actor, action, target, detail FROM audit WHERE outcome = 'done' AND actor LIKE '%@lab.example' "
            "ORDER BY happened_at"
        ).fetchall()
    assert done == [
        (owner.id, "pin to report", "owner's", None),
        (analyst.id, "create rating task", RUN, None),
        (analyst.id, "create link", f"rating-task:{task}", "for r-1, r-2"),
    ]
    assert [link.person for link in made] == ["r-1", "r-2"]


def test_a_study_archive_is_exported_only_within_a_role(real_store, tmp_path):
    path = tmp_path / "lab.duckdb"
    shutil.copy(real_store, path)
    give_roles(path, PEOPLE["viewer"])
    with access.session(path) as con:
        user_datasets.save(
            con, templates.bundle(templates.expand(templates.example_text()), "stop-under-operators.yaml")
        )
        study = collection.create(con, STUDY)
        assert study_view.archive_zip(con, study, actor=PEOPLE["viewer"])[:2] == b"PK"
        link = study_actions.make_links(con, path, study, 1, actor=LOCAL)[0]
        holder = links.opened(con, path, link.token)
        with pytest.raises(Forbidden, match="needs the viewer role"):
            study_view.archive_zip(con, study, actor=holder)
        refused = con.execute("SELECT actor, action, outcome FROM audit WHERE outcome = 'refused'").fetchall()
    assert refused == [(link.person, "export", "refused")]


def test_a_job_stops_at_its_next_chunk_once_its_starter_loses_the_role(tmp_path, tiny, monkeypatch):  # noqa: F811
    path = tmp_path / "s.duckdb"
    assert ingest(["falseqa"], {"falseqa": make_falseqa(tmp_path / "fq", rows=10)}, path)[0].status == "loaded"
    starter = PEOPLE["analyst"]
    give_roles(path, starter)
    monkeypatch.setenv(STARTED_BY, starter_env(starter)[STARTED_BY])  # as jobs._start tells the job's process
    request = runs.Request(model="tiny-fp", dataset="falseqa", split="test", chunk=4, task="detect")
    check, asked = job_actions.job_check("run model", request.run_id()), []

    def allowed(con):
        asked.append(check(con))
        roles.add(roles.path(path), starter.id, "viewer")  # demoted while the job runs, after its first chunk

    with pytest.raises(Forbidden, match="needs the analyst role"):
        batch.predict(path, request, progress=False, allowed=allowed)
    with access.session(path) as con:
        status, stored = con.execute(
            "SELECT status, (SELECT count(*) FROM predictions p WHERE p.run_id = r.run_id) FROM runs r "
            "WHERE run_id = $r",
            {"r": request.run_id()},
        ).fetchone()
        refused = con.execute("SELECT actor, role, action, outcome FROM audit").fetchall()
    assert asked == [starter] and status == "interrupted" and stored == 4  # the first chunk only
    assert refused == [(starter.id, "viewer", "run model", "refused")]
    monkeypatch.delenv(STARTED_BY)
    assert job_actions.job_check("run model", request.run_id()) is None  # a terminal's own command: the owner's


# The writes that are a person's act, below the door: outside backend/actions/ no module of the lab calls them (a
# test may, to set up a store). The lab's own bookkeeping (SECURITY.md: system writes) is not among them.
ACTS = {
    "backend.imports.predictions": ("save", "delete"),
    "backend.imports.datasets": ("save", "write"),
    "backend.analysis.saved_slices": ("save", "delete"),
    "backend.analysis.ratings": ("save",),
    "backend.analysis.rating_tasks": ("create", "next_item"),
    "backend.studies.collection": (
        "create",
        "join",
        "answer",
        "close",
        "withdraw",
        "delete_participant",
        "general_join",
        "release",
        "give_demographics",
    ),
    "backend.execution.jobs": ("start", "start_judge", "start_map", "start_training", "start_command"),
    "backend.execution.live": ("ask",),
    "backend.store.report_items": ("append", "reorder", "remove", "retitle"),
    "backend.identity.links": ("create", "revoke"),
    "backend.identity.roles": ("add", "remove"),
    "backend.models.registry": ("add_endpoint",),
    "backend.store.backup": ("write", "restore"),
    "backend.store.audit": ("entries",),
    "backend.analysis.studies": ("archive", "archive_zip", "demographics"),
}


def calls_below_the_door(path: Path) -> list[str]:
    """`module.function` of every call in the file to one of ACTS (through whatever name the file imports it by)."""
    tree = ast.parse(path.read_text())
    names: dict[str, str] = {}  # a local name → the module or function it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname or a.name: a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in names:
            target = f"{names[func.value.id]}.{func.attr}"
        elif isinstance(func, ast.Name) and func.id in names:
            target = names[func.id]
        else:
            continue
        module, _, function = target.rpartition(".")
        if function in ACTS.get(module, ()):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {target}")
    return found


def test_a_persons_write_is_made_only_through_a_door():
    """Every write that is someone's act is called from a door function (backend/actions/), declared with @door:
    the views, the commands, the notebook API and the pages reach those writes only through it."""
    sources = [p for folder in ("backend", "ui", "pages") for p in (ROOT / folder).rglob("*.py")]
    outside = [p for p in sources if "actions" not in p.relative_to(ROOT).parts] + [ROOT / "app.py"]
    assert not [call for path in outside for call in calls_below_the_door(path)]
    inside = [call for path in (ROOT / "backend" / "actions").glob("*.py") for call in calls_below_the_door(path)]
    assert len(inside) >= sum(len(functions) for functions in ACTS.values()) - 4  # the check sees the doors' calls
    for module in pkgutil.iter_modules(actions.__path__):  # each door is declared when its module is imported
        importlib.import_module(f"backend.actions.{module.name}")
    # every action has its door; replacing a dataset is checked inside the doors that import one or make a study
    assert set(DOORS) == set(ACTIONS) - {"replace dataset"}


def test_every_door_takes_its_actor_explicitly(store):
    """No write has a default actor: a door called without one is refused before anything is read or written."""
    _, con, _ = store
    with pytest.raises(TypeError, match="actor"):
        report.pin(con, "table", "t", "c", report.table_json(TABLE))
    with pytest.raises(TypeError, match="actor must be who acts"):
        slice_actions.delete(con, "x", actor=None)
