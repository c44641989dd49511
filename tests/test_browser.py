"""Every page in a real browser: the README's run command serves the app, headless Chromium
(Debian's /usr/bin/chromium, driven by Playwright) opens each page, saves a screenshot under
data/screenshots/ and fails on any exception shown."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.browser import ROOT, SHOTS, browser_page, fluency, mark, serve, shows

# (URL path, text near the end of the page that proves it rendered everything)
PAGES = [
    ("", "Models"),
    ("explore?dataset=nope&run_a=nope/baseline/always-E", "select a row to open it"),
    ("example?dataset=nope&example=1", "Pair partners"),
    ("pairs", "Struck-through words"),
    ("nope", "Items behind a bar"),
    ("projection", "Items behind a cell"),
    ("gradient?dataset=commitmentbank&by=operator&group=negation", "605 items"),
    ("cards?model=BOW", "Model card: BOW"),
    ("studio", "Save as a dataset"),
    ("imports", "Choose a file to check"),
    ("slices?dataset=nope&run_a=nope/RoBERTa-large/mnli-snli-anli-fever/1", "most significant"),
    ("report", "Nothing is pinned yet"),
    ("outputs", "No QA or writing run"),
    ("map", "Highlight (Explore's filters)"),
]


@pytest.fixture(scope="module")
def served(real_store):
    """One server for the tests that only read the real store."""
    yield from serve({"PLAB_STORE": str(real_store)})


@pytest.mark.slow
def test_every_page_renders_in_chromium(served):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser, page = browser_page(p)
        for path, proof in PAGES:
            shows(page, served, path, proof)
        browser.close()


@pytest.mark.slow
def test_clicking_a_chart_mark_picks_its_items_in_chromium(served):
    """A run's dot on the Overview opens it in Explore; a confusion-matrix cell filters Explore; a NOPE
    Figure 2 bar segment sets the three pickers below it; a Projection cell and a Gradient point list their
    items."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser, page = browser_page(p)
        shows(page, served, "", "Models", "overview-click")
        mark(page, "point", "run: nope/baseline/always-E", "n: 2386").click()  # the main-split chart
        page.get_by_role("link", name="Explore nope/baseline/always-E's predictions on main").click()
        page.get_by_text("select a row to open it").first.wait_for(timeout=90_000)
        assert "run_a=nope%2Fbaseline%2Falways-E" in page.url  # (split=main is Explore's default: not in the bar)
        page.get_by_text("80.6%", exact=True).wait_for(timeout=60_000)  # always-E on NOPE main, as on the board
        shows(
            page,
            served,
            "explore?dataset=nope&run_a=nope/baseline/always-E",
            "select a row to open it",
            "explore-click",
        )
        mark(page, "rect mark", "gold: N", "predicted: E").click(position={"x": 6, "y": 6})  # off the count's text
        page.get_by_text("419 examples match").first.wait_for(timeout=60_000)  # every N item of main, called E
        assert "cell=N%E2%86%92E" in page.url
        shows(page, served, "nope", "Items behind a bar", "nope-click")
        mark(page, "bar", "trigger_type: clefts", "polarity: negated", "label: E").click(position={"x": 3, "y": 3})
        page.get_by_text("in trigger_type = clefts, polarity = negated, gold_label = E").first.wait_for(timeout=60_000)
        assert page.get_by_text("91 items", exact=True).count() == 1  # Figure 2's table: clefts, negated, E = 91
        assert "cell_trigger=clefts" in page.url and "cell_label=E" in page.url
        page.screenshot(path=str(SHOTS / "nope-clicked.png"), full_page=True)
        shows(page, served, "projection", "Items behind a cell", "projection-click")
        mark(
            page, "rect mark", "dataset: commitmentbank", "trigger: clause-embedding (factive)", "operator: modal"
        ).click(position={"x": 3, "y": 3})
        page.get_by_text("74 items", exact=True).first.wait_for(timeout=60_000)  # CB factive items under a modal
        assert "cell_dataset=commitmentbank" in page.url and "cell_operator=modal" in page.url
        page.screenshot(path=str(SHOTS / "projection-clicked.png"), full_page=True)
        shows(page, served, "gradient?dataset=projective_probability", "Items behind a point", "gradient-click")
        mark(page, "point", "who: people", "group: know").first.click()  # the certainty chart (the prior's is next)
        page.get_by_text("58 items", exact=True).first.wait_for(timeout=60_000)  # know: 20 no-fact + 38 fact items
        assert "group=know" in page.url
        page.screenshot(path=str(SHOTS / "gradient-clicked.png"), full_page=True)
        browser.close()


