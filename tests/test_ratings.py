"""Rate backend on a copy of the real store: saving is validated and atomic, agreement matches hand computations;
rating tasks on any run (a paper's too) listed on the Rate page, and what reaches a rater blinded."""

from __future__ import annotations

import hashlib
import math
import re
import shutil
import subprocess
import sys
from datetime import datetime

import duckdb
import numpy as np
import pandas as pd
import pytest

from backend.actions import ratings as rating_actions
from backend.analysis import rating_tasks
from backend.analysis import ratings as rate
from backend.analysis.ratings import RatingError
from backend.identity import links
from backend.metrics import bootstrap
from backend.store import judgements as store_judgements
from backend.store import rating_tasks as store_tasks
from backend.store.access import session
from backend.store.connection import CRITERIA, connect
from backend.store.writer import replace_runs
from tests.helpers.people import LOCAL

WRITE, QA, NLI, LIVE = "test/write", "test/qa", "a/nli", "live/test/nli"
CREPE = ["sycon-000", "sycon-001", "sycon-002", "sycon-003", "sycon-004"]  # sycon-004's prediction failed
LIVE_EXAMPLE = "live-0123456789abcdef"


def _run(run_id: str, dataset_id: str, task: str, **extra) -> dict:
    return {
        "run_id": run_id,
        "dataset_id": dataset_id,
        "task": task,
        "model_id": "test-model",
        "source": "batch",
        **extra,
    }


@pytest.fixture()
def store(real_store, tmp_path):
    """A read-write copy of the real store with our own runs: writing over CREPE, QA over IfQA, NLI, a live
    NLI run (no example rows), and runs that are not rateable (running, all errors, retrieval)."""
    copy = tmp_path / "lab.duckdb"
    shutil.copy(real_store, copy)
    con = connect(copy)
    ifqa = [
        r[0]
        for split in ("F-dev", "S-dev")
        for r in con.execute(
            "SELECT example_id FROM examples WHERE dataset_id = 'ifqa' AND split = $s ORDER BY example_id LIMIT $n",
            {"s": split, "n": 6 if split == "F-dev" else 4},
        ).fetchall()
    ]
    nope = [
        r[0]
        for r in con.execute(
            "SELECT example_id FROM examples WHERE dataset_id = 'nope' ORDER BY example_id LIMIT 2"
        ).fetchall()
    ]
    written = [
        {"run_id": WRITE, "example_id": e, "text": {"presupposition": f"assumed {e}", "correction": f"in fact {e}"}}
        for e in CREPE[:4]
    ] + [{"run_id": WRITE, "example_id": CREPE[4], "error": "RuntimeError: out of memory"}]
    replace_runs(con, [_run(WRITE, "crepe", "write")], written)
    replace_runs(
        con,
        [_run(QA, "ifqa", "qa")],
        [{"run_id": QA, "example_id": e, "answer": f"answer {i}"} for i, e in enumerate(ifqa)],
    )
    replace_runs(con, [_run(NLI, "nope", "nli")], [{"run_id": NLI, "example_id": e, "label": "E"} for e in nope])
    replace_runs(
        con,
        [_run(LIVE, "live", "nli", source="live", status="live")],
        [
            {
                "run_id": LIVE,
                "example_id": LIVE_EXAMPLE,
                "label": "C",
                "text": {
                    "input": {
                        "model": "test-model",
                        "task": "nli",
                        "premise": "The king of France is bald.",
                        "hypothesis": "France has a king.",
                    }
                },
            }
        ],
    )
    replace_runs(
        con,
        [_run("z/running", "ifqa", "qa", status="running")],
        [{"run_id": "z/running", "example_id": ifqa[0], "answer": "x"}],
    )
    replace_runs(
        con, [_run("z/errors", "ifqa", "qa")], [{"run_id": "z/errors", "example_id": ifqa[0], "error": "boom"}]
    )
    replace_runs(con, [_run("z/retrieve", "ifqa", "retrieve")], [{"run_id": "z/retrieve", "example_id": ifqa[0]}])
    yield con, ifqa, copy
    con.close()


def _all_ratings(con) -> pd.DataFrame:
    """Every ratings row (crowd included), for before/after comparisons."""
    return con.execute("SELECT * FROM ratings ORDER BY ALL").df()


def _rate(con, run_id: str, criterion: str, by_rater: dict[str, list], examples: list[str]) -> None:
    for rater, scores in by_rater.items():
        for example_id, score in zip(examples, scores):
            if score is not None:
                rate.save(con, run_id, example_id, rater, {criterion: score})


def test_criteria_for_each_task():
    assert rate.criteria_for("write") == ["fluency", "presupposition", "correction", "consistency"]
    for task in ("qa", "detect", "nli"):
        assert rate.criteria_for(task) == ["acceptability"]


