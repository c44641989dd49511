"""Two participants of judgement studies in Chromium, through their signed links (issue 47): the instructions and
consent, a practice item, the items on a 0-1 slider and on a 7-point scale, a reload midway that keeps the answers,
the completion code; and a third link, opened after the study is closed, refused. The README's run command serves
a copy of the real store with the Studio's example family set; the researcher makes the slider study on the Study
page from the shipped example design, makes its links there, watches the answers arrive, closes it and reads it."""

from __future__ import annotations

import html
import http.server
import json
import shutil
import threading
import time
from pathlib import Path

import pytest

from backend.actions import studies as study_actions
from backend.identity import links
from backend.imports import datasets as user_datasets
from backend.store import queries
from backend.store import studies as store_studies
from backend.store.access import session
from backend.studies import collection
from backend.studio import templates
from tests.helpers.browser import CHROMIUM, SETTLED, SHOTS, answered, expand, rerun, serve, shows, watched
from tests.helpers.net import free_port
from tests.helpers.people import LOCAL
from tests.helpers.studies import MAZE, typed_items

ROOT = Path(__file__).resolve().parents[1]
TIMED = "stop-timed"  # the shipped slider design again, for the timing test (issue 56)
LIKERT = """
name: stop-likert
dataset: stop-under-operators
item: item
condition: variant
order: {seed: 4, separate: item}
text: "Sue says: {input}"
question: "Is Sue certain that {hypothesis}"
scale: {kind: likert, min: -3, max: 3, left: "no", right: "yes"}
instructions: "Tell us how certain Sue is."
consent: "Your answers are kept without your name."
practice: [{text: "Sue says: It's raining again.", question: "Is Sue certain that it rained before?"}]
completion_code: C0DE-LIKERT
"""


@pytest.fixture(scope="module")
def lab(real_store, tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it when run as root)")
    store = tmp_path_factory.mktemp("studies") / "lab.duckdb"
    shutil.copy(real_store, store)
    with session(store) as con:
        expansion = templates.expand(templates.example_text())
        user_datasets.save(con, templates.bundle(expansion, "stop-under-operators.yaml"))
        likert = collection.create(con, LIKERT)
        made = {"likert": study_actions.make_links(con, store, likert, 1, actor=LOCAL)}
        timed = collection.create(con, (ROOT / "data/studies/stop-study.yaml").read_text().replace("stop-study", TIMED))
        made["timed"] = study_actions.make_links(con, store, timed, 1, actor=LOCAL)
    for url in serve({"PLAB_STORE": str(store)}):
        yield {"url": url, "store": store, "links": made, "slider": "stop-study", "likert": likert}


def test_a_researcher_creates_the_example_study_on_the_page_and_makes_links(browser, lab):
    page = watched(browser.new_context(viewport={"width": 1400, "height": 2000}).new_page())
    page.goto(f"{lab['url']}/study", wait_until="domcontentloaded")
    page.get_by_text("Nobody has opened a link yet").wait_for(timeout=90_000)  # the likert study, chosen first
    expand(page, "New study")
    rerun(page, lambda: page.get_by_role("button", name="Create study").click())
    page.get_by_text("no response yet: the design can still change").wait_for(timeout=30_000)
    assert page.locator("[data-testid=stSelectbox] input").first.input_value() == "stop-study"
    # issue 54, item 7: the address is where the dashboard is served; Enter in a box makes no links (it did: a
    # form's Enter submits it); a typed address outlives a visit to another page; the Links list shows new links
    address = page.get_by_role("textbox", name="The dashboard's address, as participants reach it")
    assert address.input_value() == lab["url"]
    count = page.get_by_label("Links to make")
    count.fill("2")
    rerun(page, lambda: count.press("Enter"))
    address.fill("https://lab.example")
    rerun(page, lambda: address.press("Enter"))
    assert "link(s) made" not in page.inner_text("body")
    rerun(page, lambda: page.get_by_role("link", name="Import").click())
    rerun(page, lambda: page.get_by_role("link", name="Studies").click())
    assert address.input_value() == "https://lab.example"
    count.fill("2")
    rerun(page, lambda: page.get_by_role("button", name="Make links").click())
    page.get_by_text("2 link(s) made").wait_for(timeout=30_000)
    with session(lab["store"]) as con:  # the page shows each link once; the test reads them back from the store
        rows = links.listing(con, "study:stop-study").sort_values("person")
        lab["links"]["slider"] = [
            links.Link(r.link_id, r.person, r.object, r.expires_at, links.token(lab["store"], r._asdict()))
            for r in rows.itertuples()
        ]
    assert [k.person for k in lab["links"]["slider"]] == ["stop-study-001", "stop-study-002"]


