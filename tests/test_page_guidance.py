"""Pages that tell a new user what to do next (issue 26, item 9): no empty main area with its message in the
sidebar, no stale advice, no complaint before anything was picked, and a pinned item that says so."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_side_by_side_on_a_classification_dataset_says_why_in_the_main_area(lab, open_page, monkeypatch):
    monkeypatch.setenv("PLAB_DATA_DIR", str(lab["data"]))
    at = open_page(lab["store"], "pages/outputs.py", {"dataset": "nope"})
    assert not at.exception
    said = " ".join(i.value for i in at.main.info)
    assert "compares generated outputs" in said and "Explore" in said  # the way on, where the user looks
    assert any("explore" in link.proto.page for link in at.main.get("page_link"))
    assert "Only one run of this task" in said and not at.sidebar.info  # nothing said only in the sidebar


def test_no_page_asks_to_stop_the_dashboard_before_a_command():
    """Commands and the dashboard share the store (short-lived connections): the old advice is gone."""
    stale = [p.name for p in (ROOT / "pages").glob("*.py") if "stop the dashboard first" in p.read_text()]
    assert stale == []


def test_nope_asks_for_a_cell_before_complaining_about_one(real_store, open_page):
    at = open_page(real_store, "pages/nope.py")
    assert not at.exception
    said = [i.value for i in at.info]
    assert any("Click a bar or cell above" in s for s in said)
    assert not any("Pick another cell" in s for s in said)  # nothing was picked: nothing is wrong yet


def test_a_pinned_table_says_it_is_pinned_until_the_view_changes(store_copy, open_page):
    at = open_page(store_copy, "pages/overview.py")
    pin = next(b for b in at.button if b.key == "datasets-pin")
    assert pin.label == "Pin to report" and not pin.disabled
    at = pin.click().run()
    pin = next(b for b in at.button if b.key == "datasets-pin")
    assert pin.label == "Pinned to report" and pin.disabled
    assert any(re.search("Pinned to the report", t.value) for t in at.toast)


def _two_jobs():
    from ui import widgets

    widgets.job_progress(
        "Computing the map", "embedding 2,732 inputs:  45%|####5 | 1230/2732 [00:10<00:12,  98.1 items/s]"
    )
    widgets.job_progress("Training", "loading the model")


def test_a_background_jobs_tqdm_line_is_a_progress_bar_with_the_count_and_time_left():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_two_jobs).run()
    bar = at.get("progress")[0].proto
    assert bar.value == 45 and bar.text.replace("\\", "") == "Computing the map: 1,230 of 2,732, 00:12 left"  # as shown
    assert [box.value for box in at.info] == ["Training… loading the model"]  # a line without a bar says itself