def test_rubric_describes_every_score_of_every_rated_criterion():
    scales = {c: (lo, hi) for c, _, lo, hi, *_ in CRITERIA}
    assert set(rate.RUBRIC) == {
        *("fluency", "presupposition", "correction", "consistency", "acceptability"),
        *("corrects_assumption", "equivalent"),  # what judges score (and people may rate beside them)
    }
    for criterion, levels in rate.RUBRIC.items():
        low, high = scales[criterion]
        assert sorted(levels) == list(range(low, high + 1)), criterion
        texts = list(levels.values())
        assert all(isinstance(t, str) and len(t) > 20 and "\n" not in t for t in texts)
        assert len(set(texts)) == len(texts)
    assert rate.RUBRIC["acceptability"][1].startswith("Acceptable")


def test_rateable_runs_lists_model_runs_writing_and_qa_first(store):
    con, ifqa, _ = store
    rate.save(con, QA, ifqa[0], "ann", {"acceptability": 1})
    rate.save(con, QA, ifqa[0], "bob", {"acceptability": 0})
    rate.save(con, QA, ifqa[1], "bob", {"acceptability": 1})
    frame = rate.rateable_runs(con)
    assert list(frame.columns) == ["run_id", "dataset_id", "task", "model_id", "parsed", "n", "rated"]
    # no baselines, imports, running runs, runs with only errors, retrieval runs
    assert frame["run_id"].tolist() == [QA, WRITE, NLI, LIVE]
    assert frame.set_index("run_id")["n"].to_dict() == {QA: 10, WRITE: 4, NLI: 2, LIVE: 1}
    assert frame.set_index("run_id")["rated"].to_dict() == {QA: 2, WRITE: 0, NLI: 0, LIVE: 0}


def test_targets_of_a_write_run_show_the_writing_and_the_gold_data(store):
    con, _, _ = store
    frame = rate.targets(con, WRITE)
    assert frame["example_id"].tolist() == CREPE[:4]  # the failed prediction is not offered
    assert list(frame.columns) == [
        "example_id",
        "split",
        "input",
        "context",
        "hypothesis",
        "gold_label",
        "gold_answers",
        "gold_presuppositions",
        "gold_corrections",
        "label",
        "answer",
        "output_text",
    ]
    first = frame.iloc[0]
    gold = con.execute(
        "SELECT input, gold_presuppositions FROM examples WHERE dataset_id = 'crepe' AND example_id = 'sycon-000'"
    ).fetchone()
    assert first["input"] == gold[0] == "What actually happens when we run out of IPv4 Addresses?"
    assert first["gold_presuppositions"] == gold[1] and first["gold_label"] == "FP" and first["split"] == "test"
    assert first["output_text"] == "Presupposition: assumed sycon-000\nCorrection: in fact sycon-000"


def test_targets_show_a_free_form_generation_when_the_format_was_ignored(store):
    con, _, _ = store
    text = {"presupposition": "", "correction": "", "generation": "The common cold is a serious illness."}
    replace_runs(
        con, [_run("crepe/free", "crepe", "write")], [{"run_id": "crepe/free", "example_id": CREPE[0], "text": text}]
    )
    shown = rate.targets(con, "crepe/free")["output_text"].tolist()
    assert shown == ["(not in the Presupposition/Correction format) The common cold is a serious illness."]


def test_an_nli_answer_with_no_label_read_is_not_called_a_writing_format_problem(store):
    con, _, _ = store
    text = {"generation": "Perhaps, it depends on the speaker."}
    replace_runs(
        con, [_run("nope/chatty", "nope", "nli")], [{"run_id": "nope/chatty", "example_id": "1", "text": text}]
    )
    shown = rate.targets(con, "nope/chatty")["output_text"].tolist()
    assert shown == ["(no nli answer could be read) Perhaps, it depends on the speaker."]


def test_targets_fall_back_to_the_answer_and_filter_by_split(store):
    con, ifqa, _ = store
    frame = rate.targets(con, QA)
    assert frame["example_id"].tolist() == sorted(ifqa)
    assert frame.set_index("example_id").loc[ifqa[2], "output_text"] == "answer 2"
    assert isinstance(frame.iloc[0]["gold_answers"], list) and frame.iloc[0]["gold_answers"]
    s_dev = rate.targets(con, QA, split="S-dev")
    assert s_dev["example_id"].tolist() == sorted(ifqa[6:]) and set(s_dev["split"]) == {"S-dev"}
    assert rate.targets(con, QA, split="no-such-split").empty


