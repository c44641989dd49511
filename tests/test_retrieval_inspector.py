"""Retrieval inspector on the real store: side-by-side hits with gold marking, Recall@K curves from
stored retrieval runs, and retrieval vs reading error attribution of a hand-built QA run."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from backend.analysis import retrieval as inspector
from backend.metrics import squad
from backend.metrics.retrieval import first_gold_rank
from backend.retrieval.base import Hit
from backend.retrieval.bm25 import BM25Retriever
from backend.retrieval.evaluate import evaluate_retrievers
from backend.store import passages
from backend.store.connection import connect
from backend.store.passages import corpus_passages
from backend.store.writer import replace_runs


@pytest.fixture(scope="module")
def bm25(real_store) -> BM25Retriever:
    con = connect(real_store)
    try:
        return BM25Retriever.build(*corpus_passages(con, "wiki"))
    finally:
        con.close()


class Reversed:
    """An honest second retriever: BM25's top `k` in reverse order."""

    name = "reversed"

    def __init__(self, inner):
        self.inner = inner

    def search(self, query: str, k: int) -> list[Hit]:
        found = self.inner.search(query, k)[::-1]
        return [Hit(h.doc_id, -h.score, rank) for rank, h in enumerate(found, start=1)]

    def search_many(self, queries, k):
        return [self.search(q, k) for q in queries]


@pytest.fixture()
def store_copy(real_store, tmp_path):
    path = tmp_path / "copy.duckdb"
    shutil.copy(real_store, path)
    con = connect(path)
    yield con
    con.close()


def test_gold_doc_ids_are_the_sorted_qrels(real_con):
    example_id, expected = real_con.execute("""
        SELECT example_id, list(doc_id ORDER BY doc_id) FROM qrels WHERE dataset_id = 'ifqa' AND corpus_id = 'wiki'
        GROUP BY example_id HAVING count(*) > 1 ORDER BY example_id LIMIT 1""").fetchall()[0]
    assert passages.gold_doc_ids(real_con, "ifqa", example_id) == list(expected) and len(expected) > 1
    assert passages.gold_doc_ids(real_con, "ifqa", "no-such-id") == []


def _question_with_gold_at(con, bm25, low: int, high: int) -> tuple[str, str, list[str], int]:
    """The first S-dev question whose first gold passage BM25 ranks in [low, high]."""
    rows = con.execute("""SELECT e.example_id, e.input, list(q.doc_id ORDER BY q.doc_id) FROM examples e
                          JOIN qrels q ON q.dataset_id = e.dataset_id AND q.example_id = e.example_id AND q.corpus_id =
                          'wiki'
                          WHERE e.dataset_id = 'ifqa' AND e.split = 'S-dev' GROUP BY ALL ORDER BY
                          e.example_id""").fetchall()
    for (example_id, query, gold), found in zip(rows, bm25.search_many([r[1] for r in rows], 100)):
        rank = first_gold_rank([h.doc_id for h in found], set(gold))
        if rank is not None and low <= rank <= high:
            return example_id, query, list(gold), rank
    raise AssertionError("no such question")


def test_side_by_side_marks_gold_and_ranks_it(real_con, bm25):
    example_id, query, gold, rank = _question_with_gold_at(real_con, bm25, 2, 10)
    assert passages.gold_doc_ids(real_con, "ifqa", example_id) == gold
    reversed_ = Reversed(bm25)
    hits, ranks = inspector.side_by_side(real_con, {"bm25": bm25, "reversed": reversed_}, query, k=10, gold=gold)
    assert list(hits.columns) == ["retriever", "rank", "doc_id", "title", "text", "score", "gold"]
    assert list(hits["retriever"]) == ["bm25"] * 10 + ["reversed"] * 10
    assert list(hits["rank"]) == list(range(1, 11)) * 2
    top100 = [h.doc_id for h in bm25.search(query, 100)]
    mine, theirs = hits[hits["retriever"] == "bm25"], hits[hits["retriever"] == "reversed"]
    assert list(mine["doc_id"]) == top100[:10] and list(theirs["doc_id"]) == top100[::-1][:10]
    assert list(hits["gold"]) == [d in set(gold) for d in hits["doc_id"]]
    assert mine["gold"].tolist().index(True) + 1 == rank and hits["gold"].dtype == bool
    texts = dict(real_con.execute("SELECT doc_id, text FROM passages WHERE corpus_id = 'wiki'").fetchall())
    assert list(hits["text"]) == [texts[d] for d in hits["doc_id"]] and hits["title"].notna().any()
    assert list(ranks["retriever"]) == ["bm25", "reversed"]
    assert ranks["gold_rank"].tolist() == [rank, first_gold_rank(top100[::-1], set(gold))]
    assert ranks["found"].tolist() == [True, True]

    _, missing = inspector.side_by_side(real_con, {"bm25": bm25}, query, k=3, gold=["not-a-passage"], depth=20)
    assert missing["gold_rank"].tolist() == [None] and missing["found"].tolist() == [False]


