"""Playground: what the Playground page asks of the backend — the engines that can answer (local models
and endpoints, each with why it cannot when it cannot), one question asked of one engine and stored as a
row of its live run (`backend.execution.live`), the passages a retriever finds for it, and the stored
live answers. The page places them; it holds no model or store code."""

from __future__ import annotations

import duckdb
import pandas as pd

from backend.actions import live as live_actions
from backend.analysis import retrieval
from backend.analysis.retrieval import GOLD_DEPTH
from backend.datasets import catalogue
from backend.execution import live
from backend.execution.live import MAX_CHARS, Answer, Callable, Engine, Query, StoreRef  # noqa: F401
from backend.execution.runs import LABELS
from backend.identity.actor import Actor
from backend.models.registry import ModelUnavailable  # noqa: F401
from backend.store import examples, passages, queries
from backend.store.sessions import DATA, LIVE, reads


def labels(task: str) -> list[str]:
    """The classes of a task's answers, in the order of their probabilities ([] for QA and writing)."""
    return LABELS.get(task, [])


@reads(DATA)
def readable(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the store is there and can be read (FileNotFoundError or StoreLocked otherwise)."""
    queries.loaded_datasets(con)
    return True


def ask(
    store: StoreRef,
    query: Query,
    retrievers: dict | None = None,
    save: bool = True,
    waiting: Callable[[int], None] | None = None,
    on_text: Callable[[str], None] | None = None,
    *,
    actor: Actor,
) -> Answer:
    """Answer one query as `actor` (from the cache when asked before) and store it as a live-run row."""
    return live_actions.ask(store, query, retrievers, save, waiting, on_text, actor=actor)


def engines(mode: str) -> list[Engine]:
    """What can be asked of a question (`mode` 'question') or a premise/hypothesis pair ('nli'), by model."""
    return live.engines(mode)


@reads(DATA, LIVE)
def history(con: duckdb.DuckDBPyConnection, limit: int = 50) -> pd.DataFrame:
    """The latest stored live queries, newest first: when, run, input, label, answer, latency."""
    return live.history(con, limit)


@reads(DATA)
def datasets_by_input(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """Loaded datasets by what their examples are: 'nli' (premise + hypothesis) or 'question' (the rest)."""
    return catalogue.by_input(con)


@reads(DATA)
def example_row(con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str) -> dict:
    """Every column of the example (lists as lists, `extra` parsed); KeyError naming what ids look like. The id may be
    pasted (backend.store.ids)."""
    return examples.example_row(con, dataset_id, example_id)


@reads(DATA)
def gold_doc_ids(
    con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str, corpus_id: str = "wiki"
) -> list[str]:
    """The question's gold passages (qrels) in the corpus, sorted."""
    return passages.gold_doc_ids(con, dataset_id, example_id, corpus_id)


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