def opened(browser, lab, kind: str, n: int = 0):
    page = watched(browser.new_context(viewport={"width": 1200, "height": 1400}).new_page())
    page.goto(f"{lab['url']}/?link={lab['links'][kind][n].token}")
    page.wait_for_function(SETTLED, timeout=90_000)
    return page


def question(page) -> str:
    return page.get_by_text("Question ", exact=False).first.inner_text()


def start(page) -> None:
    page.get_by_text("Welcome").wait_for(timeout=60_000)
    body = page.inner_text("body")
    assert "Consent" in body and "Explore" not in body and "Overview" not in body  # the study only
    rerun(page, lambda: page.get_by_text("I have read this and agree to take part.").click())
    rerun(page, lambda: page.get_by_role("button", name="Start").click())


def next_(page) -> None:
    rerun(page, lambda: page.get_by_role("button", name="Next").click())


def test_a_participant_answers_on_the_slider_reloads_midway_and_gets_a_completion_code(browser, lab):
    page = opened(browser, lab, "slider")
    start(page)
    assert "Practice" in page.inner_text("body") and question(page) == "Question 1 of 7"
    answers = []
    for step in range(7):
        body = page.inner_text("body")
        if "native language" in body:
            page.get_by_text("yes", exact=True).click()  # in the browser: no rerun until Next
            answers.append("yes")
        else:
            key = "End" if "all the way to the right" in body else ("Home" if step % 2 else "PageUp")
            page.get_by_role("slider").press(key)
            answers.append(key)
        next_(page)
        if step == 1:
            page.screenshot(path=str(SHOTS / "participate.png"), full_page=True)  # a target item on the slider
        if step == 2:  # a reload midway: the link's page opens where they were
            page.reload()
            page.wait_for_function(SETTLED, timeout=60_000)
            assert question(page) == "Question 4 of 7"
    page.get_by_text("Your completion code").wait_for(timeout=30_000)
    with session(lab["store"]) as con:
        person = lab["links"]["slider"][0].person
        row = store_studies.participant(con, lab["slider"], person)
        given = store_studies.responses(con, lab["slider"]).query("participant_id == @person")
    page.get_by_text(row["completion_code"]).wait_for(timeout=30_000)  # its own condition: the code, not the heading
    assert row["finished_at"] is not None
    assert list(given["position"]) == list(range(7))  # every answer once, in order, across the reload
    assert given.loc[given["kind"] == "attention", "value"].tolist() == [1.0]
    assert set(given.loc[given["kind"] == "target", "value"]) <= {0.0, 0.6, 1.0}  # Home, PageUp from 0.5, End
    assert given.loc[given["kind"] == "native", "label"].tolist() == ["yes"]


def test_a_participant_answers_on_the_seven_point_scale(browser, lab):
    page = opened(browser, lab, "likert")
    start(page)
    points = ["-3 (no)", "+2", "0", "+3 (yes)", "-1"]
    for n, point in enumerate(points):
        assert question(page) == f"Question {n + 1} of 5"
        assert page.get_by_role("button", name="Next").is_disabled()  # no answer chosen yet
        page.get_by_text(point, exact=True).click()
        next_(page)
    page.get_by_text("C0DE-LIKERT").wait_for(timeout=30_000)
    with session(lab["store"]) as con:
        given = store_studies.responses(con, lab["likert"])
    assert given["value"].tolist() == [-3.0, 2.0, 0.0, 3.0, -1.0]


