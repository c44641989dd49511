"""A lab server in Chromium (issue 44): sign-in through a real OpenID Connect provider process (oidc-provider-mock),
each role's pages and what the backend refuses when a forbidden write is forced, blinded rater links (one task,
no gold, no one else's ratings; tampered, expired and revoked links refused; two link raters at once), and the
audit of all of it. One server and one provider for the module; the store is a copy of the real one."""

from __future__ import annotations

import os
import re
import shutil
from datetime import timedelta

import pytest

from backend.analysis import rating_tasks, saved_slices
from backend.analysis import ratings as rate
from backend.identity import links, roles
from backend.identity.actor import Actor
from backend.identity.permissions import Forbidden
from backend.store import access
from backend.store import links as store_links
from backend.store.examples import Slice
from tests.helpers.browser import CHROMIUM, SETTLED, serve, watched
from tests.helpers.net import free_port
from tests.helpers.oidc_provider import provider, secrets_file, sign_in

RUN = "nope/RoBERTa-large/mnli-snli-anli-fever/1"
PEOPLE = {  # sub (the e-mail the provider signs in) → role in the roles file
    "ow@lab.example": "owner",
    "an@lab.example": "analyst",
    "vi@lab.example": "viewer",
    "ra@lab.example": "rater",
}
RATERS = ("rater-alpha", "rater-beta")  # link holders without accounts
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(real_store, tmp_path_factory):
    """A copy of the real store with roles, a rating task on a NOPE run and links; served with PLAB_MODE=server."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it when run as root)")
    folder = tmp_path_factory.mktemp("server")
    store = folder / "lab.duckdb"
    shutil.copy(real_store, store)
    for who, role in PEOPLE.items():
        roles.add(roles.path(store), who, role)
    with access.session(store) as con:
        task = rating_tasks.create(con, RUN, 2, "Is the label right for this pair?", sample=6)
        made = {p: links.create(con, store, p, f"rating-task:{task}", 7, by="ow@lab.example") for p in RATERS}
        links.create(con, store, "ra@lab.example", f"rating-task:{task}", 7, by="ow@lab.example")
        expired = links.create(con, store, "rater-gamma", f"rating-task:{task}", 7, by="ow@lab.example")
        revoked = links.create(con, store, "rater-delta", f"rating-task:{task}", 7, by="ow@lab.example")
        links.revoke(con, revoked.link_id, "ow@lab.example")
    port = free_port()
    with provider() as oidc:
        config = {"PLAB_STORE": str(store), "PLAB_MODE": "server"}
        config["STREAMLIT_SECRETS_FILES"] = str(secrets_file(folder, port, oidc.url))  # never the checkout's
        for url in serve(config, port):
            yield {"url": url, "store": store, "task": task, "links": made, "expired": expired, "revoked": revoked}


def _page(browser, url: str):
    page = watched(browser.new_context(viewport={"width": 1400, "height": 1800}).new_page())
    page.goto(url)
    page.wait_for_function(SETTLED, timeout=60_000)
    return page


def _nav(page) -> list[str]:
    """The page names in the sidebar's navigation (each link's text is its icon's name, then the page's), all of
    them: the sidebar folds a long list under "View N more"."""
    more = page.get_by_text(re.compile(r"^View \d+ more$"))
    if more.count():
        more.first.click()
        page.get_by_text("View less").first.wait_for(timeout=10_000)
    return [name.split("\n")[-1].strip() for name in page.locator("[data-testid=stSidebarNav] a").all_inner_texts()]


def _signed_in(browser, server, who: str):
    page = _page(browser, server["url"])
    sign_in(page, who)
    page.wait_for_function(SETTLED, timeout=60_000)
    return page


def test_anonymous_and_roleless_people_see_only_why_they_cannot_go_on(browser, server):
    page = _page(browser, server["url"] + "/explore?dataset=nope")
    body = page.inner_text("body")
    assert "Sign in to use this lab" in body and "NOPE" not in body and _nav(page) == []
    sign_in(page, "nobody@elsewhere.example")
    page.wait_for_function(SETTLED, timeout=60_000)
    body = page.inner_text("body")
    assert "you have no role in this lab" in body and _nav(page) == []
    page.context.close()


def test_a_viewer_reads_and_exports_but_every_write_is_refused_in_the_backend(browser, server):
    page = _signed_in(browser, server, "vi@lab.example")
    assert "Activity" not in _nav(page) and "Explore" in _nav(page)
    assert "Signed in as vi@lab.example · viewer" in page.inner_text("body").replace("\u2060", "")  # (no autolink)
    page.goto(server["url"] + "/imports")
    page.wait_for_function(SETTLED, timeout=60_000)
    assert "importing needs the analyst role" in page.inner_text("body")
    page.goto(server["url"] + "/explore?dataset=nope")
    page.wait_for_function(SETTLED, timeout=60_000)
    assert page.get_by_text("Save this slice").count() == 0 and page.get_by_text("Pin to report").count() == 0
    page.context.close()
    viewer = Actor("vi@lab.example", "viewer", "sign-in")  # what the page hides, forced through the views
    with access.session(server["store"]) as con:
        before = con.execute("SELECT count(*) FROM saved_slices").fetchone()[0]
        with pytest.raises(Forbidden, match="needs the analyst role"):
            saved_slices.save(con, "mine", Slice("nope", ()), actor=viewer)
        with pytest.raises(Forbidden, match="needs the analyst role"):
            rate.save(con, RUN, "x", "vi@lab.example", {"acceptable": 1}, actor=viewer)
        with pytest.raises(Forbidden, match="needs the analyst role"):
            rating_tasks.create(con, RUN, 2, "g", actor=viewer)
        assert con.execute("SELECT count(*) FROM saved_slices").fetchone()[0] == before
        refused = con.execute(
            "SELECT action FROM audit WHERE actor = 'vi@lab.example' AND outcome = 'refused' ORDER BY happened_at"
        ).fetchall()
    assert [r[0] for r in refused] == ["save slice", "rate", "create rating task"]


def test_an_analyst_imports_but_not_others_work_and_an_owner_reads_the_audit(browser, server):
    page = _signed_in(browser, server, "an@lab.example")
    assert "Activity" not in _nav(page)
    page.goto(server["url"] + "/imports")
    page.wait_for_function(SETTLED, timeout=60_000)
    assert "importing needs" not in page.inner_text("body")
    page.context.close()
    analyst, owner = Actor("an@lab.example", "analyst", "sign-in"), Actor("ow@lab.example", "owner", "sign-in")
    with access.session(server["store"]) as con:
        saved_slices.save(con, "owner's", Slice("nope", ()), actor=owner)
        with pytest.raises(Forbidden, match="made by ow@lab.example: that needs the owner role"):
            saved_slices.delete(con, "owner's", actor=analyst)
        saved_slices.save(con, "analyst's", Slice("nope", ()), actor=analyst)
        assert saved_slices.delete(con, "analyst's", actor=analyst)
        made = con.execute("SELECT created_by FROM saved_slices WHERE name = 'owner''s'").fetchone()[0]
    assert made == "ow@lab.example"
    page = _signed_in(browser, server, "ow@lab.example")
    assert "Activity" in _nav(page)
    page.goto(server["url"] + "/activity?who=an@lab.example")
    page.wait_for_function(SETTLED, timeout=60_000)
    body = page.inner_text("body")
    assert "the newest 3 audit entries" in body  # the analyst's refused delete, their save and their delete
    with access.session(server["store"]) as con:
        theirs = con.execute(
            "SELECT action, target, outcome FROM audit WHERE actor = 'an@lab.example' ORDER BY happened_at"
        ).fetchall()
    assert theirs == [
        ("delete slice", "owner's", "refused"),
        ("save slice", "analyst's", "done"),
        ("delete slice", "analyst's", "done"),
    ]
    page.context.close()


def test_a_rater_link_opens_its_one_task_blinded_and_each_rating_carries_its_rater(browser, server):
    first, second = (_page(browser, server["url"] + "/?link=" + server["links"][p].token) for p in RATERS)
    for page in (first, second):
        body = page.inner_text("body")
        assert "Is the label right for this pair?" in body and "You have rated 0 of 6 items." in body
        assert _nav(page) == [] and "Gold" not in body and "Agreement" not in body and RUN not in page.content()
    for page in (first, second):  # two link raters at once: both saves kept
        page.get_by_role("radiogroup", name="Acceptability").get_by_text("1 — Acceptable").click()
        page.get_by_role("button", name="Save and next").click()
    for page, other in ((first, "rater-beta"), (second, "rater-alpha")):
        page.get_by_text("You have rated 1 of 6 items.").wait_for(timeout=60_000)
        assert other not in page.content()  # no other rater's id, rating or progress on the page
    with access.session(server["store"]) as con:
        rated = con.execute(
            "SELECT rater_id, count(*) FROM ratings WHERE run_id = $r AND source = 'user' GROUP BY ALL ORDER BY 1",
            {"r": RUN},
        ).fetchall()
        done = con.execute("SELECT actor, via FROM audit WHERE action = 'rate' AND outcome = 'done'").fetchall()
    assert rated == [("rater-alpha", 1), ("rater-beta", 1)]
    assert sorted(done) == [("rater-alpha", "link"), ("rater-beta", "link")]
    first.goto(
        server["url"] + "/explore?link=" + server["links"]["rater-alpha"].token
    )  # no other page for a link holder
    first.wait_for_function(SETTLED, timeout=60_000)
    assert "You have rated 1 of 6 items." in first.inner_text("body") and "Trigger" not in first.inner_text("body")
    for page in (first, second):
        page.context.close()


def test_tampered_expired_and_revoked_links_are_refused_in_plain_words(browser, server):
    with access.session(server["store"]) as con:
        con.execute(
            "UPDATE links SET expires_at = $t WHERE link_id = $i",
            {"t": store_links.now() - timedelta(minutes=1), "i": server["expired"].link_id},
        )
    token = server["links"]["rater-alpha"].token
    cases = {
        token[:-3] + ("AAA" if not token.endswith("AAA") else "BBB"): "This link is not valid",
        server["revoked"].token: "This link was withdrawn",
        server["expired"].token: "not known to this lab",  # its signed expiry no longer matches the store's
    }
    for bad, said in cases.items():
        page = _page(browser, server["url"] + "/?link=" + bad)
        body = page.inner_text("body")
        assert said in body and "Rate" not in _nav(page) and "Save and next" not in body, body[:500]
        page.context.close()


def test_a_rater_account_signs_in_to_its_assigned_task_only(browser, server):
    page = _signed_in(browser, server, "ra@lab.example")
    body = page.inner_text("body")
    assert _nav(page) == [] and "Is the label right for this pair?" in body and "You have rated 0 of 6" in body
    page.goto(server["url"] + "/imports")  # a page outside its role: Streamlit falls back to its only page
    page.wait_for_function(SETTLED, timeout=60_000)
    body = page.inner_text("body")
    assert "Your runs" not in body and "Save and next" in body  # the Import page's tabs are not drawn
    page.context.close()
    with access.session(server["store"]) as con, pytest.raises(Forbidden, match="may rate only rating-task:"):
        rate.save(
            con, RUN, "x", "ra@lab.example", {"acceptability": 1}, actor=Actor("ra@lab.example", "rater", "sign-in")
        )
