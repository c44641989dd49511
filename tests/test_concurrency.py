"""Several sessions writing at once lose nothing (issue 12): ratings from threads of one process (browser
tabs) and from real Chromium tabs on a running dashboard, live answers, and imports from processes."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from backend.analysis import rating_tasks
from backend.analysis import ratings as rate
from backend.metrics.rubrics import RUBRIC
from backend.store import rating_tasks as store_tasks
from backend.store import writer
from backend.store.access import session
from tests.helpers.data import WRITE_RUN

ITEM = "test-0"


@pytest.fixture()
def store(lab, tmp_path) -> Path:
    path = tmp_path / "lab.duckdb"
    shutil.copy(lab["store"], path)
    return path


def items(store: Path) -> list[str]:
    with session(store) as con:
        return rate.targets(con, WRITE_RUN)["example_id"].tolist()


def race(store: Path, jobs: list) -> list:
    """Run each job(con) in its own thread with its own session, all released at once; their results."""
    start, results = threading.Barrier(len(jobs)), [None] * len(jobs)

    def run(i, job):
        with session(store) as con:
            start.wait()
            try:
                results[i] = job(con)
            except Exception as exc:  # noqa: BLE001 - the test inspects what each one got
                results[i] = exc

    threads = [threading.Thread(target=run, args=(i, job)) for i, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def stored(store: Path, example: str, rater: str) -> dict:
    with session(store) as con:
        return rate.rater_values(con, WRITE_RUN, rater).get(example, {})


def test_one_rater_in_many_tabs_saving_the_same_item_keeps_one_saved_rating_and_tells_the_others(store):
    example = items(store)[0]
    for round_ in range(5):  # 5 rounds × 8 tabs = 40 saves of the same rating
        shown = stored(store, example, "ann")
        jobs = [
            lambda con, v=v, shown=shown: rate.save(con, WRITE_RUN, example, "ann", {"fluency": v % 4}, loaded=shown)
            for v in range(round_, round_ + 8)
        ]
        results = race(store, jobs)
        saved = [i for i, r in enumerate(results) if r == 1]
        refused = [r for r in results if isinstance(r, rate.RatingConflict)]
        assert all(r == 1 or isinstance(r, rate.RatingConflict) for r in results), results  # no raw errors
        assert len(saved) >= 1 and len(saved) + len(refused) == 8
        final = stored(store, example, "ann")["fluency"]
        assert final in {(round_ + i) % 4 for i in saved}  # the store holds a value a tab was told was saved
        assert all("another session changed" in str(r) and r.stored["fluency"] == final for r in refused)


def test_many_raters_and_items_at_once_are_all_stored(store):
    targets = items(store)
    jobs = [
        lambda con, i=i: rate.save(con, WRITE_RUN, targets[i % len(targets)], f"race{i}", {"fluency": i % 4}, loaded={})
        for i in range(12)
    ]
    assert race(store, jobs) == [1] * 12
    assert all(stored(store, targets[i % len(targets)], f"race{i}") == {"fluency": float(i % 4)} for i in range(12))


def test_an_untouched_form_never_clears_what_another_tab_saved(store):
    example = items(store)[0]
    with session(store) as con:
        rate.save(con, WRITE_RUN, example, "ann", {"fluency": 2}, loaded={})  # tab 1 saves
        with pytest.raises(rate.RatingConflict, match="another session changed"):  # tab 2, opened before, saves nothing
            rate.save(con, WRITE_RUN, example, "ann", {"fluency": None, "correction": None}, loaded={})
        rate.save(con, WRITE_RUN, example, "ann", {"correction": 1, "fluency": None}, loaded={})  # tab 2 rates another
    assert stored(store, example, "ann") == {"fluency": 2.0, "correction": 1.0}


def test_live_answers_from_many_sessions_make_one_run_with_every_answer(store):
    run = {"run_id": "live/race/detect", "dataset_id": "live", "task": "detect", "model_id": "race", "source": "live"}
    jobs = [
        lambda con, i=i: writer.store_live(con, run, [{"run_id": run["run_id"], "example_id": f"q{i}", "label": "N"}])
        for i in range(8)
    ]
    assert race(store, jobs) == [None] * 8
    with session(store) as con:
        assert con.execute("SELECT count(*) FROM runs WHERE run_id = $r", {"r": run["run_id"]}).fetchone()[0] == 1
        assert (
            con.execute("SELECT count(*) FROM predictions WHERE run_id = $r", {"r": run["run_id"]}).fetchone()[0] == 8
        )


@pytest.fixture()
def served_store(store, lab):
    from tests.helpers.browser import serve

    yield from serve({"PLAB_STORE": str(store), "PLAB_DATA_DIR": str(lab["data"])})


CLICK_AT = """at =>
{ const button = [...document.querySelectorAll('button')].find(b => b.innerText.includes('Save and next'));
                     setTimeout(() => button.click(), at - Date.now()); }"""


@pytest.mark.slow
def test_chromium_tabs_saving_one_rating_at_once_lose_nothing_and_say_what_happened(served_store, store):
    """One rater in four tabs saves the same item at the same moment (then four raters, four items)."""
    from playwright.sync_api import expect, sync_playwright

    from tests.helpers.browser import SETTLED, browser_page, fluency, shows, watched

    with sync_playwright() as p:
        browser, first = browser_page(p)
        tabs = [first] + [watched(browser.new_page(viewport={"width": 1400, "height": 2400})) for _ in range(3)]
        for round_, raters in enumerate((["same"] * 4, ["t0", "t1", "t2", "t3"])):
            for i, (tab, rater) in enumerate(zip(tabs, raters)):
                shows(tab, served_store, f"rate?run={WRITE_RUN}&rater={rater}", "Rubric", f"rate-race-{round_}-{i}")
                score = fluency(tab, i)
                score.click()
                expect(score).to_be_checked(timeout=60_000)  # held by the form, sent with the save
            at = tabs[0].evaluate("Date.now()") + 1500
            for tab in tabs:
                tab.evaluate(CLICK_AT, at)
            outcome = []
            for tab, rater in zip(tabs, raters):
                tab.get_by_text("Not saved").or_(tab.get_by_text(f"1 of 5 rated by {rater}")).first.wait_for(
                    timeout=60_000
                )
                tab.wait_for_function(SETTLED, timeout=60_000)  # the save's run ended: an exception would show
                assert tab.locator("[data-testid='stException']").count() == 0
                alert = tab.locator("[data-testid=stAlert]").filter(has_text="Not saved")
                outcome.append(alert.first.inner_text()[:200] if alert.count() else "saved")
            saved = [i for i, o in enumerate(outcome) if o == "saved"]
            assert all(o == "saved" or "another session changed" in o for o in outcome), "\n".join(outcome)
            if round_ == 0:
                assert len(saved) == 1, outcome
                assert stored(store, items(store)[0], "same") == {"fluency": float(saved[0])}
            else:
                assert outcome == ["saved"] * 4
                assert [stored(store, items(store)[0], r) for r in raters] == [{"fluency": float(i)} for i in range(4)]
        browser.close()


def test_a_rating_task_with_overlap_two_and_three_raters_at_once_serves_no_complete_item_and_loses_nothing(store):
    """Issue 29: three people rate a task (overlap 2) at the same time; each is served items one by one
    until none is left for them."""
    with session(store) as con:  # other tests may have rated this run in the shared lab store: start unrated
        con.execute("DELETE FROM ratings WHERE run_id = $r AND source = 'user'", {"r": WRITE_RUN})
        task_id = rating_tasks.create(con, WRITE_RUN, overlap=2, guideline="Rate the correction first.")
        criteria = rate.criteria_of(con, WRITE_RUN)

    def rater(name: str):
        def job(con):
            done = []
            while (example_id := rating_tasks.next_item(con, task_id, name)) is not None:
                assert example_id not in done  # never served again once rated
                counts = rate_counts(con, task_id)
                assert counts[example_id] < 2, f"{example_id} was already complete when served to {name}"
                rate.save(con, WRITE_RUN, example_id, name, {c: min(2, max(RUBRIC[c])) for c in criteria})  # 0-3, 0-1
                done.append(example_id)
            return done

        return job

    results = race(store, [rater("ann"), rater("bob"), rater("cy")])
    assert not [r for r in results if isinstance(r, Exception)], results
    with session(store) as con:
        counts = rate_counts(con, task_id)
        state = rating_tasks.progress(con, task_id)
        agreement = rating_tasks.agreement(con, task_id)
        ratings = rate.ratings_frame(con, WRITE_RUN)
    assert set(counts.values()) == {2} and len(counts) == len(items(store))  # every item exactly k raters
    assert sum(len(r) for r in results) == 2 * len(counts)  # every served item was rated, and is stored
    assert len(ratings) == 2 * len(counts) * len(criteria)
    assert state["complete"] == state["items"] == len(counts)
    assert set(agreement["items"]) == {len(counts)}  # alpha over the items with overlap


def rate_counts(con, task_id: str) -> dict[str, int]:
    frame = store_tasks.rated_items(con, task_id)
    return dict(zip(frame["example_id"], frame["raters"]))


def test_a_rating_task_refuses_bad_settings_and_names_them(store):
    with session(store) as con:
        for kwargs, field in (
            ({"overlap": 0, "guideline": "g"}, "overlap"),
            ({"overlap": 2, "guideline": " "}, "guideline"),
            ({"overlap": 2, "guideline": "g", "sample": 999}, "sample"),
        ):
            with pytest.raises(rate.RatingError) as caught:
                rating_tasks.create(con, WRITE_RUN, **kwargs)
            assert caught.value.field == field
        assert rating_tasks.tasks(con, WRITE_RUN).empty  # nothing stored
        with pytest.raises(rate.RatingError, match="rater_id"):
            rating_tasks.next_item(con, "x", "bad id!")


def test_the_rate_page_serves_a_task_item_with_its_guideline_and_progress(store, open_page):
    with session(store) as con:
        task_id = rating_tasks.create(con, WRITE_RUN, overlap=1, guideline="Rate the correction first.", sample=2)
    at = open_page(store, "pages/rate.py", {"run": WRITE_RUN, "rater": "ann", "task": task_id})
    assert not at.exception
    assert any("Rate the correction first." in i.value.replace("\\", "") for i in at.info)
    with session(store) as con:  # the page claimed the first item in the task's order for ann
        first = store_tasks.rated_items(con, task_id)["example_id"].iloc[0]
        claimed = con.execute("SELECT example_id FROM rating_claims WHERE rater_id = 'ann'").fetchall()
    assert claimed == [(first,)] and any(first in m.value.replace("\\", "") for m in at.markdown)
