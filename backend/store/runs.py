"""Runs as the store keeps them: the one listing every page and command reads (`listing`), and a run's
status (`status`), computed here and nowhere else.

A run's `status` column is what its writer last set (`running`, `complete`, `interrupted`, `live`);
`status` adds how many predictions it holds. Whether a background job's process is still alive is
the job runner's business (`backend.execution.jobs.progress` reads `status` and the process table).
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

CLASSIFICATION_TASKS = ("nli", "detect")  # tasks whose runs predict labels (accuracy, confusion, bias)
LABELS = "CAST(r.config->'$.labels' AS VARCHAR[])"  # a run's classes, in the order of its probabilities
# A prediction that is an answer: no error, and (for a prompted run, which records how its response parsed) parsed
PARSED = "{p}error IS NULL AND coalesce({p}text->>'$.parse', 'ok') = 'ok'"
ORDERS = {  # name → ORDER BY clause (never user text)
    "id": "r.run_id",
    # classifiers first (baselines last among them), then QA, writing and retrieval runs
    "classifiers first": f"r.task NOT IN {CLASSIFICATION_TASKS}, r.source = 'baseline', r.run_id",
    "outputs first": "r.task NOT IN ('write', 'qa'), r.run_id",  # writing and QA runs first (the Rate page)
    "dataset": "r.dataset_id, r.run_id",
    "newest": "r.created_at DESC, r.run_id",
}
COLUMNS = [
    "run_id",
    "dataset_id",
    "task",
    "model_id",
    "model_revision",
    "retriever_id",
    "source",
    "seed",
    "status",
    "provenance",
    "created_at",
    "seconds",
    "labels",
    "training_data",
    "in_paper_tables",
    "k",
    "quality",
    "coverage",
    "file",
    "sha256",
    "notes",
    "predictions",
    "ok",
    "parsed",
]


TRAINING = ", r.config->>'$.split' AS predicted_split, r.config->'$.trained_on' AS trained_on"  # contamination


def listing(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str | None = None,
    *,
    status: tuple[str, ...] | None = ("complete",),
    tasks: tuple[str, ...] | None = None,
    sources: tuple[str, ...] | None = None,
    not_sources: tuple[str, ...] = (),
    retrieval_augmented: bool | None = None,
    with_predictions: bool = False,
    with_answers: bool = False,
    with_training: bool = False,
    order: str = "id",
) -> pd.DataFrame:
    """Runs with their status, labels and provenance (`COLUMNS`): `labels` is the run's class order ([] for
    runs without), `predictions` how many it stored and `ok` how many of those hold no error. Filters:
    the dataset, `status` (None: any), `tasks`, `sources` / `not_sources`, `retrieval_augmented` (a
    retriever id or not), `with_predictions` (at least one prediction), `with_answers` (at least one without an
    error); `order` one of `ORDERS`. `with_training` adds `predicted_split` and `trained_on` (the config's JSON or
    None), what `models.contamination.flags_of` reads."""
    if order not in ORDERS:
        raise ValueError(f"order {order!r}: allowed {', '.join(ORDERS)}")
    frame = con.execute(
        f"""
        WITH counts AS (SELECT run_id, count(*) AS predictions, count(*) FILTER (WHERE error IS NULL) AS ok,
                               count(*) FILTER (WHERE {PARSED.format(p="")}) AS parsed
                        FROM predictions GROUP BY run_id)
        SELECT r.run_id, r.dataset_id, r.task, r.model_id, r.model_revision, r.retriever_id, r.source, r.seed,
               r.status, r.provenance, r.created_at, r.seconds, {LABELS} AS labels,
               r.config->>'$.training_data' AS training_data,
               coalesce(CAST(r.config->>'$.in_paper_tables' AS BOOLEAN), FALSE) AS in_paper_tables,
               CAST(r.config->>'$.k' AS INTEGER) AS k, coalesce(r.config->>'$.quality', '') AS quality,
               r.config->>'$.coverage' AS coverage, r.config->>'$.file' AS file, r.config->>'$.sha256' AS sha256,
               r.config->>'$.notes' AS notes,
               coalesce(c.predictions, 0) AS predictions, coalesce(c.ok, 0) AS ok, coalesce(c.parsed, 0) AS parsed
               {TRAINING if with_training else ""}
        FROM runs r LEFT JOIN counts c USING (run_id)
        WHERE ($d IS NULL OR r.dataset_id = $d) AND ($status IS NULL OR list_contains($status, r.status))
          AND ($tasks IS NULL OR list_contains($tasks, r.task))
          AND ($sources IS NULL OR list_contains($sources, r.source)) AND NOT list_contains($not_sources, r.source)
          AND ($rag IS NULL OR (r.retriever_id IS NOT NULL) = $rag)
          AND (NOT $with_predictions OR coalesce(c.predictions, 0) > 0) AND (NOT $with_answers OR coalesce(c.ok, 0) > 0)
        ORDER BY {ORDERS[order]}
    """,
        {
            "d": dataset_id,
            "status": list(status) if status is not None else None,
            "tasks": list(tasks) if tasks is not None else None,
            "sources": list(sources) if sources is not None else None,
            "not_sources": list(not_sources),
            "rag": retrieval_augmented,
            "with_predictions": with_predictions,
            "with_answers": with_answers,
        },
    ).df()
    frame["labels"] = frame["labels"].map(lambda v: list(v) if isinstance(v, (list, np.ndarray)) else [])
    return frame


def status(con: duckdb.DuckDBPyConnection, run_id: str) -> dict | None:
    """The run's status, seconds, number of predictions and how many of them are parsed answers; None when there
    is no such run."""
    row = con.execute(
        f"""SELECT r.status, r.seconds, count(p.example_id), count(p.example_id) FILTER (WHERE {PARSED.format(p="p.")})
            FROM runs r LEFT JOIN predictions p USING (run_id) WHERE r.run_id = $r GROUP BY ALL""",
        {"r": run_id},
    ).fetchone()
    return None if row is None else {"status": row[0], "seconds": row[1], "predictions": row[2], "parsed": row[3]}


def labels(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    """The run's classes in the order of its probabilities ([] for runs without labels, or no such run)."""
    row = con.execute(f"SELECT {LABELS} FROM runs r WHERE r.run_id = $r", {"r": run_id}).fetchone()
    return list(row[0] or []) if row else []


def field(con: duckdb.DuckDBPyConnection, run_id: str, column: str):
    """One column of the run's row (`dataset_id`, `task`, `source`, …), or None when there is no such run."""
    if column not in {"dataset_id", "task", "source", "model_id", "retriever_id", "status"}:
        raise ValueError(f"column {column!r} is not a run field this reads")
    row = con.execute(f"SELECT {column} FROM runs WHERE run_id = $r", {"r": run_id}).fetchone()
    return row[0] if row else None
