"""Retrieval inspector: retrievers side by side, Recall@K curves, and retrieval vs reading errors.

- Gold passages are a question's qrels in the corpus. A retriever's *gold rank* is the 1-based rank
  of its first gold passage (`backend.metrics.retrieval.first_gold_rank`).
- Recall@K follows IfQA / DPR (Karpukhin et al. 2020): a question is a hit when *any* gold passage
  is in the top K. Curves are read from stored retrieval runs (`backend.retrieval.evaluate`: one
  prediction per question with its first gold rank within the run's k), so K never exceeds the
  run's k; questions without qrels are left out, as in evaluation. Intervals: 95% bootstrap.
- Error attribution, the usual retrieve-then-read analysis: every prediction of a retrieval-augmented
  QA run is *correct* (SQuAD exact match against any gold answer), a *retrieval miss* (wrong, and no
  gold passage among the passages the reader saw), a *reading miss* (wrong although a gold passage
  was there), *no gold passage* (wrong, and the question has no qrels, so it cannot be attributed)
  or *failed* (the model raised an error; kept so nothing is hidden). The reader's top K is what the
  run stored in `retrievals`, not a fresh search: it is exactly what the model was shown.

Every function takes the store connection first and returns pandas objects.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from backend.metrics import squad
from backend.metrics.bootstrap import mean
from backend.metrics.retrieval import first_gold_rank, recall_at_k
from backend.store import passages
from backend.store import runs as store_runs

OUTCOMES = ("correct", "reading miss", "retrieval miss", "no gold passage", "failed")
KS = (1, 2, 3, 5, 10, 20, 50, 100)
MAKE_QA_RUN = "python -m backend predict --model smollm2-135m --dataset ifqa --split S-dev --retriever hybrid"


GOLD_DEPTH = 100  # how deep each retriever is searched for the first gold passage


def side_by_side(
    con,
    retrievers: dict,
    query: str,
    k: int = 10,
    gold: list[str] = (),
    depth: int = GOLD_DEPTH,
    corpus_id: str = "wiki",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(hits, gold ranks): each retriever's top k (retriever, rank, doc_id, title, text, score, gold) in
    dict order, and per retriever the rank of its first gold passage within the top `depth` (an int, or
    None) and whether one was found; one `search(query, depth)` per retriever."""
    if not query or not query.strip():
        raise ValueError("query is empty: type a question")
    if not retrievers:
        raise ValueError("retrievers is empty: pass {name: retriever}")
    if not 1 <= int(k) <= int(depth):
        raise ValueError(f"k must be between 1 and depth ({depth}), got {k}")
    gold = set(gold)
    rows, ranks = [], []
    for name, retriever in retrievers.items():
        found = retriever.search(query, int(depth))
        rank = first_gold_rank([h.doc_id for h in found], gold)
        ranks.append({"retriever": name, "gold_rank": rank, "found": rank is not None})
        rows += [
            {"retriever": name, "rank": h.rank, "doc_id": h.doc_id, "score": h.score, "gold": h.doc_id in gold}
            for h in found[:k]
        ]
    hits = pd.DataFrame(rows, columns=["retriever", "rank", "doc_id", "score", "gold"])
    texts = passages.titled(con, list(hits["doc_id"]), corpus_id)
    hits = hits.merge(texts, on="doc_id", how="left")[["retriever", "rank", "doc_id", "title", "text", "score", "gold"]]
    hits["gold"] = hits["gold"].astype(bool)
    ranks = pd.DataFrame(ranks, columns=["retriever", "gold_rank", "found"]).astype({"gold_rank": object})
    return hits, ranks


def retrieval_runs(con, dataset_id: str = "ifqa") -> pd.DataFrame:
    """Complete stored retrieval runs of the dataset: run_id, retriever_id, k, questions."""
    frame = store_runs.listing(con, dataset_id, tasks=("retrieve",), with_predictions=True)
    return pd.DataFrame(
        {
            "run_id": frame["run_id"],
            "retriever_id": frame["retriever_id"].fillna(frame["model_id"]),
            "k": frame["k"],
            "questions": frame["predictions"],
        }
    )


