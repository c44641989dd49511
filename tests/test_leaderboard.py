"""The overview's headline table: one metric per dataset × run × split, with n and CI, kinds marked."""

from __future__ import annotations

import pytest

from backend.views import overview


@pytest.fixture(scope="module")
def board(real_store):
    from backend.store.connection import connect

    con = connect(real_store)
    yield overview.headline(con).set_index(["run", "split"])
    con.close()


def test_nope_runs_are_marked_paper_reported_and_scored_on_main_and_adv(board):
    deberta = board.loc[("nope/DeBERTa-xlarge/mnli-snli-anli-fever/1", "main")]
    assert deberta["kind"] == "paper-reported" and deberta["metric"] == "accuracy" and deberta["n"] == 2386
    assert deberta["low"] < deberta["value"] < deberta["high"]
    assert board.loc[("nope/baseline/always-E", "main"), "value"] == pytest.approx(1922 / 2386)
    assert board.loc[("nope/baseline/always-E", "adv"), "n"] == 346


def test_detection_headline_is_macro_f1_on_test(board):
    always_fp = board.loc[("falseqa/baseline/always-FP", "test")]
    assert (always_fp["kind"], always_fp["metric"], always_fp["n"]) == ("baseline", "macro-F1", 1374)
    assert always_fp["value"] == pytest.approx(1 / 3)
    assert ("falseqa/baseline/always-FP", "train") not in board.index  # training data is not an evaluation


def test_runs_that_give_one_label_to_almost_everything_are_flagged(board):
    assert board.loc[("nope/baseline/always-E", "main"), "bias"] == "E for 100.0% (gold 80.6%)"
    assert board.loc[("falseqa/baseline/always-N", "test"), "bias"] == "N for 100.0% (gold 50.0%)"
    assert board.loc[("falseqa/baseline/random", "test"), "bias"] == ""
    assert board.loc[("nope/DeBERTa-xlarge/mnli-snli-anli-fever/1", "main"), "bias"] == ""


def test_cached_rows_equal_fresh_ones_and_a_changed_run_is_scored_again(store_copy):
    import pandas as pd

    from backend.store.access import session

    run = "nope/RoBERTa-large/mnli-snli-anli-fever/1"
    with session(store_copy) as con:
        first = overview.headline(con)  # scores every run and caches the rows
        assert con.execute("SELECT count(*) FROM run_metrics").fetchone()[0] == first["run"].nunique()
        cached = overview.headline(con)
        pd.testing.assert_frame_equal(first.reset_index(drop=True), cached.reset_index(drop=True))
        before = first.set_index(["run", "split"]).loc[(run, "main"), "value"]
        con.execute("UPDATE predictions SET label = 'E' WHERE run_id = ?", [run])  # the run changes
        after = overview.headline(con).set_index(["run", "split"]).loc[(run, "main"), "value"]
        gold_e = con.execute(
            "SELECT avg((gold_label = 'E')::INT) FROM examples WHERE dataset_id = 'nope' AND split = 'main'"
        ).fetchone()[0]
    assert after != before and after == pytest.approx(gold_e)  # all E: accuracy is the share of E


def test_the_overview_draws_the_best_runs_when_a_dataset_has_thousands(store_copy, open_page):
    from benchmarks.bench_explore import grow

    grow(store_copy, 200 * 2732)  # ≈ 200 synthetic NOPE runs beside the real ones
    at = open_page(store_copy, "pages/overview.py")
    assert not at.exception
    notes = [c.value for c in at.caption if "the 150 best are drawn and listed" in c.value]
    assert len(notes) == 2 and all(int(n.split(" ")[0].replace(",", "")) > 150 for n in notes)  # main and adv
    table = next(d.value for d in at.dataframe if "explore" in d.value.columns and len(d.value) == 150)
    assert table["value"].is_monotonic_decreasing