def test_the_researcher_watches_closes_and_reads_people_beside_the_design(browser, lab):
    page = watched(browser.new_context(viewport={"width": 1400, "height": 2400}).new_page())
    page.goto(f"{lab['url']}/study?study=stop-study", wait_until="domcontentloaded")
    page.get_by_text("1 started, 1 finished").wait_for(timeout=90_000)
    assert page.get_by_role("button", name="Close the study").is_disabled()  # one click does not close it
    rerun(page, lambda: page.get_by_text("Close it for good: no one joins or answers after this").click())
    rerun(page, lambda: page.get_by_role("button", name="Close the study").click())
    page.get_by_text("Closed: 1 participant left out").wait_for(timeout=30_000)  # faster than the 20 s floor
    assert page.get_by_role("button", name="Close the study").count() == 0
    shows(page, lab["url"], None, "Before and after the exclusions", "study")
    body = page.inner_text("body")
    assert "1 participant started and 1 finished" in body and "; 1 participant who finished in less than 20 s" in body
    assert "leaving 0 participants" in body and "no answers analysed" in body  # nobody left: no means are made up


def test_a_link_opened_after_the_study_closed_is_refused(browser, lab):
    page = opened(browser, lab, "slider", 1)
    page.get_by_text("this study is closed").wait_for(timeout=60_000)
    assert page.get_by_role("button", name="Start").count() == 0
    with session(lab["store"]) as con:
        assert store_studies.participant(con, lab["slider"], lab["links"]["slider"][1].person) is None


def test_the_slider_needs_a_move_answers_are_timed_leaving_the_tab_counts_and_a_stale_tab_says_so(browser, lab):
    """Issue 56, items 2, 3 and 6: two tabs press Start at once (one participant, no error); the slider shows no value
    and Next stays off until it moves; the browser's response time of an answer given after a known wait, and two
    leaves of the tab (blur, then the page hidden) dispatched in the page; a tab whose question was answered in the
    other says so plainly and shows the next with nothing carried over."""
    first, second = opened(browser, lab, "timed"), opened(browser, lab, "timed")
    for page in (first, second):
        page.get_by_text("I have read this and agree to take part.").click()
        page.get_by_role("button", name="Start").wait_for()
    for page in (first, second):
        page.wait_for_function(SETTLED, timeout=60_000)
    runs = [page.evaluate("() => window.__plabRun.runs") for page in (first, second)]
    first.get_by_role("button", name="Start").click()
    second.get_by_role("button", name="Start").click()  # at once: before the first one's run has answered
    for page, before in zip((first, second), runs):
        answered(page, before)
        page.locator(".plab-trial").wait_for(timeout=30_000)
        assert page.locator("[data-testid=stException], [data-testid=stAlert]").count() == 0
        assert question(page) == "Question 1 of 7"
    next_button = first.get_by_role("button", name="Next")
    assert next_button.is_disabled()  # untouched: no value
    assert first.locator(".plab-slider.untouched").count() == 1
    track = first.get_by_role("slider").bounding_box()
    first.get_by_role("slider").click(position={"x": track["width"] * 0.8, "y": track["height"] / 2})
    assert not next_button.is_disabled() and first.locator(".plab-slider.untouched").count() == 0
    first.evaluate(SEEN)  # the page's own record of when the next item appears and when its Next is clicked
    asked = time.monotonic()  # the next item cannot be shown before this
    next_(first)
    first.locator(".plab-trial[data-key=trial-1]").wait_for(timeout=30_000)
    first.wait_for_timeout(1500)  # the known wait
    first.get_by_role("slider").press("End")
    before = first.evaluate("() => window.__plabRun.runs")
    first.get_by_role("button", name="Next").click()
    within = (time.monotonic() - asked) * 1000  # the most the answer can have taken
    seen = first.evaluate("() => window.__plabSeen")
    answered(first, before)
    first.locator(".plab-trial[data-key=trial-2]").wait_for(timeout=30_000)
    left = time.monotonic()  # the most the page can have been left: from before the first event to after the last
    first.evaluate("() => window.dispatchEvent(new Event('blur'))")
    first.wait_for_timeout(300)  # the known time away, measured by the page
    first.evaluate("() => window.dispatchEvent(new Event('focus'))")
    away = time.monotonic() - left
    left = time.monotonic()
    first.evaluate(HIDDEN.replace("STATE", "hidden"))
    first.wait_for_timeout(400)
    first.evaluate(HIDDEN.replace("STATE", "visible"))
    away += time.monotonic() - left
    first.get_by_role("slider").press("Home")
    next_(first)
    # the second tab still shows the first question, answered in the first tab: a move there and Next
    second.get_by_role("slider").press("End")
    next_(second)
    second.get_by_text("This question was already answered in another tab or window; here is the next one.").wait_for()
    assert second.get_by_text("Question 4 of 7", exact=True).count() == 1 and "position:" not in second.inner_text(
        "body"
    )
    assert second.get_by_role("button", name="Next").is_disabled()  # the End press stayed with the old question
    with session(lab["store"]) as con:
        assert len(store_studies.participants(con, TIMED)) == 1
        joined = "SELECT count(*) FROM audit WHERE target = $t AND outcome = 'done'"
        assert con.execute(joined, {"t": f"{TIMED}: joined"}).fetchone()[0] == 1  # one audit row, too
        given = store_studies.responses(con, TIMED).set_index("position")
    assert list(given.index) == [0, 1, 2] and given["moved"].tolist() == [True, True, True]
    assert 0.7 <= given.loc[0, "value"] <= 0.9  # where the track was clicked
    # the stored RT is the time from the item's display to Next as the page saw it (±250 ms), and at least the
    # known wait; a loaded machine delays when the test learns of the display, never the page's own record
    rt = given.loc[1, "rt_ms"]
    assert abs(rt - (seen["clicked"] - seen["shown"])) <= 250 and 1500 <= rt <= within, (rt, seen, within)
    assert given.loc[1, "left_count"] == 0 and given.loc[2, "left_count"] == 2
    # at least the known waits, at most what the test saw pass around them (a loaded machine stretches both)
    assert 700 <= given.loc[2, "left_ms"] <= away * 1000, (given.loc[2, "left_ms"], away)


