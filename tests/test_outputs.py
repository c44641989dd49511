"""Generated outputs side by side: per-item scores against the gold, outcomes, disagreement order,
the word diff and the Rate page's ratings beside each output; the page with its filters."""

from __future__ import annotations

import shutil

import pytest

from backend.analysis import ratings as rate
from backend.metrics.squad import exact_match, token_f1
from backend.store.access import session
from backend.views import outputs
from tests.helpers.data import QA_RUN, WRITE_RUN

ORACLE = "ifqa/oracle-even/qa/S-dev/first6"


@pytest.fixture()
def compared(lab, tmp_path):
    """The lab store with a second QA run on the same items: the first gold answer on even rows, 'no idea' on odd."""
    store = tmp_path / "lab.duckdb"
    shutil.copy(lab["store"], store)
    with session(store) as con:
        con.execute(
            "INSERT INTO runs SELECT * REPLACE ($o AS run_id, 'oracle-even' AS model_id, 'user' AS source) "
            "FROM runs WHERE run_id = $r",
            {"o": ORACLE, "r": QA_RUN},
        )
        con.execute(
            """
            INSERT INTO predictions SELECT p.* REPLACE ($o AS run_id,
                CASE WHEN row_number() OVER (ORDER BY p.example_id) % 2 = 1 THEN e.gold_answers[1] ELSE 'no idea' END
                AS answer)
            FROM predictions p JOIN examples e ON e.dataset_id = 'ifqa' AND e.example_id = p.example_id
            WHERE p.run_id = $r""",
            {"o": ORACLE, "r": QA_RUN},
        )
        first = rate.targets(con, QA_RUN)["example_id"].iloc[0]
        rate.save(con, ORACLE, first, "ann", {"acceptability": 1})
        rate.save(con, ORACLE, first, "bob", {"acceptability": 0})
    return store, first


def test_scores_outcomes_and_ratings_match_the_metrics(compared):
    store, first = compared
    with session(store) as con:
        frame = outputs.side_by_side(con, QA_RUN, ORACLE)
        gold = rate.targets(con, QA_RUN).set_index("example_id")["gold_answers"]
    assert len(frame) == 6
    for row in frame.itertuples():
        answers = list(gold[row.example_id])
        assert row.em_a == exact_match(row.output_a, answers) and row.f1_b == pytest.approx(
            token_f1(row.output_b, answers)
        )
    ordered = frame.sort_values("example_id")
    assert list(ordered["em_b"]) == [1.0, 0.0] * 3  # the oracle's even rows carry a gold answer
    assert (frame.loc[frame["right_b"] & ~frame["right_a"], "outcome"] == "B right, A wrong").all()
    assert frame.set_index("example_id").loc[first, "rated_b"] == "acceptability 0.50 (2)"
    assert (frame["rated_a"] == "").all()
    result = outputs.summary(frame)
    assert result["means"]["b"]["em"].value == pytest.approx(0.5) and sum(result["outcomes"].values()) == 6


def test_runs_of_different_tasks_are_refused(compared):
    store, _ = compared
    with session(store) as con, pytest.raises(ValueError, match="not runs of one dataset and task"):
        outputs.side_by_side(con, QA_RUN, WRITE_RUN)


def test_the_page_filters_sorts_and_diffs(compared, open_page, lab, monkeypatch):
    store, _ = compared
    monkeypatch.setenv("PLAB_DATA_DIR", str(lab["data"]))
    at = open_page(store, "pages/outputs.py", {"dataset": "ifqa", "run_a": QA_RUN, "run_b": ORACLE})
    assert not at.exception and not at.error
    assert at.metric[0].value == "6" and any(m.label == "exact match (B)" and m.value == "50.0%" for m in at.metric)
    # issue 45, item 13: a pairwise judge of the two runs can be started here (its rubrics compare QA runs)
    assert all(r.startswith("judge-pairwise") for r in at.selectbox(key="pair_judge_job_rubric").options)
    assert "tiny-gen" in at.selectbox(key="pair_judge_job_model").options
    at.segmented_control(key="outcome").set_value("B right, A wrong").run()
    listed = [m.value for m in at.markdown if m.value.startswith("**") and " · B right, A wrong · " in m.value]
    assert listed and not any(" · both wrong · " in m.value for m in at.markdown)
    assert any("<mark>" in h.proto.body or "<del>" in h.proto.body for h in at.get("html"))  # the word diff


def test_items_without_gold_are_not_scored_and_falseqa_explanations_are_the_writing_gold():
    import numpy as np
    import pandas as pd

    scores = outputs._scores(["a man cannot get pregnant", "anything"], [["A man cannot get pregnant."], []], "write")
    assert scores["f1"].iloc[0] == 1.0 and scores["right"].iloc[0] and np.isnan(scores["f1"].iloc[1])
    assert not scores["right"].iloc[1] and np.isnan(scores["bleu"].iloc[1])
    row = pd.Series(
        {"gold_presuppositions": None, "gold_corrections": None, "gold_answers": ["A man cannot get pregnant."]}
    )
    assert outputs._gold(row, "write") == ["A man cannot get pregnant."]