@pytest.mark.slow
def test_live_pages_work_in_chromium(served_lab):
    """Retrieval with an example and a QA run; a question asked on the Playground (stored and listed);
    a rating saved on the Rate page (the progress line is read back from the store)."""
    from playwright.sync_api import sync_playwright

    from tests.helpers.data import QA_RUN, WRITE_RUN

    with sync_playwright() as p:
        browser, page = browser_page(p)
        shows(page, served_lab, f"retrieval?example=S-dev-0&qa_run={QA_RUN}", "A row's open link shows the example")
        bar = mark(page, "bar").first  # the first outcome of the QA run's attribution chart
        outcome = bar.get_attribute("aria-label").split("outcome: ")[1].split(";")[0]
        bar.click(position={"x": 3, "y": 3})
        page.wait_for_url(f"**outcome={outcome.replace(' ', '+')}**", timeout=60_000)
        shows(page, served_lab, "playground", "Stored live queries")
        page.get_by_role("textbox", name="Question").fill("Why did the Eiffel Tower move to Rome in 1990?")
        page.get_by_role("button", name="Ask").click()
        shows(page, served_lab, None, "live/tiny-fp/detect", "playground-answered")
        assert page.get_by_text("Why did the Eiffel Tower move to Rome in 1990?").count() >= 2  # answer + history
        shows(page, served_lab, f"rate?run={WRITE_RUN}&rater=browser", "Rubric")
        for saved in (1, 2, 3):  # issue 54: each Save and next moves on; the address bar's old item is no dead link
            fluency(page, 3).click()
            page.get_by_role("button", name="Save and next").click()
            shows(page, served_lab, None, f"{saved} of 5 rated by browser", "rate-saved")
            assert page.get_by_text("is not one of the choices here").count() == 0, page.inner_text("body")[:1500]
        assert page.get_by_role("spinbutton", name="Item (of 5)").input_value() == "4"
        browser.close()


@pytest.mark.slow
def test_a_link_with_values_the_page_cannot_use_says_so_in_chromium(served):
    """An unknown run or facet value in a shared link is named above the page, not silently replaced."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser, page = browser_page(p)
        shows(
            page,
            served,
            "explore?dataset=nope&run_a=nope/gone/7&trigger_type=clefts&trigger_type=nonsense",
            "select a row to open it",
            "explore-unknown-link",
        )
        notice = page.locator("[data-testid=stAlert]").filter(has_text="is not one of the choices here")
        assert notice.count() == 2, page.inner_text("body")[:2000]
        assert "nope/gone/7" in notice.first.inner_text() and "nonsense" in notice.last.inner_text()
        shows(
            page,
            served,
            "explore?dataset=nope&run_a=nope/baseline/always-E",
            "select a row to open it",
            "explore-known-link",
        )
        assert (
            page.get_by_text("is not one of the choices here").count() == 0
        )  # a valid link (even = default) says nothing
        # a page that stops early (no example matches the search) still names the values it could not use
        shows(page, served, "explore?dataset=gone&run_a=nope/gone/7&q=zzqqxx", "No examples match", "explore-stopped")
        notice = page.locator("[data-testid=stAlert]").filter(has_text="is not one of the choices here")
        assert notice.count() == 2 and "This link's dataset = gone" in notice.first.inner_text(), page.inner_text(
            "body"
        )
        browser.close()


@pytest.fixture()
def served_copy(real_store, tmp_path):
    """The real store, copied: for tests that write to it."""
    store = tmp_path / "lab.duckdb"
    shutil.copy(real_store, store)
    yield from serve({"PLAB_STORE": str(store)})


@pytest.mark.slow
def test_a_family_made_from_one_sentence_is_saved_and_opened_as_pairs_in_chromium(served_copy):
    """The studio's sentence tab: type a premise, the rules propose the variants in an editable grid,
    the family is saved, and its pairs open on the Minimal pairs page with the template as provenance."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser, page = browser_page(p)
        shows(page, served_copy, "studio", "Save as a dataset", "studio-sentence")
        page.get_by_role("tab", name="From one sentence").click()
        page.get_by_role("textbox", name="Premise (a declarative sentence)").fill("Jo stopped smoking.")
        page.get_by_role("textbox", name="Presupposition (the hypothesis of every variant)").fill("Jo used to smoke.")
        page.get_by_role("textbox", name="Dataset name").first.fill("jo-family")
        page.get_by_role("textbox", name="Dataset name").first.press("Enter")
        page.get_by_text("Did Jo stop smoking?").first.wait_for(
            state="attached", timeout=60_000
        )  # the grid (a canvas) holds it
        page.get_by_text("Name the dataset and its trigger").first.wait_for(timeout=30_000)  # a trigger is required
        assert page.get_by_role("button", name="Save as a dataset").count() == 0  # (hidden tabs' are not counted)
        page.get_by_role("textbox", name="Trigger (required)").fill("change_of_state")
        page.get_by_role("textbox", name="Trigger (required)").press("Enter")
        page.get_by_role("button", name="Save as a dataset").click()  # the hidden tabs' buttons are not counted
        page.get_by_text("Stored jo-family").first.wait_for(timeout=60_000)
        page.get_by_role("link", name="Minimal pairs: jo-family/unembedded → question/generated").click()
        page.get_by_text("Struck-through words").first.wait_for(timeout=90_000)
        # st.html fills its element after the rest of the page has rendered: wait for the pair itself
        page.get_by_text("Did Jo stop smoking?").first.wait_for(timeout=30_000)
        body = page.inner_text("body")
        assert "jo-family was generated from the template" in body, body[:3000]
        page.screenshot(path=str(SHOTS / "studio-pairs.png"), full_page=True)
        assert page.locator("[data-testid='stException']").count() == 0
        browser.close()