SEEN = """() => {
  const seen = (window.__plabSeen = {});
  const shown = () => document.querySelector('.plab-trial[data-key="trial-1"]');
  new MutationObserver((_, watching) => {
    if (shown()) { seen.shown = performance.now(); watching.disconnect(); }
  }).observe(document.body, {childList: true, subtree: true});
  document.addEventListener("click", (event) => {
    if (event.target.closest('.plab-trial[data-key="trial-1"] .plab-next')) seen.clicked = performance.now();
  }, true);
}"""
HIDDEN = """() => {
  Object.defineProperty(document, "visibilityState", {configurable: true, get: () => "STATE"});
  document.dispatchEvent(new Event("visibilitychange"));
}"""


def test_a_participant_withdraws_from_a_trial_and_their_link_then_says_so(browser, lab):
    """Issue 56, item 4: *Withdraw my answers* and its confirm step on a trial screen delete the participant's
    answers, ratings and row; their link (reloaded) shows only that they were withdrawn and takes no answer."""
    with session(lab["store"]) as con:
        study_id = collection.create(con, LIKERT.replace("stop-likert", "stop-withdraw"))
        lab["links"]["withdraw"] = study_actions.make_links(con, lab["store"], study_id, 1, actor=LOCAL)
    person = lab["links"]["withdraw"][0].person
    page = opened(browser, lab, "withdraw")
    start(page)
    for point in ("+2", "-1"):  # the practice item and a target item
        page.get_by_text(point, exact=True).click()
        next_(page)
    assert question(page) == "Question 3 of 5"
    with session(lab["store"]) as con:
        assert len(store_studies.responses(con, study_id)) == 2
    page.get_by_role("button", name="Withdraw my answers").click()
    rerun(page, lambda: page.get_by_role("button", name="Yes, withdraw and delete my answers").click())
    page.get_by_text("Your answers were withdrawn", exact=True).wait_for(timeout=30_000)
    page.reload()
    page.wait_for_function(SETTLED, timeout=60_000)
    page.get_by_text(collection.WITHDRAWN).wait_for(timeout=30_000)
    assert (
        page.get_by_role("button", name="Start").count() == 0 and page.get_by_role("button", name="Next").count() == 0
    )
    with session(lab["store"]) as con:
        assert store_studies.participant(con, study_id, person) is None
        assert store_studies.responses(con, study_id).empty
        assert not con.execute("SELECT count(*) FROM ratings WHERE dataset_id = $s", {"s": study_id}).fetchone()[0]
        assert store_studies.deletion(con, study_id, person)["deleted_by"] == person


