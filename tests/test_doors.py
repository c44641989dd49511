"""Writes that skipped the door (issue 64, item 4), called as an attacker would — every role below the one needed, on
someone else's object, through the API and the CLI: a viewer's or a rater's `Lab` fitting a model or running a power
analysis; an analyst making personal links to the owner's study; `Lab()` naming no one on a lab server; a hand-made
terminal actor claiming another name; the terminal's batch commands writing with no audit row; a study's refusal
(its cap reached, a name taken) audited as refused, not failed; and the audit list's empty detail."""

from __future__ import annotations

import pytest

from backend.actions import studies as study_actions
from backend.analysis import power_analysis
from backend.api import Lab
from backend.cli.main import main
from backend.identity import links
from backend.identity.actor import Actor, terminal
from backend.identity.permissions import Forbidden
from backend.store import links as store_links
from backend.store.access import session
from backend.studies import collection
from tests.helpers.people import LOCAL, give_roles
from tests.helpers.studies import holder, item_store

DESIGN = """
name: doors
dataset: door-items
item: item
condition: variant
order: {seed: 1}
question: "Is it so? {hypothesis}"
scale: {kind: likert}
"""
MAKER = Actor("maker@lab.example", "owner", "sign-in")
ANALYST = Actor("analyst@lab.example", "analyst", "sign-in")
VIEWER = Actor("viewer@lab.example", "viewer", "sign-in")
RATER = Actor("rater@lab.example", "rater", "sign-in")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store with a study made by an owner and six participants' answers on it."""
    path = item_store(tmp_path_factory.mktemp("doors") / "lab.duckdb", "door-items", 6)
    give_roles(path, MAKER, ANALYST, VIEWER, RATER)
    with session(path) as con:
        study_actions.create(con, DESIGN, actor=MAKER)
        for n in range(6):
            who = holder(con, path, "doors", f"doors-{n:03d}")
            study_actions.join(con, "doors", actor=who)
            for position in range(6):
                study_actions.answer(con, "doors", position, (position * 7 + n * 3) % 7 - 3, actor=who)
    return path


def audited(store, action: str) -> list[tuple]:
    with session(store) as con:
        return con.execute(
            "SELECT actor, outcome FROM audit WHERE action = $a ORDER BY happened_at", {"a": action}
        ).fetchall()


def test_a_model_and_a_power_analysis_need_an_analyst_and_are_audited(store):
    for person in (VIEWER, RATER):
        with pytest.raises(Forbidden):
            Lab(store, person).study_model("doors")
    fitted = Lab(store, ANALYST).study_model("doors")
    assert fitted.formula.startswith("value ~")
    assumed = {"intercept": 0.0, "effects": {"b": 0.5}, "reference": "a", "sd_participant": 0.5, "sd_item": 0.5}
    assumed |= {"sd_slope": 0.1, "sd_residual": 1.0}
    for person in (VIEWER, RATER):
        with pytest.raises(Forbidden):
            Lab(store, person).study_power("doors", counts=(6,), sims=2, test="f1", **assumed)
    table = Lab(store, ANALYST).study_power("doors", counts=(6,), sims=2, test="f1", **assumed)
    assert set(table["participants"]) == {6}
    # issue 64, item 5: what the store keeps lives beside it (it was the repository's data/fits and data/power
    # whatever store was used, so two stores shared them)
    beside = store.parent / f"{store.name}.kept"
    assert list((beside / "fits").glob("doors-*.json"))  # the fit of the study doors
    assert [p.stem for p in (beside / "power").glob("*.json")] == list(power_analysis.finished("doors", store))
    assert not power_analysis.finished("doors")  # the configured store (another) keeps no run of this one
    assert audited(store, "fit model") == [(VIEWER.id, "refused"), (RATER.id, "refused"), (ANALYST.id, "done")]
    assert audited(store, "run power") == [(VIEWER.id, "refused"), (RATER.id, "refused"), (ANALYST.id, "done")]


def test_personal_links_to_a_study_are_its_maker_s_or_an_owner_s(store):
    with session(store) as con:
        for person in (ANALYST, VIEWER):
            with pytest.raises(Forbidden):
                study_actions.make_links(con, store, "doors", 1000, actor=person)
        assert len(store_links.listing(con, collection.object_of("doors"))) == 6  # the six participants' only
        made = study_actions.make_links(con, store, "doors", 1, actor=MAKER)
    assert len(made) == 1
    refused = [entry for entry in audited(store, "create study link") if entry[1] == "refused"]
    assert refused == [(ANALYST.id, "refused"), (VIEWER.id, "refused")]  # one row each, before any link was made


def test_no_one_acts_as_the_local_owner_on_a_server_and_a_terminal_actor_is_this_machine_s_user(store, monkeypatch):
    monkeypatch.setenv("PLAB_MODE", "server")
    with pytest.raises(Forbidden, match=r"requires sign-in.*Lab\(actor=terminal\(\)\)"):
        Lab(store).study_model("doors")  # Lab() names no one: refused, not the local owner
    monkeypatch.delenv("PLAB_MODE")
    with pytest.raises(Forbidden, match="the machine user running this process"):
        Lab(store, Actor("mallory", "owner", "terminal")).study_model("doors")
    assert Lab(store, terminal()).study_model("doors").formula  # the real terminal user may


def test_terminal_batch_commands_are_audited_as_the_terminal_s_user(store, capsys):
    assert main(["--store", str(store), "baselines", "--only", "door-items", "--no-nn"]) == 0
    assert main(["--store", str(store), "predict", "--model", "no-such-model", "--dataset", "door-items"]) == 1
    capsys.readouterr()
    me = terminal().id
    assert audited(store, "ingest")[-1] == (me, "done")
    assert audited(store, "run model")[-1] == (me, "failed")
    assert main(["--store", str(store), "audit", "--limit", "5"]) == 0
    assert "nan" not in capsys.readouterr().out  # an entry without detail shows none


def test_a_study_s_refusals_are_audited_as_refused(store):
    with session(store) as con:
        with pytest.raises(collection.StudyRefused):
            study_actions.create(con, DESIGN, actor=LOCAL)  # the name is taken
        study_actions.create(con, DESIGN.replace("doors", "capped") + "platform: {name: prolific}\n", actor=MAKER)
        made = study_actions.general_link(con, store, "capped", 1, actor=MAKER)
        general = links.opened(con, store, made.token)
        for pid in ("5f00aa", "5f00bb"):  # the second finds the one place taken
            url = {"PROLIFIC_PID": pid, "STUDY_ID": "s", "SESSION_ID": "e"}
            if pid == "5f00aa":
                study_actions.join_general(con, store, "capped", url, actor=general)
            else:
                with pytest.raises(collection.StudyRefused):
                    study_actions.join_general(con, store, "capped", url, actor=general)
    assert audited(store, "create study")[-2] == (LOCAL.id, "refused")
    assert [outcome for _, outcome in audited(store, "respond")][-2:] == ["done", "refused"]
