"""What the Retrieval page shows: retrievers side by side, Recall@K, error attribution
(backend.analysis.retrieval), and one example."""

from __future__ import annotations

import duckdb
import pandas as pd

from backend.analysis import retrieval
from backend.analysis.retrieval import (
    GOLD_DEPTH,  # noqa: F401 — the page's names
    KS,
)
from backend.store import examples, passages, queries
from backend.store.sessions import DATA, reads


def attribution_summary(frame: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """Per outcome (and per `by` group): n, share of the group's predictions and its 95% bootstrap interval; outcomes
    in the fixed order of `OUTCOMES`, absent ones omitted."""
    return retrieval.attribution_summary(frame, by)


@reads(DATA)
def datasets_with_gold(con: duckdb.DuckDBPyConnection, corpus_id: str = "wiki") -> list[str]:
    """Datasets whose questions have gold passages (qrels) in the corpus."""
    return passages.datasets_with_gold(con, corpus_id)


@reads(DATA)
def error_attribution(con, run_id: str, corpus_id: str = "wiki") -> pd.DataFrame:
    """One row per prediction of a retrieval-augmented QA run: example_id, split, answer_type, input, answer,
    gold_answers, em, f1, reader_k, gold_rank (rank of the first gold passage among the reader's: an int, or None)
    and outcome (see the module docstring)."""
    return retrieval.error_attribution(con, run_id, corpus_id)


@reads(DATA)
def gold_doc_ids(
    con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str, corpus_id: str = "wiki"
) -> list[str]:
    """The question's gold passages (qrels) in the corpus, sorted."""
    return passages.gold_doc_ids(con, dataset_id, example_id, corpus_id)


@reads(DATA)
def loaded_datasets(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per loaded dataset: title, source folder, when, licence, notes (a list), whether a user's, example
    count."""
    return queries.loaded_datasets(con)


@reads(DATA)
def qa_runs(con, dataset_id: str = "ifqa") -> pd.DataFrame:
    """Complete retrieval-augmented QA runs of the dataset: run_id, model_id, retriever_id, k, n."""
    return retrieval.qa_runs(con, dataset_id)


@reads(DATA)
def recall_curves(con, dataset_id: str = "ifqa", split: str | None = None, ks=KS) -> pd.DataFrame:
    """Recall@K (K ≤ each run's k) of every stored retrieval run, over its questions with qrels (optionally one split):
    retriever, k, recall, low, high, n."""
    return retrieval.recall_curves(con, dataset_id, split, ks)


def side_by_side(
    con,
    retrievers: dict,
    query: str,
    k: int = 10,
    gold: list[str] = (),
    depth: int = GOLD_DEPTH,
    corpus_id: str = "wiki",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(hits, gold ranks): each retriever's top k (retriever, rank, doc_id, title, text, score, gold) in dict order,
    and per retriever the rank of its first gold passage within the top `depth` (an int, or None) and whether one
    was found; one `search(query, depth)` per retriever."""
    return retrieval.side_by_side(con, retrievers, query, k, gold, depth, corpus_id)


@reads(DATA)
def example_row(con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str) -> dict:
    """Every column of the example (lists as lists, `extra` parsed); KeyError naming what ids look like. The id may be
    pasted (backend.store.ids)."""
    return examples.example_row(con, dataset_id, example_id)