@pytest.fixture()
def served_with_map(real_store, tmp_path):
    """A copy of the real store with a PCA map of NOPE cached (test embedder) in its own data folder."""
    from backend.store.access import session
    from backend.views import map as embedding_map
    from tests.helpers.studio import WordsEmbedder

    store, data = tmp_path / "lab.duckdb", tmp_path / "data"
    shutil.copy(real_store, store)
    os.environ["PLAB_DATA_DIR"], before = str(data), os.environ.get("PLAB_DATA_DIR")
    try:
        with session(store) as con:
            embedding_map.compute(con, "nope", "pca", WordsEmbedder())
    finally:
        os.environ.pop("PLAB_DATA_DIR") if before is None else os.environ.__setitem__("PLAB_DATA_DIR", before)
    yield from serve({"PLAB_STORE": str(store), "PLAB_DATA_DIR": str(data)})


@pytest.mark.slow
def test_a_dragged_region_lists_its_items_and_a_pinned_table_reaches_the_report_in_chromium(served_with_map):
    """The Map: drag a rectangle over the points, the items inside are listed. Pin the Models table on the
    Overview: the Report page shows it and offers the exports."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser, page = browser_page(p)
        shows(page, served_with_map, "map?dataset=nope&method=pca&trigger_type=clefts", "Drag a rectangle", "map")
        assert page.get_by_text("points match the highlight filters").count() == 1
        box = page.locator(
            "[data-testid=stVegaLiteChart] canvas, [data-testid=stVegaLiteChart] svg"
        ).first.bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.2, box["y"] + box["height"] * 0.2)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.8, box["y"] + box["height"] * 0.8, steps=8)
        page.mouse.up()
        page.get_by_text("items in the selected region").first.wait_for(timeout=60_000)
        page.screenshot(path=str(SHOTS / "map-region.png"), full_page=True)
        shows(page, served_with_map, "", "Models", "overview-pin")
        page.get_by_role("button", name="Pin to report").last.click()  # the Models table, last on the page
        page.get_by_text("Pinned to the report: Models").first.wait_for(timeout=60_000)
        shows(page, served_with_map, "report", "1 item", "report-pinned")
        assert page.get_by_role("button", name="HTML (images embedded)").count() == 1
        assert page.get_by_role("button", name="LaTeX (zip: 1 table, 0 figures)").count() == 1
        browser.close()


def _damage(store: Path, how: str, good: Path) -> None:
    data = good.read_bytes()
    if how == "empty":
        store.write_bytes(b"")
    elif how == "truncated":
        store.write_bytes(data[: len(data) // 6])
    else:  # corrupted blocks in the middle
        damaged = bytearray(data)
        for at in range(len(data) // 4, len(data) - 4096, len(data) // 40):
            damaged[at : at + 512] = bytes(512)
        store.write_bytes(bytes(damaged))


@pytest.mark.slow
def test_a_damaged_store_says_what_is_wrong_and_what_to_do_on_every_page(real_store, tmp_path):
    """An empty, a truncated and a corrupted store file: every page (and the CLI) says the store is
    damaged and how to recover, never a redacted exception or a blank page. app.py checks the store
    before any page runs (page_session), so every page is visited for one kind of damage and two
    pages for the others."""
    import subprocess
    import sys

    from playwright.sync_api import sync_playwright

    store = tmp_path / "lab.duckdb"
    shutil.copy(real_store, store)  # a store to start with: without one, run.sh would build it first (a minute)
    pages = ["", "explore", "example", "pairs", "nope", "retrieval", "playground", "rate", "imports"]
    with sync_playwright() as p:
        browser, page = browser_page(p)
        for base in serve({"PLAB_STORE": str(store)}):
            for how, visited in (
                ("empty", ["", "rate"]),
                ("truncated", ["explore", "playground"]),
                ("corrupted", pages),
            ):
                _damage(store, how, real_store)  # the dashboard opens the store per rerun: no restart needed
                for path in visited:
                    page.goto(f"{base}/{path}", wait_until="domcontentloaded")
                    try:
                        page.get_by_text("is damaged").first.wait_for(timeout=60_000)
                    except Exception:
                        page.screenshot(
                            path=str(SHOTS / f"damaged-{how}-{path or 'overview'}-failed.png"), full_page=True
                        )
                        raise
                    body = page.inner_text("body")
                    assert (
                        "python -m backend ingest" in body and page.locator("[data-testid='stException']").count() == 0
                    )
                cli = subprocess.run(
                    [sys.executable, "-m", "backend", "--store", str(store), "status"],
                    cwd=ROOT,
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                assert cli.returncode == 1 and "is damaged" in cli.stderr and "Traceback" not in cli.stderr
        browser.close()