def test_targets_of_a_live_run_take_the_input_from_the_prediction(store):
    con, _, _ = store
    frame = rate.targets(con, LIVE)
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row["example_id"] == LIVE_EXAMPLE and row["split"] is None and row["gold_label"] is None
    assert row["input"] == "The king of France is bald." and row["hypothesis"] == "France has a king."
    assert row["output_text"] == "C"  # no writing, no answer: the label


def test_targets_of_an_unknown_run_say_where_runs_are_listed(store):
    con, _, _ = store
    with pytest.raises(RatingError, match="rateable_runs") as error:
        rate.targets(con, "no/such/run")
    assert error.value.field == "run_id" and str(error.value).startswith("run_id: no run 'no/such/run'")


def test_save_round_trip_and_upsert(store):
    con, _, _ = store
    scores = {"fluency": 3, "presupposition": 2, "correction": 1, "consistency": 0}
    assert rate.save(con, WRITE, "sycon-001", " ann@lab.org ", scores) == 4
    frame = rate.ratings_frame(con, WRITE)
    assert list(frame.columns) == [
        "dataset_id",
        "run_id",
        "example_id",
        "rater_id",
        "criterion",
        "value",
        "note",
        "rated_at",
    ]
    assert frame["criterion"].tolist() == ["consistency", "correction", "fluency", "presupposition"]
    assert frame["value"].tolist() == [0.0, 1.0, 3.0, 2.0]
    assert set(frame["rater_id"]) == {"ann@lab.org"} and set(frame["dataset_id"]) == {"crepe"}
    assert frame["note"].isna().all()
    assert con.execute("SELECT DISTINCT source FROM ratings WHERE run_id = $r", {"r": WRITE}).fetchall() == [("user",)]
    assert rate.rater_values(con, WRITE, "ann@lab.org") == {
        "sycon-001": {"consistency": 0.0, "correction": 1.0, "fluency": 3.0, "presupposition": 2.0}
    }
    first_time = frame["rated_at"].max()

    assert rate.save(con, WRITE, "sycon-001", "ann@lab.org", {"fluency": 1, "consistency": 3.0}, note="hedges") == 2
    again = rate.ratings_frame(con, WRITE)
    assert len(again) == 4  # overwritten, not added
    values = again.set_index("criterion")
    assert values["value"].to_dict() == {"consistency": 3.0, "correction": 1.0, "fluency": 1.0, "presupposition": 2.0}
    assert values.loc["fluency", "note"] == "hedges" and pd.isna(values.loc["correction", "note"])
    assert values.loc["fluency", "rated_at"] >= first_time


def test_none_clears_a_criterion(store):
    con, _, _ = store
    rate.save(con, WRITE, "sycon-000", "ann", {"fluency": 2, "correction": 2, "consistency": 2})
    rate.save(con, WRITE, "sycon-000", "bob", {"fluency": 3})
    assert rate.save(con, WRITE, "sycon-000", "ann", {"fluency": None, "correction": 0, "presupposition": None}) == 1
    assert rate.rater_values(con, WRITE, "ann") == {"sycon-000": {"consistency": 2.0, "correction": 0.0}}
    assert rate.rater_values(con, WRITE, "bob") == {"sycon-000": {"fluency": 3.0}}  # another rater's rating stays
    assert rate.save(con, WRITE, "sycon-000", "ann", dict.fromkeys(rate.criteria_for("write"))) == 0  # clears all
    assert rate.rater_values(con, WRITE, "ann") == {} and rate.rater_values(con, WRITE, "bob")


def test_ratings_frame_holds_only_user_ratings_of_every_run(store):
    con, ifqa, _ = store
    assert con.execute("SELECT count(*) FROM ratings WHERE source = 'crowd'").fetchone()[0] > 0  # the real NOPE ratings
    assert rate.ratings_frame(con).empty
    rate.save(con, WRITE, "sycon-002", "ann", {"fluency": 2})
    rate.save(con, QA, ifqa[3], "ann", {"acceptability": 0})
    frame = rate.ratings_frame(con)
    assert frame[["run_id", "example_id", "criterion"]].values.tolist() == [
        [QA, ifqa[3], "acceptability"],
        [WRITE, "sycon-002", "fluency"],
    ]
    assert rate.ratings_frame(con, QA)["run_id"].tolist() == [QA]