@pytest.mark.parametrize(
    "kwargs, name",
    [({"k": 0}, "k"), ({"k": 21, "depth": 20}, "k"), ({"query": "   "}, "query"), ({"retrievers": {}}, "retrievers")],
)
def test_side_by_side_validates(real_con, bm25, kwargs, name):
    args = {"retrievers": {"bm25": bm25}, "query": "Who discovered penicillin?", **kwargs}
    with pytest.raises(ValueError, match=name):
        inspector.side_by_side(real_con, **args)


def test_recall_curves_match_the_evaluation(store_copy, bm25):
    con = store_copy
    assert inspector.retrieval_runs(con).empty and inspector.recall_curves(con).empty
    con.execute("""DELETE FROM qrels WHERE dataset_id = 'ifqa' AND example_id IN ('S-dev-0', 'S-dev-1', 'S-dev-2')""")
    table = evaluate_retrievers(con, {"bm25": bm25}, "ifqa", splits=("S-dev",), k=100)
    evaluate_retrievers(con, {"bm25-top10": bm25}, "ifqa", splits=("S-dev",), k=10)
    runs = inspector.retrieval_runs(con)
    assert runs[["run_id", "retriever_id", "k", "questions"]].values.tolist() == [
        ["ifqa/retrieval/bm25", "bm25", 100, 700],
        ["ifqa/retrieval/bm25-top10", "bm25-top10", 10, 700],
    ]
    curves = inspector.recall_curves(con, split="S-dev", ks=(1, 3, 5, 20, 100, 200))
    assert list(curves.columns) == ["retriever", "k", "recall", "low", "high", "n"]
    full, short = curves[curves["retriever"] == "bm25"], curves[curves["retriever"] == "bm25-top10"]
    assert full["k"].tolist() == [1, 3, 5, 20, 100] and short["k"].tolist() == [1, 3, 5]
    row = table.iloc[0]
    for k in (1, 5, 20, 100):
        assert full.loc[full["k"] == k, "recall"].item() == pytest.approx(row[f"Recall@{k}"])
    assert full.loc[full["k"] == 20, ["low", "high"]].values.tolist()[0] == pytest.approx(
        [row["Recall@20 low"], row["Recall@20 high"]]
    )
    assert (full["n"] == row["n"]).all() and row["n"] == 697  # questions without qrels are left out
    assert (
        np.all(np.diff(full["recall"]) >= 0)
        and (full["low"] <= full["recall"]).all()
        and (full["recall"] <= full["high"]).all()
    )
    assert short["recall"].tolist() == full["recall"].tolist()[:3]  # same ranking, shallower run
    from backend.analysis import leaderboard as overview

    board = overview.headline(con).set_index("run").loc["ifqa/retrieval/bm25"]
    assert (board["metric"], board["n"]) == ("Recall@20", 697)  # the Overview counts the same questions
    assert board["value"] == pytest.approx(row["Recall@20"])
    # Recall@3 counted independently from fresh searches
    qs = con.execute("""SELECT e.input, list(q.doc_id) FROM examples e JOIN qrels q ON q.dataset_id = e.dataset_id
                        AND q.example_id = e.example_id AND q.corpus_id = 'wiki' WHERE e.dataset_id = 'ifqa' AND
                        e.split = 'S-dev'
                        GROUP BY ALL""").fetchall()
    hits3 = [
        any(h.doc_id in set(g) for h in found) for (_, g), found in zip(qs, bm25.search_many([q for q, _ in qs], 3))
    ]
    assert full.loc[full["k"] == 3, "recall"].item() == pytest.approx(np.mean(hits3))
    assert inspector.recall_curves(con, split="S-test").empty
    assert inspector.recall_curves(con)["n"].max() == row["n"]  # all splits = the one stored


RUN = "ifqa/test-reader/qa/bm25@5/S-dev"