class Platform(http.server.BaseHTTPRequestHandler):
    """A local stand-in for a recruitment platform's completion URL: records each request's path and when it came."""

    seen: list = []

    def do_GET(self):  # noqa: N802 — http.server's name
        Platform.seen.append((self.path, store_studies.now()))
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<h1>Submission complete</h1>")

    def log_message(self, *args):
        pass


@pytest.fixture()
def platform():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Platform)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_a_prolific_general_link_made_on_the_page_starts_resumes_refuses_another_browser_and_sends_back(
    browser, lab, platform
):
    """Issue 56, item 1: the researcher makes the general link on the Study page; a participant opens it as Prolific
    fills it in (PROLIFIC_PID, STUDY_ID, SESSION_ID) and starts; reopening it in the same browser resumes; another
    browser with the same id is told it has started and gets no question; after the last answer the browser reaches
    the (stand-in) completion URL with the code and the id, and the answer was in the store before it did."""
    study_id = "stop-prolific"
    design = LIKERT.replace("stop-likert", study_id) + (
        f'platform: {{name: prolific, completion: "{platform}/submissions/complete?cc={{code}}&pid={{id}}"}}\n'
    )
    with session(lab["store"]) as con:
        collection.create(con, design)
    page = watched(browser.new_context(viewport={"width": 1400, "height": 2000}).new_page())
    page.goto(f"{lab['url']}/study?study={study_id}", wait_until="domcontentloaded")
    page.wait_for_function(SETTLED, timeout=90_000)
    expand(page, "General link for prolific")
    cap = page.get_by_role("spinbutton", name="Most participants (cap)")
    cap.fill("3")
    rerun(page, lambda: cap.press("Enter"))
    rerun(page, lambda: page.get_by_role("button", name="Make the general link").click())
    page.get_by_text("General link made").wait_for(timeout=30_000)
    general = page.locator("[data-testid=stCode] code").last.inner_text().strip()
    assert general.startswith(lab["url"]) and general.endswith(
        "&PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )
    filled = general.replace("{{%PROLIFIC_PID%}}", "5f1PIDA").replace("{{%STUDY_ID%}}", "ST9")
    filled = filled.replace("{{%SESSION_ID%}}", "SE7")

    mine = watched(browser.new_context(viewport={"width": 1200, "height": 1400}).new_page())
    mine.goto(filled)
    mine.wait_for_function(SETTLED, timeout=90_000)
    start(mine)
    mine.locator(".plab-trial").wait_for(timeout=30_000)
    assert question(mine) == "Question 1 of 5" and "PROLIFIC_PID" not in mine.url  # its own link now
    with session(lab["store"]) as con:
        came = store_studies.by_platform(con, study_id, "5f1PIDA")
    assert came["platform_keep"] == {"STUDY_ID": "ST9", "SESSION_ID": "SE7"} and "5f1PIDA" not in came["participant_id"]
    mine.get_by_text("+2", exact=True).click()
    next_(mine)
    again = watched(mine.context.new_page())  # the platform's link again, in the same browser: resumed
    again.goto(filled)
    again.wait_for_function(SETTLED, timeout=60_000)
    again.locator(".plab-trial").wait_for(timeout=30_000)
    assert question(again) == "Question 2 of 5"
    again.close()
    other = watched(browser.new_context().new_page())  # another browser with the same id
    other.goto(filled)
    other.get_by_text("You have already started this study").wait_for(timeout=60_000)
    assert other.get_by_role("button", name="Start").count() == 0 and other.locator(".plab-trial").count() == 0
    for point in ("-1", "0", "+3 (yes)"):
        mine.get_by_text(point, exact=True).click()
        next_(mine)
    mine.get_by_text("-3 (no)", exact=True).click()
    mine.get_by_role("button", name="Next").click()  # the last answer: the page then leaves for the platform
    mine.wait_for_url(f"{platform}/**", timeout=60_000)
    mine.get_by_text("Submission complete").wait_for()
    with session(lab["store"]) as con:
        row = store_studies.participant(con, study_id, came["participant_id"])
        given = store_studies.responses(con, study_id)
    path, reached = next(seen for seen in Platform.seen if seen[0].startswith("/submissions"))
    assert path == "/submissions/complete?cc=C0DE-LIKERT&pid=5f1PIDA"
    assert len(given) == 5 and row["finished_at"] <= reached  # stored, then sent on
    page.reload()  # the researcher sees the id (personal data: the study's maker, an owner here)
    page.wait_for_function(SETTLED, timeout=60_000)
    expand(page, "Platform ids and demographics (personal data)")
    rerun(page, lambda: page.get_by_role("button", name="Show the platform ids").click())
    page.get_by_text("5f1PIDA").wait_for(state="attached", timeout=30_000)  # a cell of the table's canvas


class Framing(http.server.BaseHTTPRequestHandler):
    """A stand-in for MTurk's worker site: a page on another site (127.0.0.1, where the dashboard is localhost) that
    shows the HIT's external question, the study's general link, in an iframe, as MTurk does."""

    src = ""

    def do_GET(self):  # noqa: N802 — http.server's name
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        frame = f'<iframe src="{html.escape(Framing.src)}" width="1200" height="1400"></iframe>'
        self.wfile.write(f"<h1>Your HIT</h1>{frame}".encode())

    def log_message(self, *args):
        pass


def hit_frame(page):
    """The study's frame inside the worker site's page, once its script has settled."""
    page.wait_for_function("() => window.frames.length > 0", timeout=60_000)
    frame = next(f for f in page.frames if f.url.startswith("http://localhost"))
    frame.wait_for_function(SETTLED, timeout=90_000)
    return frame


def test_an_mturk_worker_resumes_inside_the_hit_frame_after_a_reload_and_no_one_else_takes_the_place(
    browser, lab, platform
):
    """Issue 63, item 1: MTurk shows the study inside a cross-site iframe, where a cookie written the usual way
    (SameSite=Lax) is a third-party one and is not kept, so a worker who reloaded the HIT was told they had already
    started. The frame keeps the worker's personal token in a partitioned cookie of the worker site's own: after a
    reload of the HIT the worker is back at their next question, and another browser with the same worker id is
    refused."""
    study_id = "stop-mturk"
    with session(lab["store"]) as con:
        collection.create(con, LIKERT.replace("stop-likert", study_id) + "platform: {name: mturk}\n")
        made = study_actions.general_link(con, lab["store"], study_id, 3, actor=LOCAL)
        general = collection.general_url(con, study_id, made.url(lab["url"]))
    Framing.src = f"{general}&workerId=W0RKER1&assignmentId=A55IGN1&hitId=H1T&turkSubmitTo={platform}"
    site = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Framing)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    try:
        top = watched(browser.new_context(viewport={"width": 1300, "height": 1600}).new_page())
        top.goto(f"http://127.0.0.1:{site.server_port}/hit")
        frame = hit_frame(top)
        start(frame)
        frame.locator(".plab-trial").wait_for(timeout=30_000)
        assert question(frame) == "Question 1 of 5"
        frame.get_by_text("+2", exact=True).click()
        next_(frame)
        assert question(frame) == "Question 2 of 5"
        top.reload()  # the worker reloads the HIT: the frame opens the general link again
        frame = hit_frame(top)
        frame.locator(".plab-trial").wait_for(timeout=60_000)
        assert question(frame) == "Question 2 of 5"
        other = watched(browser.new_context().new_page())  # another browser with the same worker id
        other.goto(f"http://127.0.0.1:{site.server_port}/hit")
        hit_frame(other).get_by_text("You have already started this study").wait_for(timeout=60_000)
        with session(lab["store"]) as con:
            came = store_studies.by_platform(con, study_id, "W0RKER1")
            assert len(store_studies.responses(con, study_id)) == 1 and came["browser_link"] is not None
    finally:
        site.shutdown()