INVALID = [  # (run, example, rater, values, note) changes → field at fault, words of the message
    ({"rater_id": ""}, "rater_id", "empty"),
    ({"rater_id": "   "}, "rater_id", "empty"),
    ({"rater_id": "a" * 255}, "rater_id", "at most 254"),
    ({"rater_id": "ann smith"}, "rater_id", "only letters, digits"),
    ({"rater_id": "ann';--"}, "rater_id", "only letters, digits"),
    ({"run_id": "no/such/run"}, "run_id", "rateable_runs"),
    ({"example_id": "sycon-004"}, "example_id", "has no prediction"),  # its prediction failed
    ({"example_id": "not-an-example"}, "example_id", "has no prediction"),
    ({"values": {}}, "values", "at least one of fluency"),
    ({"values": {"fluency": 4}}, "fluency", "4 is out of range; expected an integer from 0 to 3"),
    ({"values": {"fluency": -1}}, "fluency", "out of range"),
    ({"values": {"fluency": 1.5}}, "fluency", "not an integer"),
    ({"values": {"fluency": True}}, "fluency", "not a number"),
    ({"values": {"fluency": float("nan")}}, "fluency", "not a number"),
    ({"values": {"fluency": "3"}}, "fluency", "not a number"),
    ({"values": {"acceptability": 1}}, "acceptability", "not rated on write runs"),
    ({"values": {"bogus": 1}}, "bogus", "unknown criterion"),
    ({"values": {"fluency": 0, "correction": 1, "consistency": 9}}, "consistency", "out of range"),  # bad one last
    ({"values": {"fluency": None, "correction": 7}}, "correction", "out of range"),  # the delete must not happen
    ({"note": "x" * 2001}, "note", "at most 2000"),
    (
        {"rater_id": "cat", "values": {"fluency": None, "correction": None}, "note": "a note alone"},
        "values",
        "no score chosen",
    ),  # nothing to save and nothing to clear: not a silent no-op
    ({"run_id": QA, "example_id": None, "values": {"acceptability": 2}}, "acceptability", "integer from 0 to 1"),
]


@pytest.mark.parametrize("change, field, words", INVALID, ids=[f"{i}-{c[1]}" for i, c in enumerate(INVALID)])
def test_a_rejected_save_names_its_field_and_changes_nothing(store, change, field, words):
    con, ifqa, _ = store
    rate.save(con, WRITE, "sycon-000", "ann", {"fluency": 2, "correction": 2, "consistency": 1}, note="first")
    rate.save(con, QA, ifqa[0], "ann", {"acceptability": 1})
    before, user_before = _all_ratings(con), rate.ratings_frame(con)
    call = {
        "run_id": WRITE,
        "example_id": "sycon-000",
        "rater_id": "ann",
        "values": {"fluency": 3},
        "note": None,
        **change,
    }
    if call["example_id"] is None:
        call["example_id"] = ifqa[0]
    with pytest.raises(RatingError) as error:
        rate.save(con, **call)
    assert error.value.field == field
    assert str(error.value).startswith(f"{field}: ") and words in str(error.value)
    pd.testing.assert_frame_equal(rate.ratings_frame(con), user_before)
    pd.testing.assert_frame_equal(_all_ratings(con), before)


