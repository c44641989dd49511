"""A lab server in Chromium (issue 44): sign-in through a real OpenID Connect provider process (oidc-provider-mock),
each role's pages and what the backend refuses when a forbidden write is forced, blinded rater links (one task,
no gold, no one else's ratings; tampered, expired and revoked links refused; two link raters at once), and the
audit of all of it. One server and one provider for the module; the store is a copy of the real one."""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from backend.actions import jobs as job_actions
from backend.actions import ratings as rating_actions
from backend.actions import slices as slice_actions
from backend.actions import studies as study_actions
from backend.analysis import mixed_model, rating_tasks
from backend.identity import links, roles
from backend.identity.actor import Actor
from backend.identity.permissions import Forbidden
from backend.store import access
from backend.store import links as store_links
from backend.store.examples import Slice
from tests.helpers.browser import CHROMIUM, SETTLED, expand, rerun, serve, watched
from tests.helpers.net import free_port
from tests.helpers.oidc_provider import provider, secrets_file, sign_in

RUN = "nope/RoBERTa-large/mnli-snli-anli-fever/1"
ROOT = Path(__file__).resolve().parents[1]
PEOPLE = {  # sub (the e-mail the provider signs in) → role in the roles file
    "ow@lab.example": "owner",
    "an@lab.example": "analyst",
    "vi@lab.example": "viewer",
    "ra@lab.example": "rater",
    "de@lab.example": "analyst",  # demoted to viewer while their tabs are open
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


def test_sign_in_lands_on_the_page_the_link_named_and_never_outside_the_lab(browser, server):
    """Issue 54, item 9: st.login always comes back to /, in a new session; the lab takes the person on to the
    address they opened, once, and only to one of its own paths (an address elsewhere kept in the tab is dropped)."""
    page = _page(browser, server["url"] + "/explore?dataset=nope&split=adv")
    sign_in(page, "vi@lab.example")
    page.wait_for_url("**/explore?*split=adv*", timeout=30_000)  # (dataset=nope, the default, leaves the URL)
    page.wait_for_function(SETTLED, timeout=60_000)
    assert "Explore" in page.inner_text("body")
    page.reload()  # once: a reload of the page signed in on stays there
    page.wait_for_function(SETTLED, timeout=60_000)
    assert urlsplit(page.url).path == "/explore" and "split=adv" in page.url
    page.context.close()
    for elsewhere in ("//evil.example/explore", "https://evil.example/", "/\\evil.example"):
        page = _page(browser, server["url"] + "/explore")
        page.evaluate("(asked) => sessionStorage.setItem('plab-after-sign-in', asked)", elsewhere)
        sign_in(page, "vi@lab.example")
        page.wait_for_function(SETTLED, timeout=60_000)
        page.wait_for_timeout(500)  # time for a navigation the script would start
        assert page.url.startswith(server["url"]) and "evil" not in page.url, (elsewhere, page.url)
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
    page.goto(server["url"] + "/gradient?dataset=projective_probability")  # issue 55: a fit is an analyst's job
    page.wait_for_function(SETTLED, timeout=60_000)
    assert "Fitting a model needs the analyst role (yours: viewer)" in page.inner_text("body")
    assert page.get_by_role("button", name="Fit the model").count() == 0
    page.context.close()
    viewer = Actor("vi@lab.example", "viewer", "sign-in")  # what the page hides, forced through the views
    with access.session(server["store"]) as con:
        model = mixed_model.chosen(con, "projective_probability", "prior")
    with pytest.raises(Forbidden, match="needs the analyst role"):
        job_actions.start_model(server["store"], model, actor=viewer)
    with access.session(server["store"]) as con:
        before = con.execute("SELECT count(*) FROM saved_slices").fetchone()[0]
        with pytest.raises(Forbidden, match="needs the analyst role"):
            slice_actions.save(con, "mine", Slice("nope", ()), actor=viewer)
        with pytest.raises(Forbidden, match="needs the analyst role"):
            rating_actions.save(con, RUN, "x", "vi@lab.example", {"acceptable": 1}, actor=viewer)
        with pytest.raises(Forbidden, match="needs the analyst role"):
            rating_actions.create_task(con, RUN, 2, "g", actor=viewer)
        assert con.execute("SELECT count(*) FROM saved_slices").fetchone()[0] == before
        refused = con.execute(
            "SELECT action FROM audit WHERE actor = 'vi@lab.example' AND outcome = 'refused' ORDER BY happened_at"
        ).fetchall()
    assert [r[0] for r in refused] == ["fit model", "save slice", "rate", "create rating task"]


def test_an_analyst_imports_but_not_others_work_and_an_owner_reads_the_audit(browser, server):
    page = _signed_in(browser, server, "an@lab.example")
    assert "Activity" not in _nav(page)
    page.goto(server["url"] + "/imports")
    page.wait_for_function(SETTLED, timeout=60_000)
    assert "importing needs" not in page.inner_text("body")
    page.context.close()
    analyst, owner = Actor("an@lab.example", "analyst", "sign-in"), Actor("ow@lab.example", "owner", "sign-in")
    with access.session(server["store"]) as con:
        slice_actions.save(con, "owner's", Slice("nope", ()), actor=owner)
        with pytest.raises(Forbidden, match="made by ow@lab.example: that needs the owner role"):
            slice_actions.delete(con, "owner's", actor=analyst)
        slice_actions.save(con, "analyst's", Slice("nope", ()), actor=analyst)
        assert slice_actions.delete(con, "analyst's", actor=analyst)
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
    first.get_by_text("You have rated 1 of 6 items.").wait_for(timeout=60_000)  # its task again, where it left off
    first.wait_for_function(SETTLED, timeout=60_000)
    assert "Trigger" not in first.inner_text("body")
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
        rating_actions.save(
            con, RUN, "x", "ra@lab.example", {"acceptability": 1}, actor=Actor("ra@lab.example", "rater", "sign-in")
        )


def _audit(store, *where: str) -> list[tuple]:
    with access.session(store) as con:
        return con.execute(
            "SELECT actor, role, action, outcome FROM audit WHERE " + " AND ".join(where) + " ORDER BY happened_at"
        ).fetchall()


def _pin_models(page, url: str) -> None:
    """Press the Overview's last *Pin to report* (its Models table) and wait for the toast that says how it went."""
    page.goto(url)
    page.wait_for_function(SETTLED, timeout=60_000)
    rerun(page, lambda: page.get_by_role("button", name="Pin to report").last.click())


def _rate_first(page) -> None:
    """On the Rate page of RUN: mark the item acceptable and press *Save and next*."""
    choice = re.compile(r"^1 — (yes$|Acceptable)")  # the analyst's form, the blinded one
    page.get_by_role("radiogroup", name="Acceptability").get_by_text(choice).click()
    rerun(page, lambda: page.get_by_role("button", name="Save and next").click())


def test_callback_writes_are_made_as_the_signed_in_person_within_their_role_at_that_moment(browser, server):
    """Pin to report, Save and next and the Report page's buttons run in widget callbacks, before app.py: each is
    stored and audited as the person who pressed it, an analyst is refused on the owner's items, and a demotion
    takes effect in tabs that were open before it, at their next write."""
    store, url = server["store"], server["url"]
    owner = _signed_in(browser, server, "ow@lab.example")
    _pin_models(owner, url)
    owner.goto(f"{url}/rate?run={RUN}")
    owner.wait_for_function(SETTLED, timeout=60_000)
    _rate_first(owner)
    analyst = _signed_in(browser, server, "de@lab.example")
    _pin_models(analyst, url)
    report = analyst.context.new_page()  # the same person's second tab
    report.goto(f"{url}/report")
    report.wait_for_function(SETTLED, timeout=60_000)
    rating = analyst.context.new_page()
    rating.goto(f"{url}/rate?run={RUN}")
    rating.wait_for_function(SETTLED, timeout=60_000)
    _rate_first(rating)
    with access.session(store) as con:
        pinned = con.execute("SELECT item_id, created_by FROM report_items ORDER BY pinned_at").fetchall()
        rated = con.execute(
            "SELECT DISTINCT rater_id FROM ratings WHERE run_id = $r AND source = 'user'", {"r": RUN}
        ).fetchall()
    assert [by for _, by in pinned] == ["ow@lab.example", "de@lab.example"]
    assert {"ow@lab.example", "de@lab.example"} <= {r[0] for r in rated}
    owners_item, own_item = (item for item, _ in pinned)
    rerun(report, lambda: report.locator(f".st-key-remove-{owners_item} button").first.click())  # the owner's item
    assert _audit(store, "action = 'edit report'") == [("de@lab.example", "analyst", "edit report", "refused")]
    roles.add(roles.path(store), "de@lab.example", "viewer")  # demoted while three tabs are open
    try:
        rerun(report, lambda: report.locator(f".st-key-remove-{own_item} button").first.click())  # their own item
        # the Overview tab as drawn before the demotion: its Models table is pinned, another view is not
        rerun(analyst, lambda: analyst.get_by_role("button", name="Pin to report").first.click())
        _rate_first(rating)
    finally:
        roles.add(roles.path(store), "de@lab.example", "analyst")
    with access.session(store) as con:
        assert con.execute("SELECT count(*) FROM report_items").fetchone()[0] == 2  # nothing removed or added
        assert (
            con.execute(
                "SELECT count(*) FROM ratings WHERE rater_id = 'de@lab.example' AND source = 'user'"
            ).fetchone()[0]
            == 1
        )  # their rating from before the demotion only
    assert _audit(store, "actor = 'de@lab.example'", "action IN ('pin to report', 'rate', 'edit report')") == [
        ("de@lab.example", "analyst", "pin to report", "done"),
        ("de@lab.example", "analyst", "rate", "done"),
        ("de@lab.example", "analyst", "edit report", "refused"),
        ("de@lab.example", "viewer", "edit report", "refused"),
        ("de@lab.example", "viewer", "pin to report", "refused"),
        ("de@lab.example", "viewer", "rate", "refused"),
    ]
    assert _audit(store, "actor = 'ow@lab.example'", "action IN ('pin to report', 'rate')") == [
        ("ow@lab.example", "owner", "pin to report", "done"),
        ("ow@lab.example", "owner", "rate", "done"),
    ]
    assert {row[0] for row in _audit(store, "action IN ('pin to report', 'edit report')")} == {
        "ow@lab.example",
        "de@lab.example",
    }  # never the local owner: on a server nobody acts by default
    for page in (owner, analyst):
        page.context.close()


def test_a_link_revoked_or_expired_while_its_page_is_open_saves_nothing_and_is_audited(browser, server):
    store, task = server["store"], server["task"]
    with access.session(store) as con:
        expiring = links.create(con, store, "rater-exp", f"rating-task:{task}", 15 / 86_400, by="ow@lab.example")
        withdrawn = links.create(con, store, "rater-rev", f"rating-task:{task}", 7, by="ow@lab.example")
    pages = {}
    for link in (expiring, withdrawn):
        pages[link.person] = _page(browser, server["url"] + "/?link=" + link.token)
        assert "Save and next" in pages[link.person].inner_text("body")
    with access.session(store) as con:
        links.revoke(con, withdrawn.link_id, "ow@lab.example")
        wait = (expiring.expires_at - store_links.now()).total_seconds()
    pages["rater-exp"].wait_for_timeout(max(wait, 0) * 1000 + 1500)  # until the link has expired, page open
    said = {}
    for person, page in pages.items():
        _rate_first(page)
        said[person] = page.inner_text("body")
        page.context.close()
    assert "This link was withdrawn" in said["rater-rev"] and "This link expired" in said["rater-exp"]
    with access.session(store) as con:
        kept = con.execute(
            "SELECT count(*) FROM ratings WHERE rater_id IN ('rater-exp', 'rater-rev') AND source = 'user'"
        ).fetchone()[0]
        refused = con.execute(
            "SELECT actor, action, detail FROM audit WHERE actor IN ('rater-exp', 'rater-rev') AND outcome = 'refused' "
            "ORDER BY actor, action"
        ).fetchall()
    assert kept == 0
    assert [(who, action) for who, action, _ in refused] == [
        ("rater-exp", "open link"),  # the rerun after the refused save draws the link's refusal, audited too
        ("rater-exp", "rate"),
        ("rater-rev", "open link"),
        ("rater-rev", "rate"),
    ]
    assert "expired" in refused[1][2] and "withdrawn" in refused[3][2]


def test_a_raters_page_and_frames_name_no_run_model_item_facet_or_split(browser, server):
    """What a link holder's browser receives (HTML, element keys, websocket frames, the link's claims) names no run,
    model, item id, facet value or split (SECURITY.md, Blinded identifiers)."""
    with access.session(server["store"]) as con:
        link = links.create(con, server["store"], "rater-eps", f"rating-task:{server['task']}", 7, by="ow@lab.example")
        items = [
            r[0]
            for r in con.execute(
                "SELECT example_id FROM rating_task_items WHERE task_id = $t", {"t": server["task"]}
            ).fetchall()
        ]
        facets = {
            value
            for row in con.execute(
                "SELECT split, trigger_type, polarity FROM examples "
                "WHERE dataset_id = 'nope' AND list_contains($i, example_id)",
                {"i": items},
            ).fetchall()
            for value in row
            if value
        }
    frames = []
    page = watched(browser.new_context(viewport={"width": 1400, "height": 1800}).new_page())
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(payload)))
    page.goto(server["url"] + "/?link=" + link.token)
    page.get_by_role("button", name="Save and next").wait_for(timeout=60_000)
    page.wait_for_function(SETTLED, timeout=60_000)
    html = page.content()
    received = "\n".join(f if isinstance(f, str) else f.decode("utf-8", "replace") for f in frames)
    claims = json.dumps(json.loads(links._unb64(link.token.split(".")[0])))
    _, model, data, _ = RUN.split("/")
    named = [RUN, model, data, *(e for e in items if not e.isdigit())]  # a bare number ("549") is on any page
    assert server["task"].startswith("task-") and received
    for said in (html, received, claims):
        assert not [n for n in named if n in said]
    keys = re.findall(r"st-key-[\w-]+", html) + re.findall(r"\$\$ID-[0-9a-f]{32}-([\x20-\x7e]+)", received)
    keys += re.findall(r"blind-[\x21-\x7e]+", received)
    assert any(k.startswith("st-key-blind-") for k in keys), keys
    for key in keys:  # facet values and splits only in ids: the item's own text may hold such words
        assert not [f for f in {*facets, "neg", "adv"} if f in key], key
    page.context.close()