def test_a_screened_out_participant_reaches_the_platform_with_the_screened_out_code(browser, lab, platform):
    """Issue 63, item 5: the welcome asks the design's screening question; an answer it does not accept ends the
    study at once, politely, and the browser reaches the platform's completion URL with the screened_out code."""
    study_id = "stop-screened"
    design = LIKERT.replace("stop-likert", study_id) + (
        f'platform: {{name: prolific, completion: "{platform}/submissions/complete?cc={{code}}&pid={{id}}"}}\n'
        'screening:\n  - {name: english, question: "Is English your first language?", options: [yes, no], '
        "accept: [yes]}\ncompletion_codes: {screened_out: SCR-OUT}\n"
    )
    with session(lab["store"]) as con:
        collection.create(con, design)
        made = study_actions.general_link(con, lab["store"], study_id, 3, actor=LOCAL)
        general = collection.general_url(con, study_id, made.url(lab["url"]))
    filled = (
        general.replace("{{%PROLIFIC_PID%}}", "5cr33n").replace("{{%STUDY_ID%}}", "S").replace("{{%SESSION_ID%}}", "E")
    )
    page = watched(browser.new_context(viewport={"width": 1200, "height": 1400}).new_page())
    page.goto(filled)
    page.wait_for_function(SETTLED, timeout=90_000)
    page.get_by_text("Welcome").wait_for(timeout=60_000)
    rerun(page, lambda: page.get_by_text("I have read this and agree to take part.").click())
    assert page.get_by_role("button", name="Start").is_disabled()  # the question is not answered yet
    rerun(page, lambda: page.get_by_text("no", exact=True).click())
    page.get_by_role("button", name="Start").click()
    page.wait_for_url(f"{platform}/**", timeout=60_000)
    page.get_by_text("Submission complete").wait_for()
    assert any(path == "/submissions/complete?cc=SCR-OUT&pid=5cr33n" for path, _ in Platform.seen)
    with session(lab["store"]) as con:
        came = store_studies.by_platform(con, study_id, "5cr33n")
        assert store_studies.ended(con, study_id, came["participant_id"]) == "screened out"
        assert store_studies.responses(con, study_id).empty