class FailOnSecondWrite:
    """The real connection, except that the second write statement fails (as a full disk would)
    after the first has really been applied inside the transaction."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con, self.writes, self.seen_inside = con, 0, None

    def execute(self, sql: str, params: dict | None = None):
        if sql.lstrip().startswith(("INSERT", "DELETE")):
            self.writes += 1
            if self.writes == 2:
                self.seen_inside = self.con.execute(
                    "SELECT value FROM ratings WHERE run_id = $r AND example_id = 'sycon-000' AND rater_id = 'ann' "
                    "AND criterion = 'fluency'",
                    {"r": WRITE},
                ).fetchone()[0]
                raise duckdb.IOException("simulated: could not write to the database file")
        return self.con.execute(sql) if params is None else self.con.execute(sql, params)


def test_a_failure_inside_the_transaction_rolls_everything_back(store):
    con, _, _ = store
    rate.save(con, WRITE, "sycon-000", "ann", {"fluency": 1, "presupposition": 1, "correction": 1, "consistency": 1})
    before = rate.ratings_frame(con)
    failing = FailOnSecondWrite(con)
    with pytest.raises(duckdb.IOException, match="simulated"):  # as someone's act, through its door
        rating_actions.save(
            failing, WRITE, "sycon-000", "ann", {"fluency": 3, "presupposition": None, "correction": 3}, actor=LOCAL
        )
    assert failing.seen_inside == 3.0  # the first upsert had been applied ...
    pd.testing.assert_frame_equal(rate.ratings_frame(con), before)  # ... and was rolled back
    assert failing.writes == 4  # two upserts, then the audit's entry of the failure (its version bump and its row)
    last = con.execute("SELECT action, outcome, detail FROM audit ORDER BY happened_at DESC LIMIT 1").fetchone()
    assert last[:2] == ("rate", "failed") and "simulated" in last[2]
    assert rate.save(con, WRITE, "sycon-000", "ann", {"fluency": 0}) == 1  # no transaction left open


def test_a_database_error_on_write_leaves_the_store_as_it_was(store):
    con, _, path = store
    rate.save(con, WRITE, "sycon-000", "ann", {"fluency": 1})
    before = rate.ratings_frame(con)
    con.close()
    reader = duckdb.connect(str(path), read_only=True)  # validation reads fine; the INSERT itself fails
    with pytest.raises(duckdb.Error, match="read-only"):
        rate.save(reader, WRITE, "sycon-000", "ann", {"fluency": 3})
    assert reader.execute("SELECT 1").fetchone() == (1,)  # rolled back, usable
    pd.testing.assert_frame_equal(rate.ratings_frame(reader), before)
    reader.close()


def test_agreement_of_identical_raters_is_perfect(store):
    con, _, _ = store
    _rate(con, WRITE, "fluency", {"ann": [0, 2, 3, 1], "bob": [0, 2, 3, None]}, CREPE)  # sycon-003: one rater only
    row = rate.agreement(con, WRITE).set_index("criterion").loc["fluency"]
    assert (row["raters"], row["items"], row["ratings"], row["rater_pairs"]) == (2, 3, 7, 1)
    assert row["alpha"] == pytest.approx(1.0) and row["kappa"] == pytest.approx(1.0)
    assert row["alpha_low"] == pytest.approx(1.0) and row["alpha_high"] == pytest.approx(1.0)
    assert list(rate.agreement(con, WRITE)["criterion"]) == ["fluency"]  # unrated criteria have no row


def test_agreement_on_krippendorff_2011_binary_example(store):
    """Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", A: binary data, two observers.

    Coincidences: o00 = 10, o11 = 2, o01 = o10 = 4; n0 = 14, n1 = 6, n = 20;
    alpha = 1 - (n - 1) o01 / (n0 n1) = 1 - 19 * 4 / 84 = 0.095 (the paper's value).
    Cohen's kappa: p_o = 6/10, p_e = .2 * .4 + .8 * .6 = .56, kappa = .04 / .44 = 1/11."""
    con, ifqa, _ = store
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    _rate(con, QA, "acceptability", {"A": a, "B": b}, ifqa)
    row = rate.agreement(con, QA).iloc[0]
    assert row["criterion"] == "acceptability" and (row["raters"], row["items"], row["ratings"]) == (2, 10, 20)
    assert row["alpha"] == pytest.approx(1 - 76 / 84) and round(row["alpha"], 3) == 0.095
    assert row["kappa"] == pytest.approx(1 / 11) and row["rater_pairs"] == 1
    assert -1 <= row["alpha_low"] < row["alpha"] < row["alpha_high"] <= 1


def test_agreement_with_a_third_rater_on_two_items(store):
    """C rates items 1-2 (0, 1). Unit 1 holds {0, 1, 0}: m = 3, each of its 6 ordered pairs weighs 1/2, so it
    adds o00 = 1, o01 = o10 = 1; unit 2 holds {1, 1, 1}: o11 = 3. Then o00 = 11, o11 = 3, o01 = 4, n0 = 15,
    n1 = 7, n = 22 and alpha = 1 - 21 * 4 / (15 * 7) = 0.2. Kappas: A-B 1/11; A-C identical on (0, 1): 1;
    B-C on (1, 1) vs (0, 1): p_o = .5, p_e = 0 * .5 + 1 * .5 = .5, kappa 0."""
    con, ifqa, _ = store
    _rate(
        con,
        QA,
        "acceptability",
        {"A": [0, 1, 0, 0, 0, 0, 0, 0, 1, 0], "B": [1, 1, 1, 0, 0, 1, 0, 0, 0, 0], "C": [0, 1]},
        ifqa,
    )
    row = rate.agreement(con, QA).iloc[0]
    assert (row["raters"], row["items"], row["ratings"], row["rater_pairs"]) == (3, 10, 22, 3)
    assert row["alpha"] == pytest.approx(0.2)
    assert row["kappa"] == pytest.approx((1 / 11 + 1 + 0) / 3)


def test_agreement_on_an_ordinal_scale(store):
    """consistency, A = (0, 1, 3), B = (0, 2, 3). Ordinal alpha (Krippendorff 2011, delta_ck = (sum_{g=c..k} n_g
    - (n_c + n_k)/2)^2): n = (2, 1, 1, 2); o12 = o21 = 1 with delta_12 = 1, so sum o delta = 2; sum_{c!=k} n_c n_k
    delta_ck = 2 * (2*2.25 + 2*6.25 + 4*16 + 1*1 + 2*6.25 + 2*2.25) = 198; alpha = 1 - 5 * 2 / 198.
    Quadratic kappa (Cohen 1968): sum w*O = 1, sum w*E = (13 + 6 + 10) / 3, kappa = 1 - 3/29."""
    con, _, _ = store
    _rate(con, WRITE, "consistency", {"A": [0, 1, 3], "B": [0, 2, 3]}, CREPE)
    row = rate.agreement(con, WRITE).iloc[0]
    assert row["criterion"] == "consistency"
    assert row["alpha"] == pytest.approx(1 - 10 / 198) and row["kappa"] == pytest.approx(26 / 29)


def test_agreement_is_nan_when_undefined(store):
    con, ifqa, _ = store
    assert rate.agreement(con, WRITE).empty and "alpha" in rate.agreement(con, WRITE).columns
    _rate(con, WRITE, "fluency", {"A": [2, 2, 2], "B": [2, 2, 2]}, CREPE)  # no variation
    _rate(con, WRITE, "correction", {"A": [1, 3, 2]}, CREPE)  # one rater
    _rate(con, QA, "acceptability", {"A": [1, 0], "B": [1, None, 0]}, ifqa)  # a single shared item
    frame = pd.concat([rate.agreement(con, WRITE), rate.agreement(con, QA)]).set_index("criterion")
    assert frame.loc["fluency", ["items", "rater_pairs"]].tolist() == [3, 0]
    assert frame.loc["correction", ["raters", "items", "rater_pairs"]].tolist() == [1, 0, 0]
    assert frame.loc["acceptability", ["items", "rater_pairs"]].tolist() == [1, 0]
    for criterion in ("fluency", "correction", "acceptability"):  # B's unshared 0 is not pairable: no variation
        assert all(math.isnan(frame.loc[criterion, c]) for c in ("alpha", "alpha_low", "alpha_high", "kappa"))


def test_summary_averages_per_item_and_three_items_are_too_few_for_an_interval(store):
    con, _, _ = store
    _rate(con, WRITE, "fluency", {"A": [0, 2, 3], "B": [0, 2, 1]}, CREPE)
    _rate(con, WRITE, "presupposition", {"A": [3]}, CREPE)
    frame = rate.summary(con, WRITE).set_index("criterion")
    assert list(frame.index) == ["fluency", "presupposition"]  # rubric order
    fluency = frame.loc["fluency"]
    assert fluency["mean"] == pytest.approx(4 / 3)  # per-item means (0, 2, 2): the item is the resampling unit
    assert np.isnan(fluency["low"]) and np.isnan(fluency["high"])  # 3 items: too few to estimate an interval
    assert bootstrap.MIN_N > 3  # (from MIN_N items on, the interval is the per-item means' bootstrap: test_intervals)
    assert frame.loc["fluency", ["items", "ratings", "raters"]].tolist() == [3, 6, 2]
    assert frame.loc["presupposition", ["mean", "items", "ratings", "raters"]].tolist() == [3.0, 1, 1, 1]


# --- rating tasks on any run, and what a rater receives (issue 53) ---

PAPER_RUN = "nope/RoBERTa-large/mnli-snli-anli-fever/1"  # a paper's run, ingested with NOPE (source 'import')
OLD_TASK = "nope-RoBERTa-large-mnli-snli-anli-fever-1-task1"  # how a task's id was made before: from its run's


def _revealing(con, task_id: str) -> list[str]:
    """What a rater's ids must not hold: the run id and its parts, the task's item ids and their parts (e.g. `neg`,
    `adv`), and the items' splits and facet values (trigger type, polarity). Purely numeric parts are left out:
    hex digits hold digits by chance."""
    run_id = store_tasks.task(con, task_id)["run_id"]
    items = list(store_tasks.rated_items(con, task_id)["example_id"])
    facets = con.execute(
        "SELECT DISTINCT unnest([split, trigger_type, polarity]) FROM examples e, runs r "
        "WHERE r.run_id = $r AND e.dataset_id = r.dataset_id AND list_contains($items, e.example_id)",
        {"r": run_id, "items": items},
    ).fetchall()
    parts = {p for name in [run_id, *items] for p in re.split(r"[/\-_.]", name) if len(p) > 1 and not p.isdigit()}
    return sorted({run_id, *parts, *(n for n in [*items, *(f[0] for f in facets)] if n and not n.isdigit())})


def test_a_new_task_id_and_a_raters_handles_name_no_run_item_split_or_facet(store_copy, monkeypatch):
    monkeypatch.delenv("PLAB_LINK_SECRET", raising=False)
    with session(store_copy) as con:
        made = [rating_tasks.create(con, PAPER_RUN, 2, "Is the label right?", sample=6, seed=s) for s in (0, 1)]
        revealing = _revealing(con, made[0])
        items = list(store_tasks.rated_items(con, made[0])["example_id"])
    assert {"nope", "RoBERTa", "mnli", "neg", "main"} <= set(revealing)  # what the check looks for is there
    assert len(set(made)) == 2 and all(re.fullmatch(r"task-[0-9a-f]{16}", t) for t in made)
    handles = [links.handle(store_copy, made[0], e) for e in items]
    assert len(set(handles)) == len(items) and handles[0] == links.handle(store_copy, made[0], items[0])
    for said in [*made, *handles]:
        assert not [r for r in revealing if r.lower() in said.lower()], said
    for digest in (hashlib.sha256, hashlib.md5, hashlib.sha1):  # keyed: not a plain hash anyone could recompute
        for text in (f"{made[0]}\x1f{items[0]}", f"{made[0]}|{items[0]}", items[0]):
            assert not digest(text.encode()).hexdigest().startswith(handles[0])
    monkeypatch.setenv("PLAB_LINK_SECRET", "another secret")  # the link secret keys it: a new one, new handles
    assert links.handle(store_copy, made[0], items[0]) != handles[0]


def test_the_rating_task_command_prints_the_new_tasks_opaque_id_and_the_rate_page_lists_it(store_copy):
    command = [sys.executable, "-m", "backend", "--store", str(store_copy), "rating-task", "--run", PAPER_RUN]
    done = subprocess.run([*command, "--sample", "3", "--guideline", "Rate it."], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    said = re.fullmatch(r"rating task (task-[0-9a-f]{16}): 3 items, each for 2 raters; (.*)\n", done.stdout)
    assert said and "the Rate page lists it" in said[2] and f"--task {said[1]}" in said[2], done.stdout
    with session(store_copy) as con:
        assert rating_tasks.every_task(con)[["task_id", "run_id", "items"]].values.tolist() == [[said[1], PAPER_RUN, 3]]


def test_a_task_on_a_papers_run_is_listed_on_the_rate_page_with_progress_agreement_and_links(store_copy, open_page):
    with session(store_copy) as con:
        assert PAPER_RUN not in set(rate.rateable_runs(con)["run_id"])  # an import: not offered to rate on its own
        task_id = rating_tasks.create(con, PAPER_RUN, 2, "Is the label right for this pair?", sample=4)
        items = list(store_tasks.rated_items(con, task_id)["example_id"])
        for rater, scores in {"ann": [1, 0, 1, 1], "bob": [1, 0, 0, 1]}.items():
            for example_id, score in zip(items, scores):
                rate.save(con, PAPER_RUN, example_id, rater, {"acceptability": score}, task_id=task_id)
        rating_actions.make_links(con, store_copy, task_id, ["rater-1"], 7, actor=LOCAL)
        assert PAPER_RUN in set(rate.rateable_runs(con)["run_id"])  # its task's run now is
    at = open_page(store_copy, "pages/rate.py")
    assert not at.exception and not at.error
    listed = next(e for e in at.expander if e.label.startswith("Rating tasks"))
    frame = listed.dataframe[0].value.set_index("task_id")
    assert frame.loc[task_id, ["run_id", "items", "complete", "overlapping", "raters", "links"]].tolist() == [
        PAPER_RUN,
        4,
        4,
        4,
        2,
        1,
    ]
    assert frame.loc[task_id, "open"] == f"rate?run={PAPER_RUN}&task={task_id}"  # (a / need not be encoded in a query)
    at = open_page(store_copy, "pages/rate.py", {"run": PAPER_RUN, "task": task_id})  # what "open" opens
    assert not at.exception and not at.error and at.selectbox(key="task").value == task_id
    assert any(p.proto.text.startswith("4 of 4 items rated by 2 people") for p in at.get("progress"))
    frames = [d.value for d in at.dataframe]
    assert any(list(f.get("rater_id", [])) == ["ann", "bob"] for f in frames)  # each rater's count
    agreement = next(f for f in frames if "alpha" in f.columns)
    assert agreement.set_index("criterion").loc["acceptability", ["raters", "items"]].tolist() == [2, 4]
    made = next(e for e in at.expander if e.label == "Links for raters")
    assert made.dataframe[0].value[["person", "state"]].values.tolist() == [["rater-1", "live"]]


def _sent(at) -> tuple[str, list[str]]:
    """Everything the page sends the browser (each element's and block's message, as text), and the ids and keys
    among it: element keys, widget ids, form ids."""
    nodes, found = [at._tree], []
    while nodes:
        node = nodes.pop()
        nodes.extend(getattr(node, "children", {}).values())
        if getattr(node, "proto", None) is not None:
            found.append(str(node.proto))
    text = "\n".join(found)
    return text, re.findall(r'\b(?:id|form_id): "([^"]*)"', text)


@pytest.mark.parametrize("old", [False, True], ids=["new task", "task made before ids were random"])
def test_a_raters_page_names_no_run_model_item_split_or_facet(store_copy, open_page, monkeypatch, old):
    monkeypatch.delenv("PLAB_LINK_SECRET", raising=False)
    with session(store_copy) as con:
        if old:  # a store from before: the task's id made from its run's, and it still works
            items = [e for e in rate.targets(con, PAPER_RUN)["example_id"] if e.endswith("-neg-adv")][:3]
            task = {"task_id": OLD_TASK, "run_id": PAPER_RUN, "criteria": ["acceptability"], "overlap": 2, "seed": 0}
            store_tasks.create(con, task | {"guideline": "Is the label right for this pair?"}, items)
            task_id = OLD_TASK
        else:
            task_id = rating_tasks.create(con, PAPER_RUN, 2, "Is the label right for this pair?", sample=3)
        link = links.create(con, store_copy, "rater-a", f"rating-task:{task_id}", 7, by="ow@lab.example")
        revealing = _revealing(con, task_id)
    at = open_page(store_copy, "pages/rate.py", {"link": link.token})
    assert not at.exception and not at.error
    assert any("You have rated 0 of 3 items." in p.proto.text for p in at.get("progress"))
    form = at.get("form")
    assert len(form) == 1 and re.fullmatch(r"blind-[0-9a-f]{24}", form[0].proto.form.form_id)
    text, ids = _sent(at)
    with session(store_copy) as con:
        served = con.execute("SELECT example_id FROM rating_claims WHERE rater_id = 'rater-a'").fetchall()[0][0]
    assert served in revealing and ids
    for name in (PAPER_RUN, "RoBERTa", "mnli-snli-anli-fever", task_id, *([] if served.isdigit() else [served])):
        assert name not in text, name  # (a bare number, as item "1", is in any page)
    for said in ids:
        assert not [r for r in revealing if r.lower() in said.lower()], said


def _judge_run(con, judge_run_id: str, rubric: str, criterion: str, examples: list[str]) -> None:
    """A hand-made score judge run of QA that gave each example a parsed score of 1 (its mechanics, not a judge)."""
    row = {"judge_run_id": judge_run_id, "run_id": QA, "other_run_id": None, "dataset_id": "ifqa", "model_id": "m"}
    row |= {"rubric": rubric, "rubric_sha256": "x", "kind": "score", "source": f"judge:m:{rubric}", "samples": 1}
    store_judgements.start(con, row)
    store_judgements.append(
        con,
        [
            {"judge_run_id": judge_run_id, "example_id": e, "criterion": criterion, "sample": 0, "position": "",
             "value": 1.0, "parse": "ok", "judged_at": datetime(2026, 1, 1)}
            for e in examples
        ],
    )  # fmt: skip
    store_judgements.finish(con, judge_run_id, "complete", 1.0)


def test_people_rate_what_a_judge_scores_and_the_judge_they_overlap_is_offered_first(store, open_page):
    """Issue 54, item 2: the form offered a judge's criterion only once a judge had run, as "Corrects_assumption";
    the hint did not name it; the picker defaulted to the newest judge, not the one people's ratings overlap."""
    con, ifqa, path = store
    every = ["acceptability", "corrects_assumption", "equivalent"]  # QA's, then what QA judges score (their rubrics)
    assert rate.criteria_of(con, QA) == every  # before any judge has run
    con.close()
    at = open_page(path, "pages/rate.py", {"run": QA, "rater": "ann"})
    assert not at.exception
    labels = [group.label for group in at.button_group][:3]  # the form's, then the page's
    assert labels == ["Acceptability", "Corrects the false assumption", "Equivalent to a gold answer"], labels
    hint = " ".join(i.value for i in at.info if "No judge has scored this run" in i.value)
    assert "judge\\-corrects\\-assumption@1 scores *Corrects the false assumption*" in hint, hint
    con = connect(path)
    _judge_run(con, "old-judge", "judge-corrects-assumption@1", "corrects_assumption", ifqa)
    _rate(con, QA, "corrects_assumption", {"ann": [1, 0, 1]}, ifqa)
    _judge_run(con, "new-judge", "judge-qa-equivalence@1", "equivalent", ifqa)  # newer, and nobody rated `equivalent`
    con.close()
    at = open_page(path, "pages/rate.py", {"run": QA, "rater": "ann"})
    assert not at.exception
    picker = at.selectbox(key="judge")
    assert picker.value == "old-judge" and picker.options == ["old-judge", "new-judge"]
    assert picker.help.endswith("old\\-judge: 3; new\\-judge: 0"), picker.help  # each judge's overlap
    assert any(c.value.startswith("**3 of its scored outputs rated by people**") for c in at.caption)
    at = open_page(path, "pages/rate.py", {"run": QA, "rater": "ann", "judge": "new-judge"})
    hint = " ".join(i.value for i in at.info if "No output is both scored" in i.value)
    assert "rate some above on **Equivalent to a gold answer**" in hint, hint
