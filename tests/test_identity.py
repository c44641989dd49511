"""The identity core (issue 44): the roles file, signed links (tampered, expired, revoked, unknown), which role each
action needs, and the audit of every attempt — on a real DuckDB store file."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta

import pytest

from backend.actions import ratings as rating_actions
from backend.identity import links, permissions, roles
from backend.identity.actor import Actor, NotSignedIn, local, who
from backend.store import access
from backend.store import links as store_links
from backend.store.connection import connect
from tests.helpers.people import give_roles

VIEWER = Actor("vi@lab.example", "viewer", "sign-in")
ANALYST = Actor("an@lab.example", "analyst", "sign-in")
OWNER = Actor("ow@lab.example", "owner", "sign-in")


@pytest.fixture()
def store(tmp_path):
    path = tmp_path / "lab.duckdb"
    connect(path).close()
    give_roles(path, VIEWER, ANALYST, OWNER)
    with access.session(path) as con:
        yield path, con


def audit(con) -> list[tuple]:
    return con.execute("SELECT actor, role, via, action, target, outcome FROM audit ORDER BY happened_at").fetchall()


def test_the_roles_file_maps_emails_and_domains_and_refuses_what_it_cannot_use(tmp_path):
    where = roles.path(tmp_path / "lab.duckdb")
    assert where.name == "lab.roles.toml" and roles.read(where) == {}
    roles.add(where, "Ada@Lab.example", "owner")
    roles.add(where, "*@lab.example", "viewer")
    found = roles.read(where)
    assert roles.role_of(found, "ada@lab.example") == "owner"  # the e-mail beats its domain, case-blind
    assert roles.role_of(found, "bo@LAB.example") == "viewer"
    assert roles.role_of(found, "eve@elsewhere.example") is None and roles.role_of(found, None) is None
    assert oct(where.stat().st_mode & 0o777) == "0o600"
    with pytest.raises(roles.RolesError, match="expected one of owner, analyst, viewer, rater"):
        roles.add(where, "x@lab.example", "admin")
    with pytest.raises(roles.RolesError, match="not an e-mail or a"):
        roles.add(where, "lab.example", "viewer")
    assert roles.remove(where, "ADA@lab.example") and not roles.remove(where, "ada@lab.example")
    assert roles.read(where) == {"*@lab.example": "viewer"}
    where.write_text('[roles]\n"ada@lab.example" = "boss"\n')
    with pytest.raises(roles.RolesError, match=r"lab.roles.toml: ada@lab.example: role 'boss'"):
        roles.read(where)


@pytest.mark.parametrize(
    ("actor", "action", "owner", "allowed"),
    [
        (VIEWER, "export", None, True),
        (VIEWER, "import run", None, False),
        (VIEWER, "rate", None, False),
        (ANALYST, "import run", None, True),
        (ANALYST, "delete run", "an@lab.example", True),  # their own
        (ANALYST, "delete run", "ow@lab.example", False),  # someone else's
        (ANALYST, "delete run", None, False),  # made before anyone was recorded
        (ANALYST, "train", None, False),
        (ANALYST, "register model", None, False),
        (OWNER, "delete run", "an@lab.example", True),
        (OWNER, "manage roles", None, True),
        (Actor("ra@lab.example", "rater", "sign-in"), "export", None, False),
    ],
)
def test_each_role_may_do_what_the_permission_table_says(store, actor, action, owner, allowed):
    _, con = store
    assert (permissions.needs(con, actor, action, owner=owner) is None) == allowed
    assert permissions.may(actor, action) == (
        permissions.RANK.get(actor.role, 0) >= permissions.RANK[permissions.ACTIONS[action]]
        if actor.role != "rater"
        else action in permissions.RATER_ACTIONS
    )


def test_a_refused_write_names_the_role_it_needs_writes_nothing_and_is_audited(store):
    _, con = store
    ran = []
    refusal = pytest.raises(permissions.Forbidden, match="that needs the analyst role")
    with refusal as refused, permissions.acting(con, VIEWER, "save slice", target="s1"):
        ran.append(1)
    assert not ran and refused.value.needs == "analyst"
    with permissions.acting(con, ANALYST, "save slice", target="s2") as by:
        assert by == ANALYST
    with pytest.raises(ValueError, match="boom"), permissions.acting(con, ANALYST, "save slice", target="s3"):
        raise ValueError("boom")
    assert audit(con) == [
        ("vi@lab.example", "viewer", "sign-in", "save slice", "s1", "refused"),
        ("an@lab.example", "analyst", "sign-in", "save slice", "s2", "done"),
        ("an@lab.example", "analyst", "sign-in", "save slice", "s3", "failed"),
    ]


def test_no_actor_means_the_local_owner_until_the_process_requires_sign_in(store, monkeypatch):
    _, con = store
    monkeypatch.setattr("backend.identity.actor._TERMINAL", False)  # a CLI test in this worker may have set it
    assert who(None) == local() and local().role == "owner"
    monkeypatch.setattr("backend.identity.actor._SIGN_IN_REQUIRED", True)
    with pytest.raises(NotSignedIn):
        who(None)
    with pytest.raises(permissions.Forbidden, match="requires sign-in"):
        permissions.check(con, None, "import run", "r")


def test_a_link_opens_its_one_task_as_a_rater_and_nothing_else(store):
    path, con = store
    made = links.create(con, path, "student-1", "rating-task:t1", 7, by=ANALYST.id)
    assert made.url("https://lab.example/").startswith("https://lab.example/?link=")
    rater = links.opened(con, path, made.token)
    assert (rater.id, rater.role, rater.via, rater.scope) == ("student-1", "rater", "link", "rating-task:t1")
    assert permissions.needs(con, rater, "rate", scope="rating-task:t1") is None
    assert permissions.needs(con, rater, "rate", scope="rating-task:t2")[0] == "analyst"
    assert permissions.needs(con, rater, "save slice") is not None


def _tampered(token: str) -> list[str]:
    payload, _, signature = token.partition(".")
    claims = json.loads(links._unb64(payload))
    other = links._b64(json.dumps({**claims, "o": "rating-task:other"}).encode())
    flipped = signature[:-1] + ("A" if signature[-1] != "A" else "B")
    return [f"{other}.{signature}", f"{payload}.{flipped}", payload, token[:20], "", "not-a-link"]


def test_tampered_expired_revoked_and_foreign_links_are_refused_in_plain_words(store, tmp_path, monkeypatch):
    path, con = store
    made = links.create(con, path, "student-2", "rating-task:t1", 1, by=OWNER.id)
    for bad in _tampered(made.token):
        with pytest.raises(links.LinkRefused, match="not valid"):
            links.opened(con, path, bad)
    monkeypatch.setenv("PLAB_LINK_SECRET", "rotated")  # a rotated secret invalidates every link
    with pytest.raises(links.LinkRefused, match="not valid"):
        links.opened(con, path, made.token)
    monkeypatch.delenv("PLAB_LINK_SECRET")
    con.execute("UPDATE links SET expires_at = $t", {"t": store_links.now() - timedelta(hours=1)})
    assert links.listing(con)["state"].tolist() == ["expired"]
    with pytest.raises(links.LinkRefused, match="not known"):  # its signed expiry no longer matches the store
        links.opened(con, path, made.token)
    live = links.create(con, path, "student-3", "rating-task:t1", 1, by=OWNER.id)
    assert links.revoke(con, live.link_id, OWNER.id) and not links.revoke(con, live.link_id, OWNER.id)
    with pytest.raises(links.LinkRefused, match="withdrawn"):
        links.opened(con, path, live.token)
    with pytest.raises(ValueError, match="expected KIND:ID"):
        links.create(con, path, "x", "run:r1", 1, by=OWNER.id)
    with pytest.raises(ValueError, match="days"):
        links.create(con, path, "x", "rating-task:t1", 0, by=OWNER.id)


def test_an_expired_link_is_refused_as_expired(store, monkeypatch):
    path, con = store
    made = links.create(con, path, "student-4", "rating-task:t1", 1, by=OWNER.id)
    later = store_links.now() + timedelta(days=2)
    monkeypatch.setattr(store_links, "now", lambda: later)  # the clock moved on: no real part can do that here
    with pytest.raises(links.LinkRefused, match="expired on"):
        links.opened(con, path, made.token)


def test_a_rater_account_is_assigned_by_a_link_naming_its_email(store):
    path, con = store
    account = Actor("ra@lab.example", "rater", "sign-in")
    assert permissions.needs(con, account, "rate", scope="rating-task:t9") is not None
    links.create(con, path, "RA@lab.example", "rating-task:t9", 3, by=OWNER.id)
    assert permissions.needs(con, account, "rate", scope="rating-task:t9") is None
    assert permissions.assigned(con, account) == {"rating-task:t9"}


def test_an_endpoints_daily_cap_per_person_stops_one_person_and_not_the_next(tmp_path):
    from backend.models.endpoints import spend
    from backend.store.writer import AUTHOR

    ledger = tmp_path / "endpoints.sqlite"
    token = AUTHOR.set("ada@lab.example")
    try:
        spend.charge("my-llm", 0.5, ledger)
        with pytest.raises(spend.BudgetReached, match=r"your spending cap today, \$0.6000 per person"):
            spend.Budget().reserve("my-llm", 0.2, None, ledger, person_cap=0.6)
        spend.Budget().reserve("my-llm", 0.2, daily_cap=1.0, where=ledger)  # no per-person cap: the day's holds
    finally:
        AUTHOR.reset(token)
    token = AUTHOR.set("ben@lab.example")
    try:
        spend.Budget().reserve("my-llm", 0.2, None, ledger, person_cap=0.6)  # Ben has spent nothing today
        assert spend.spent_by_me("my-llm", ledger) == 0.0
    finally:
        AUTHOR.reset(token)
    assert spend.spent_today("my-llm", ledger) == pytest.approx(0.5)


def test_links_to_a_rating_task_are_made_and_revoked_through_the_view_by_role(real_store, tmp_path):
    store = tmp_path / "lab.duckdb"
    shutil.copy(real_store, store)
    run = "nope/RoBERTa-large/mnli-snli-anli-fever/1"
    other = Actor("an2@lab.example", "analyst", "sign-in")
    give_roles(store, VIEWER, ANALYST, other)
    with access.session(store) as con:
        task = rating_actions.create_task(con, run, 2, "Rate it.", sample=3, actor=ANALYST)
        with pytest.raises(permissions.Forbidden, match="needs the analyst role"):
            rating_actions.make_links(con, store, task, ["r-1"], 7, actor=VIEWER)
        with pytest.raises(ValueError, match="rater_id"):
            rating_actions.make_links(con, store, task, ["r 1!"], 7, actor=ANALYST)
        made = rating_actions.make_links(con, store, task, ["r-1", "r-2"], 7, actor=ANALYST)
        assert [link.person for link in made] == ["r-1", "r-2"]
        with pytest.raises(permissions.Forbidden, match="made by an@lab.example: that needs the owner role"):
            rating_actions.revoke_link(con, made[0].link_id, actor=other)
        assert rating_actions.revoke_link(con, made[0].link_id, actor=ANALYST)
        assert dict(zip(*links.listing(con, f"rating-task:{task}")[["person", "state"]].T.values)) == {
            "r-1": "revoked",
            "r-2": "live",
        }
        assert con.execute("SELECT created_by FROM rating_tasks WHERE task_id = $t", {"t": task}).fetchone()[0] == (
            ANALYST.id
        )


@pytest.mark.parametrize(
    ("argv", "env", "refused"),
    [
        (["run", "app.py", "--server.address", "localhost"], {}, False),
        (["run", "app.py", "--server.address=127.0.0.1"], {}, False),
        (["run", "app.py"], {}, True),  # no address: Streamlit listens on every interface
        (["run", "app.py", "--server.address", "0.0.0.0"], {}, True),
        (["run", "app.py", "--server.address", "0.0.0.0"], {"PLAB_MODE": "server"}, False),
        (["run", "app.py", "--server.address", "0.0.0.0"], {"PLAB_UNSAFE_NO_SIGN_IN": "1"}, False),
        (["run", "app.py"], {"STREAMLIT_SERVER_ADDRESS": "10.1.2.3"}, True),
        (["run", "app.py", "--server.address", "localhost"], {"PLAB_MODE": "servr"}, True),  # a typo is no mode
    ],
)
def test_the_dashboard_refuses_a_network_address_without_sign_in(argv, env, refused):
    from ui.serve import refusal

    said = refusal(argv, env)
    assert (said is not None) == refused
    if said and "PLAB_MODE=" not in said[:12]:
        assert "PLAB_MODE=server" in said and "PLAB_UNSAFE_NO_SIGN_IN=1" in said and "localhost" in said


def test_run_sh_refuses_a_network_address_before_building_anything(tmp_path):
    import os
    import subprocess

    store = tmp_path / "never.duckdb"
    env = {**os.environ, "PLAB_ADDRESS": "0.0.0.0", "PLAB_STORE": str(store), "PORT": "1"}
    env.pop("PLAB_MODE", None)
    done = subprocess.run(["bash", "scripts/run.sh"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "Refusing to serve Presupposition Lab on 0.0.0.0" in done.stderr
    assert not store.exists()  # refused before the first run's ingest
