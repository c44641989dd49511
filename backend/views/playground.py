"""Playground: what the Playground page asks of the backend — the engines that can answer (local models
and endpoints, each with why it cannot when it cannot), one question asked of one engine and stored as a
row of its live run (`backend.execution.live`), the passages a retriever finds for it, and the stored
live answers. The page places them; it holds no model or store code."""

from __future__ import annotations

import duckdb

from backend.datasets.catalogue import by_input as datasets_by_input  # noqa: F401 — the page's names
from backend.execution.live import MAX_CHARS, Answer, Engine, Query, ask, engines, history  # noqa: F401
from backend.execution.runs import LABELS
from backend.models.registry import ModelUnavailable  # noqa: F401
from backend.store.examples import example_row  # noqa: F401
from backend.store.passages import gold_doc_ids  # noqa: F401
from backend.store.queries import loaded_datasets  # noqa: F401
from backend.views.retrieval import side_by_side  # noqa: F401


def labels(task: str) -> list[str]:
    """The classes of a task's answers, in the order of their probabilities ([] for QA and writing)."""
    return LABELS.get(task, [])


def readable(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the store is there and can be read (FileNotFoundError or StoreLocked otherwise)."""
    loaded_datasets(con)
    return True
