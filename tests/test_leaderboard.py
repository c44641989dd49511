"""The overview's headline table: one metric per dataset × run × split, with n and CI, kinds marked."""

from __future__ import annotations

import pytest

from backend.analysis import leaderboard as overview


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
    # issue 54, item 10: the headline split (main) comes first, as the Overview draws the splits in this order
    nope = board[board.index.get_level_values("run").str.startswith("nope/")]
    assert nope.index.get_level_values("split")[0] == "main"


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


def test_a_run_over_part_of_a_split_is_not_ranked_with_the_runs_over_every_item(lab, tmp_path, monkeypatch, open_page):
    """Issue 45, item 22: a `--limit` run's accuracy on 40 items ranked above the paper runs on the Overview."""
    import shutil

    from backend.analysis import leaderboard as overview
    from backend.execution import batch, runs
    from backend.store.access import session
    from tests.helpers.data import QA_RUN, WRITE_RUN

    store = tmp_path / "lab.duckdb"
    shutil.copy(lab["store"], store)
    monkeypatch.setenv("PLAB_DATA_DIR", str(lab["data"]))
    part = batch.predict(store, runs.Request("tiny-nli", "nope", "nli", "main", limit=40), progress=False)
    with session(store) as con:
        board = overview.headline(con)
    row = board[board["run"] == part].iloc[0]
    whole = board[(board["dataset"] == "nope") & (board["split"] == "main")]["n"].max()
    assert row["n"] == 40 and row["part"] == f"40 of {whole:,} items"
    assert set(board.loc[board["part"] != "", "run"]) == {part, QA_RUN, WRITE_RUN}  # 5 of FalseQA's FP items
    at = open_page(store, "pages/overview.py", {"board": "nope"})
    assert any("Not drawn or ranked: 1 runs over part of main" in c.value for c in at.caption)
    table = next(t.value for t in at.dataframe if "run" in t.value and part in set(t.value["run"]))
    assert table["run"].iloc[-1] == part  # listed last, not ranked by its score on 40 items