def _qa_run(con) -> dict:
    """A QA run over six real S-dev questions whose passages are chosen so each outcome is known."""
    rows = con.execute("""SELECT e.example_id, e.gold_answers, list(q.doc_id ORDER BY q.doc_id) FROM examples e
                          JOIN qrels q ON q.dataset_id = e.dataset_id AND q.example_id = e.example_id AND q.corpus_id =
                          'wiki'
                          WHERE e.dataset_id = 'ifqa' AND e.split = 'S-dev' AND len(e.gold_answers) > 0
                          GROUP BY ALL ORDER BY e.example_id LIMIT 12""").fetchall()
    several = next(r for r in rows if len(r[2]) > 1)  # the reading miss has two gold passages: the first counts
    rows = [rows[0], several, *[r for r in rows[1:] if r is not several]][:6]
    others = [
        r[0]
        for r in con.execute(
            "SELECT doc_id FROM passages WHERE corpus_id = 'wiki' AND doc_id NOT IN "
            "(SELECT doc_id FROM qrels WHERE dataset_id = 'ifqa') ORDER BY doc_id LIMIT 5"
        ).fetchall()
    ]
    ids = [r[0] for r in rows]
    plan = {  # example → (answer, error, passages)
        ids[0]: (f"The {rows[0][1][0]}.", None, [rows[0][2][0], *others[:4]]),  # correct, gold at 1
        ids[1]: ("zzz qqq", None, [*others[:2], rows[1][2][0], others[2], rows[1][2][1]]),  # reading miss, gold at 3, 5
        ids[2]: ("zzz qqq", None, others),  # retrieval miss
        ids[3]: (None, "RuntimeError: out of memory", []),  # failed
        ids[4]: ("zzz qqq", None, others),  # no gold passage (qrels removed)
        ids[5]: (rows[5][1][0], None, others),  # correct without gold: still correct
    }
    con.execute("DELETE FROM qrels WHERE dataset_id = 'ifqa' AND example_id = $e", {"e": ids[4]})
    predictions = [{"run_id": RUN, "example_id": e, "answer": a, "error": err} for e, (a, err, _) in plan.items()]
    retrievals = [
        {"run_id": RUN, "example_id": e, "rank": r, "doc_id": d, "score": 1.0 / r}
        for e, (_, _, docs) in plan.items()
        for r, d in enumerate(docs, start=1)
    ]
    replace_runs(
        con,
        [
            {
                "run_id": RUN,
                "dataset_id": "ifqa",
                "task": "qa",
                "model_id": "test-reader",
                "retriever_id": "bm25",
                "source": "batch",
                "config": {"k": 5},
            }
        ],
        predictions,
        retrievals,
    )
    replace_runs(
        con,
        [
            {
                "run_id": "ifqa/test-reader/qa/S-dev",
                "dataset_id": "ifqa",
                "task": "qa",
                "model_id": "test-reader",
                "source": "batch",
                "config": {"k": 5},
            }
        ],
        [{"run_id": "ifqa/test-reader/qa/S-dev", "example_id": ids[0], "answer": "x"}],
    )
    return {"ids": ids, "gold_answers": {r[0]: list(r[1]) for r in rows}, "plan": plan}


def test_error_attribution_of_a_known_run(store_copy):
    con = store_copy
    known = _qa_run(con)
    ids = known["ids"]
    runs = inspector.qa_runs(con)
    assert runs.values.tolist() == [[RUN, "test-reader", "bm25", 5, 6]]  # the closed-book run does not qualify
    frame = inspector.error_attribution(con, RUN).set_index("example_id").loc[ids]
    assert list(frame.reset_index().columns) == [
        "example_id",
        "split",
        "answer_type",
        "input",
        "answer",
        "gold_answers",
        "em",
        "f1",
        "reader_k",
        "gold_rank",
        "outcome",
    ]
    assert frame["outcome"].tolist() == [
        "correct",
        "reading miss",
        "retrieval miss",
        "failed",
        "no gold passage",
        "correct",
    ]
    assert frame["gold_rank"].tolist() == [1, 3, None, None, None, None]
    assert frame["reader_k"].tolist() == [5, 5, 5, 5, 5, 5]  # the failed one has none stored: the config's k
    assert frame["em"].tolist() == [1, 0, 0, 0, 0, 1]
    assert frame.loc[ids[0], "f1"] == 1.0 and frame.loc[ids[1], "f1"] == squad.token_f1(
        "zzz qqq", known["gold_answers"][ids[1]]
    )
    assert (
        frame["gold_answers"].tolist() == [known["gold_answers"][e] for e in ids] and (frame["split"] == "S-dev").all()
    )
    inputs = dict(con.execute("SELECT example_id, input FROM examples WHERE dataset_id = 'ifqa'").fetchall())
    assert frame["input"].tolist() == [inputs[e] for e in ids]

    summary = inspector.attribution_summary(frame.reset_index())
    assert summary[["outcome", "n"]].values.tolist() == [
        ["correct", 2],
        ["reading miss", 1],
        ["retrieval miss", 1],
        ["no gold passage", 1],
        ["failed", 1],
    ]
    assert summary["share"].tolist() == pytest.approx([2 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6])
    assert (summary["low"] <= summary["share"]).all() and (summary["share"] <= summary["high"]).all()
    assert (summary["low"] < summary["high"]).all()

    grouped = inspector.attribution_summary(frame.reset_index(), by="answer_type")
    assert list(grouped.columns) == ["answer_type", "outcome", "n", "share", "low", "high"]
    sizes = frame["answer_type"].value_counts()
    for answer_type, part in grouped.groupby("answer_type"):
        assert part["n"].sum() == sizes[answer_type] and part["share"].sum() == pytest.approx(1.0)
        assert part["share"].tolist() == pytest.approx((part["n"] / sizes[answer_type]).tolist())
        order = [inspector.OUTCOMES.index(o) for o in part["outcome"]]
        assert order == sorted(order)


def test_error_attribution_says_which_runs_qualify(store_copy):
    con = store_copy
    with pytest.raises(ValueError, match="there are none yet.*--retriever hybrid"):
        inspector.error_attribution(con, "ifqa/nothing")
    _qa_run(con)
    for bad in ("ifqa/nothing", "ifqa/test-reader/qa/S-dev"):
        with pytest.raises(ValueError, match=f"{bad}.*those are: {RUN}.*python -m backend predict"):
            inspector.error_attribution(con, bad)
    with pytest.raises(ValueError, match="by 'nope'"):
        inspector.attribution_summary(inspector.error_attribution(con, RUN), by="nope")