def typed_study(lab, text: str, name: str) -> str:
    """A study of `text` (a design, or a template over tests.helpers.studies.typed_items, saved to the lab's store
    once), with one link under lab["links"][name]."""
    with session(lab["store"]) as con:
        if "{name}" in text and "typed-items" not in queries.dataset_ids(con):
            user_datasets.save(con, typed_items())
        templated = "{name}" in text
        study_id = collection.create(con, text.format(name=name) + 'consent: "You agree."\n' if templated else text)
        lab["links"][name] = study_actions.make_links(con, lab["store"], study_id, 1, actor=LOCAL)
    return study_id


KEYS = {"Space": (" ", 32), "KeyE": ("e", 69), "KeyI": ("i", 73)}


def press(page, code: str) -> float:
    """Press a key now, as the operating system would report it: a key down and up through Chrome's DevTools input,
    stamped with this moment (the event's timeStamp the page reads); the moment, in seconds. Playwright's own press
    carries no time of its own, and on a loaded machine the time its call returned strayed by 50 ms from when the
    page got the key (a clean-clone CI run under a parallel browser sweep)."""
    key, code_number = KEYS[code]
    cdp = page.context.new_cdp_session(page)
    at = time.time()
    for kind in ("keyDown", "keyUp"):
        event = {"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": code_number, "timestamp": at}
        cdp.send("Input.dispatchKeyEvent", event)
    cdp.detach()
    return at


def pressed(page, keys: list[str], waits: list[float]) -> list[float]:
    """Press `keys` in turn with the known `waits` (ms) between them; the known intervals (ms) between the key
    events, which the page's reading times must match."""
    at = []
    for n, key in enumerate(keys):
        at.append(press(page, key))
        if n < len(waits):
            page.wait_for_timeout(waits[n])  # the known time on the region
    return [(b - a) * 1000 for a, b in zip(at, at[1:])]


