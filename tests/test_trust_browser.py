"""What a new user met (issue 45), seen in Chromium: ids copied from a page and pasted into a link open what they
named; a judge run started from the Rate page runs in the background with its progress and cost."""

from __future__ import annotations

import re
import shutil

import pytest

from backend.actions import slices as slice_actions
from backend.store.access import session
from backend.store.examples import Slice
from tests.helpers.browser import browser_page, serve, shows
from tests.helpers.data import QA_RUN, WRITE_RUN
from tests.helpers.people import LOCAL

JOINER = "\u2060"
PLUS_RUN = "nope/baseline/always+E"


@pytest.fixture(scope="module")
def served_lab(lab):
    yield from serve({"PLAB_STORE": str(lab["store"]), "PLAB_DATA_DIR": str(lab["data"])})


@pytest.mark.slow
def test_an_id_copied_from_a_page_and_pasted_into_a_link_opens_it_in_chromium(served_lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser, page = browser_page(p)
        shows(page, served_lab, "example?dataset=ifqa&example=S-dev-0", "Prompt sent and response", "example-ids")
        label = page.locator("[data-testid=stExpander] summary").filter(has_text="Prompt sent and response")
        copied = label.first.inner_text().split("Prompt sent and response: ")[1].strip()
        assert copied == QA_RUN  # "@1" and "@3" are no e-mail addresses: nothing invisible was put in
        # a link whose id carries the joiner (an e-mail-shaped id, or a copy from an older page) opens it too
        for pasted in (copied, QA_RUN.replace("@", "@" + JOINER)):
            shows(page, served_lab, f"retrieval?example=S-dev-0&qa_run={pasted}", "A row's open link", "retrieval-ids")
            assert page.get_by_text("is not one of the choices here").count() == 0, page.inner_text("body")[:1500]
        # issue 45, item 12: a link that spells out every setting, defaults too (the address bar drops defaults)
        shows(page, served_lab, "explore?dataset=nope&split=", "select a row to open it", "explore-pooled")
        assert page.get_by_text("is not one of the choices here").count() == 0  # issue 54: `split=` is pooled
        href = page.get_by_role("link", name="Link to this view").get_attribute("href")
        assert "dataset=nope" in href and "split=&" in href + "&" and "run_a=" in href and "sort=" in href, href
        shows(page, served_lab, "explore" + href, "select a row to open it", "explore-spelled-out")
        assert page.get_by_text("Pooled over every split").count() == 1  # the link opened the pooled view
        browser.close()


@pytest.fixture()
def served_copy(lab, tmp_path):
    """The live pages' store and data folder, copied: a judge run started here writes to them."""
    store, data = tmp_path / "lab.duckdb", tmp_path / "data"
    shutil.copy(lab["store"], store)
    shutil.copytree(lab["data"], data, symlinks=True)
    with session(store) as con:  # an id and a slice name with a `+` (issue 54, item 9)
        for table in ("runs", "predictions"):
            con.execute(
                f"INSERT INTO {table} SELECT * REPLACE ('{PLUS_RUN}' AS run_id) FROM {table} WHERE run_id = $r",
                {"r": "nope/baseline/always-E"},
            )
        slice_actions.save(con, "E+N", Slice("nope", (("gold_label", ("E", "N")),)), actor=LOCAL)
    yield from serve({"PLAB_STORE": str(store), "PLAB_DATA_DIR": str(data)})


@pytest.mark.slow
def test_a_judge_run_starts_from_the_rate_page_and_shows_its_progress_and_cost_in_chromium(served_copy):
    """Issue 45, item 13: a judge run was startable only from a terminal."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser, page = browser_page(p)
        shows(page, served_copy, f"rate?run={WRITE_RUN}&rater=browser", "Start a judge run", "rate-judge")
        assert page.get_by_text("No judge has scored this run").count() == 1
        page.get_by_role("spinbutton", name="Outputs to judge (0: all)").fill("2")
        page.get_by_role("button", name="Start judge run").click()
        done = page.get_by_text(re.compile(r"complete — \d+ of \d+ responses"))
        done.wait_for(timeout=180_000)  # a process of its own: `python -m backend judge`, the tiny generator
        said = done.inner_text()
        assert "/first2" in said and "$0.0000 spent" in said, said  # a local model costs nothing
        done_n, total = map(int, re.search(r"(\d+) of (\d+) responses", said).groups())
        assert done_n == total > 0
        shows(page, served_copy, f"rate?run={WRITE_RUN}&rater=browser", "Judge run", "rate-judged")
        assert page.get_by_text("No judge has scored this run").count() == 0  # the new judge run is listed
        # issue 54, item 9: an id or a slice name with a `+`, pasted into the address bar as it is, opens what it names
        shows(page, served_copy, f"explore?dataset=nope&run_a={PLUS_RUN}", "select a row to open it", "explore-plus")
        page.wait_for_function("decodeURIComponent(location.search).includes('always+E')", timeout=30_000)
        shows(page, served_copy, None, "select a row to open it", "explore-plus-again")  # opened again with the plus
        assert page.get_by_text("is not one of the choices here").count() == 0, page.inner_text("body")[:1500]
        assert PLUS_RUN in page.inner_text("body")
        shows(page, served_copy, "explore?slice=E+N", "select a row to open it", "explore-plus-slice")
        assert "no saved slice" not in page.inner_text("body").lower() and "gold_label=E" in page.url, page.url
        browser.close()
