"""Evaluate retrievers on a dataset's questions against its qrels, and store each as a retrieval run.

Per question: the retriever's top-k (`search_many`, one batch per split), the 1-based rank of the
first gold passage (`backend.metrics.retrieval.first_gold_rank`). Per retriever and split:
Recall@1/5/20/100 (a hit when any gold passage is in the top K; Karpukhin et al. 2020, as in IfQA)
and MRR of the first gold passage within the top k, each with a 95% bootstrap interval. Questions
without qrels in the corpus are retrieved and stored but left out of the metrics.

Each retriever becomes one run `<dataset>/retrieval/<name>` (task "retrieve", source "batch") with
its top hits in `retrievals` (at most 100 per question) and one `predictions` row per question
whose `text` is {"first_gold_rank": r or null, "n_gold": g}. Re-evaluating replaces the run.
"""

from __future__ import annotations

import logging
import time

import duckdb
import pandas as pd

from backend.metrics.retrieval import first_gold_rank, mrr, recall_at_k
from backend.store.passages import corpus_hash, questions
from backend.store.writer import replace_runs

log = logging.getLogger(__name__)
CUTOFFS = (1, 5, 20, 100)
MAX_STORED = 100


def metrics_row(ranks: list[int | None], k: int) -> dict:
    """Recall@K (K ≤ k) and MRR with their 95% intervals."""
    row = {}
    for name, estimate in [*((f"Recall@{c}", recall_at_k(ranks, c)) for c in CUTOFFS if c <= k), ("MRR", mrr(ranks))]:
        row.update({name: estimate.value, f"{name} low": estimate.low, f"{name} high": estimate.high})
    return row


def retrieve(retriever, frame: pd.DataFrame, k: int) -> tuple[list[list], list[int | None], dict[str, float]]:
    """Hits and first gold ranks in frame order, and the search seconds per split."""
    found, seconds = [None] * len(frame), {}
    for split, part in frame.groupby("split", sort=False):
        started = time.perf_counter()
        batch = retriever.search_many(list(part["input"]), k)
        seconds[split] = time.perf_counter() - started
        for position, hits in zip(part.index, batch):
            found[position] = hits
    ranks = [first_gold_rank([h.doc_id for h in hits], set(gold)) for hits, gold in zip(found, frame["gold"])]
    return found, ranks, seconds


def run_rows(run_id: str, frame: pd.DataFrame, found: list[list], ranks: list) -> tuple[list[dict], list[dict]]:
    """`predictions` rows (one per question) and `retrievals` rows (top hits, at most MAX_STORED)."""
    predictions = [
        {"run_id": run_id, "example_id": e, "answer": None, "text": {"first_gold_rank": r, "n_gold": len(g)}}
        for e, r, g in zip(frame["example_id"], ranks, frame["gold"])
    ]
    retrievals = [
        {"run_id": run_id, "example_id": e, "rank": h.rank, "doc_id": h.doc_id, "score": h.score}
        for e, hits in zip(frame["example_id"], found)
        for h in hits[:MAX_STORED]
    ]
    return predictions, retrievals


def run_record(name: str, retriever, dataset_id: str, config: dict, seconds: float) -> dict:
    return {
        "run_id": f"{dataset_id}/retrieval/{name}",
        "dataset_id": dataset_id,
        "task": "retrieve",
        "model_id": getattr(retriever, "model_id", name),
        "retriever_id": name,
        "source": "batch",
        "config": {**config, "retriever": getattr(retriever, "params", {})},
        "seconds": seconds,
        "device": getattr(retriever, "device", "cpu"),
        "code_version": "backend.retrieval",
    }


def evaluate_retrievers(
    con_rw: duckdb.DuckDBPyConnection,
    retrievers: dict,
    dataset_id: str = "ifqa",
    splits=("S-dev", "S-test"),
    k: int = 100,
    corpus_id: str = "wiki",
) -> pd.DataFrame:
    """Run, store and score each retriever; one row per retriever × split."""
    frame = questions(con_rw, dataset_id, splits, corpus_id)
    if frame.empty:
        raise LookupError(f"no {dataset_id} questions in splits {list(splits)}: ingest {dataset_id} first")
    config = {"k": k, "splits": list(splits), "corpus_id": corpus_id, "corpus_hash": corpus_hash(con_rw, corpus_id)}
    has_gold = frame["gold"].map(len).to_numpy() > 0
    if not has_gold.all():
        log.warning(
            "%d of %d questions have no qrels in %s and are left out of the metrics",
            (~has_gold).sum(),
            len(frame),
            corpus_id,
        )
    table = []
    for name, retriever in retrievers.items():
        found, ranks, seconds = retrieve(retriever, frame, k)
        run = run_record(name, retriever, dataset_id, config, sum(seconds.values()))
        replace_runs(con_rw, [run], *run_rows(run["run_id"], frame, found, ranks))
        for split in dict.fromkeys(frame["split"]):
            chosen = [r for r, s, g in zip(ranks, frame["split"], has_gold) if s == split and g]
            table.append(
                {
                    "retriever": name,
                    "split": split,
                    **metrics_row(chosen, k),
                    "n": len(chosen),
                    "seconds": seconds[split],
                }
            )
        log.info("%s: %d questions in %.1f s, stored as %s", name, len(frame), run["seconds"], run["run_id"])
    return pd.DataFrame(table)