def stored_detail(lab, study_id: str) -> dict:
    with session(lab["store"]) as con:
        given = store_studies.responses(con, study_id)
    assert len(given) == 1
    return json.loads(given["detail"].iloc[0]) | {"label": given["label"].iloc[0], "value": given["value"].iloc[0]}


def test_reading_and_maze_times_match_known_key_timings_and_a_forced_choice_keeps_its_order(browser, lab):
    """Issue 63, item 6, with the shipped designs over the Studio's family set (the Maze over test items with foils):
    in self-paced reading each press of the space bar shows the next word (the others as dashes), and each word's
    stored time equals the known time between the key presses (each stamped with the moment it was sent, as an
    operating system stamps a key) within 50 ms; the Maze's pairs are chosen with e and i, timed the same way; a
    forced choice stores the sentence chosen and the order the page showed."""
    study_id = typed_study(lab, (ROOT / "data/studies/stop-reading.yaml").read_text(), "stop-reading")
    page = opened(browser, lab, "stop-reading")
    start(page)
    window = page.locator(".plab-reading")
    window.wait_for(timeout=30_000)
    assert set(window.inner_text().replace(" ", "")) == {"-"}  # nothing shown before the first press
    words = ["The", "children", "stopped", "playing", "outside", "when", "it", "rained."]  # the practice sentence
    waits = [250.0 + 90 * (n % 4) for n in range(len(words))]
    measured = pressed(page, ["Space"] * (len(words) + 1), waits)
    page.locator(".plab-trial[data-key=trial-1]").wait_for(timeout=30_000)  # no question: sent at the last press
    read = stored_detail(lab, study_id)
    times = [r["rt_ms"] for r in read["regions"]]
    assert [r["text"] for r in read["regions"]] == words
    assert all(abs(t - m) < 50 for t, m in zip(times, measured)), (times, measured)

    study_id = typed_study(lab, MAZE, "maze")
    page = opened(browser, lab, "maze")
    start(page)
    page.locator(".plab-maze").wait_for(timeout=30_000)
    with session(lab["store"]) as con:
        first = store_studies.participant(con, study_id, lab["links"]["maze"][0].person)["trials"][0]["id"]
        words = str(store_studies.example_row(con, study_id, first)["input"]).split()
    keys = []
    for n, word in enumerate(words):  # the right word's side, read before each press
        keys.append(press(page, "KeyE" if page.locator(".plab-maze-word").first.inner_text() == word else "KeyI"))
        if n < len(words) - 1:
            page.wait_for_timeout(400 + 100 * n)
    page.locator(".plab-trial[data-key=trial-1]").wait_for(timeout=30_000)  # sent at the last right choice
    maze = stored_detail(lab, study_id)
    gaps = [(b - a) * 1000 for a, b in zip(keys, keys[1:])]
    assert [r["correct"] for r in maze["regions"]] == [True] * 4 and maze["value"] == 1.0
    times = [r["rt_ms"] for r in maze["regions"]][1:]  # the first pair's time runs from its display, not a press
    assert all(abs(t - g) < 50 for t, g in zip(times, gaps)), (times, gaps)

    study_id = typed_study(lab, (ROOT / "data/studies/stop-forced-choice.yaml").read_text(), "stop-choice")
    page = opened(browser, lab, "stop-choice")
    start(page)
    sentences = page.locator(".plab-sentences .plab-choice")
    sentences.first.wait_for(timeout=30_000)
    order = [sentences.nth(n).inner_text() for n in range(sentences.count())]
    sentences.nth(1).click()
    next_(page)
    choice = stored_detail(lab, study_id)
    with session(lab["store"]) as con:
        trial = store_studies.participant(con, study_id, lab["links"]["stop-choice"][0].person)["trials"][0]
        texts = [f"Sue says: {store_studies.example_row(con, study_id, e)['input']}" for e in trial["shown"]]
    assert order == texts and choice["label"] == choice["shown"][1]  # the second sentence shown, and its condition
    assert choice["label"] in ("plain", "negated")