def recall_curves(con, dataset_id: str = "ifqa", split: str | None = None, ks=KS) -> pd.DataFrame:
    """Recall@K (K ≤ each run's k) of every stored retrieval run, over its questions with qrels
    (optionally one split): retriever, k, recall, low, high, n."""
    rows = []
    for run_id, retriever, run_k, _ in retrieval_runs(con, dataset_id).itertuples(index=False):
        ranks = passages.first_gold_ranks(con, dataset_id, run_id, split)
        for cutoff in (c for c in ks if ranks and (pd.isna(run_k) or c <= run_k)):
            estimate = recall_at_k(ranks, cutoff)
            rows.append(
                {
                    "retriever": retriever,
                    "k": cutoff,
                    "recall": estimate.value,
                    "low": estimate.low,
                    "high": estimate.high,
                    "n": estimate.n,
                }
            )
    return pd.DataFrame(rows, columns=["retriever", "k", "recall", "low", "high", "n"])


def qa_runs(con, dataset_id: str = "ifqa") -> pd.DataFrame:
    """Complete retrieval-augmented QA runs of the dataset: run_id, model_id, retriever_id, k, n."""
    frame = store_runs.listing(con, dataset_id, tasks=("qa",), retrieval_augmented=True, with_predictions=True)
    return frame[["run_id", "model_id", "retriever_id", "k", "predictions"]].rename(columns={"predictions": "n"})


def _qa_run(con, run_id: str) -> tuple[str, int | None]:
    """(dataset_id, config k) of a complete retrieval-augmented QA run, else ValueError saying which qualify."""
    qualified = store_runs.listing(con, tasks=("qa",), retrieval_augmented=True).set_index("run_id")
    if run_id not in qualified.index:
        known = list(qualified.index)
        raise ValueError(
            f"run_id {run_id!r} is not a complete retrieval-augmented QA run; "
            + (f"those are: {', '.join(known)}" if known else "there are none yet")
            + f"; make one with `{MAKE_QA_RUN}`"
        )
    k = qualified.at[run_id, "k"]
    return qualified.at[run_id, "dataset_id"], None if pd.isna(k) else int(k)


def error_attribution(con, run_id: str, corpus_id: str = "wiki") -> pd.DataFrame:
    """One row per prediction of a retrieval-augmented QA run: example_id, split, answer_type, input,
    answer, gold_answers, em, f1, reader_k, gold_rank (rank of the first gold passage among the
    reader's: an int, or None) and outcome (see the module docstring)."""
    dataset_id, config_k = _qa_run(con, run_id)
    frame = passages.reader_rows(con, dataset_id, run_id, corpus_id)
    frame["gold_answers"] = [list(g) if g is not None and not np.isscalar(g) else [] for g in frame["gold_answers"]]
    pairs = [(a if isinstance(a, str) else "", g) for a, g in zip(frame["answer"], frame["gold_answers"])]
    frame["em"] = [int(squad.exact_match(a, g)) for a, g in pairs]
    frame["f1"] = [squad.token_f1(a, g) for a, g in pairs]
    frame["reader_k"] = frame["reader_k"].fillna(config_k).astype("Int64")
    frame["gold_rank"] = pd.Series(
        [None if pd.isna(r) else int(r) for r in frame["gold_rank"]], index=frame.index, dtype=object
    )
    frame["outcome"] = np.select(
        [frame["error"].notna(), frame["em"] == 1, frame["n_gold"] == 0, frame["gold_rank"].isna()],
        ["failed", "correct", "no gold passage", "retrieval miss"],
        "reading miss",
    )
    return frame[
        [
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
    ]


def attribution_summary(frame: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """Per outcome (and per `by` group): n, share of the group's predictions and its 95% bootstrap
    interval; outcomes in the fixed order of `OUTCOMES`, absent ones omitted."""
    columns = ([by] if by else []) + ["outcome", "n", "share", "low", "high"]
    if by is not None and by not in frame.columns:
        raise ValueError(f"by {by!r} is not a column: use one of {', '.join(frame.columns)}")
    groups = frame.groupby(by, sort=True, dropna=False) if by else [(None, frame)]
    rows = []
    for key, group in groups:
        outcomes = group["outcome"].to_numpy()
        for outcome in (o for o in OUTCOMES if (outcomes == o).any()):
            estimate = mean((outcomes == outcome).astype(float))
            rows.append(
                {
                    **({by: key} if by else {}),
                    "outcome": outcome,
                    "n": int((outcomes == outcome).sum()),
                    "share": estimate.value,
                    "low": estimate.low,
                    "high": estimate.high,
                }
            )
    return pd.DataFrame(rows, columns=columns)