def test_an_analyst_presses_the_general_link_and_platform_id_controls_of_an_owners_study_and_is_refused(
    browser, server
):
    """Issue 56, items 1 and 5, as an attacker would: on an owner's study with a recruitment platform, an analyst
    (whose role may do these to their own studies) presses *Make the general link*, *Make links*, *Show the platform
    ids*, *Show
    the demographics*, *Release*, *Mark returned* and *Prepare the archive with platform ids*: each is refused in the
    backend, shown in words and audited, and nothing is made; a viewer is not offered them."""
    owner = Actor("ow@lab.example", "owner", "sign-in")
    design = (ROOT / "data/studies/projective-probability.yaml").read_text().replace("pp-replication", "pp-owned")
    with access.session(server["store"]) as con:
        study_id = study_actions.create(con, design + "platform: {name: prolific}\n", actor=owner)
    page = _signed_in(browser, server, "an@lab.example")
    page.goto(f"{server['url']}/study?study={study_id}")
    page.wait_for_function(SETTLED, timeout=60_000)
    expand(page, "General link for prolific")
    rerun(page, lambda: page.get_by_role("button", name="Make the general link").click())
    page.get_by_text("No general link made:").wait_for(timeout=30_000)
    rerun(page, lambda: page.get_by_role("button", name="Make links").click())  # issue 64, item 4: 10 personal links
    page.get_by_text("No links made:").wait_for(timeout=30_000)
    expand(page, "Platform ids and demographics (personal data)")
    for button, said in (
        ("Show the platform ids", "Not shown:"),
        ("Show the demographics", "Not shown:"),
        ("Prepare the archive with platform ids", "Not prepared:"),
    ):
        rerun(page, lambda: page.get_by_role("button", name=button).click())  # noqa: B023 — called at once
        page.get_by_text(said).wait_for(timeout=30_000)
    freed = page.get_by_role("textbox", name="Release a platform id")
    freed.fill("5f1PIDA")
    rerun(page, lambda: freed.press("Enter"))
    rerun(page, lambda: page.get_by_role("button", name="Release", exact=True).click())
    page.get_by_text("Not released:").wait_for(timeout=30_000)
    back = page.get_by_role("textbox", name="A submission returned on the platform (its platform id)")
    back.fill("5f1PIDA")  # issue 63, item 4: marking someone's submission returned is the maker's or an owner's
    rerun(page, lambda: back.press("Enter"))
    rerun(page, lambda: page.get_by_role("button", name="Mark returned", exact=True).click())
    page.get_by_text("Not marked:").wait_for(timeout=30_000)
    assert page.get_by_role("button", name="Archive with platform ids and demographics").count() == 0
    page.context.close()
    viewer = _signed_in(browser, server, "vi@lab.example")
    viewer.goto(f"{server['url']}/study?study={study_id}")
    viewer.wait_for_function(SETTLED, timeout=60_000)
    viewer.get_by_role("heading", name="Participants").wait_for(timeout=30_000)
    assert "General link for" not in viewer.inner_text("body") and "Platform ids" not in viewer.inner_text("body")
    viewer.context.close()
    with access.session(server["store"]) as con:
        refused = con.execute(
            "SELECT action FROM audit WHERE actor = 'an@lab.example' AND outcome = 'refused' AND target LIKE $t "
            "ORDER BY happened_at",
            {"t": f"%{study_id}%"},
        ).fetchall()
        made = links.listing(con, f"study:{study_id}")
    assert [r[0] for r in refused] == ["create general link", "create study link"] + ["manage platform ids"] * 5
    assert made.empty
