"""Read-only query functions over the store; each returns a pandas DataFrame. Pages call these."""
from __future__ import annotations

import json

import duckdb
import pandas as pd

from backend.datasets import DATASETS


def loaded_datasets(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per loaded dataset: title, source folder, when, licence, notes (a list), example count."""
    frame = con.execute("""
        SELECT d.dataset_id, d.title, d.source, d.loaded_at, d.license, d.citation, d.notes,
               count(e.example_id) AS examples
        FROM datasets d LEFT JOIN examples e USING (dataset_id)
        GROUP BY ALL ORDER BY d.dataset_id
    """).df()
    frame["notes"] = frame["notes"].map(lambda n: json.loads(n) if n else [])
    return frame


def split_label_counts(con: duckdb.DuckDBPyConnection, dataset_id: str | None = None) -> pd.DataFrame:
    """Examples per dataset, split and gold label (label NULL shown as '—')."""
    return con.execute("""
        SELECT dataset_id, split, coalesce(gold_label, '—') AS gold_label, count(*) AS n
        FROM examples WHERE $d IS NULL OR dataset_id = $d
        GROUP BY ALL ORDER BY ALL
    """, {"d": dataset_id}).df()


def table_counts(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Per dataset: pairs, crowd ratings, imported runs, predictions, passages, qrels."""
    return con.execute("""
        SELECT d.dataset_id,
            (SELECT count(*) FROM pairs p WHERE p.dataset_id = d.dataset_id) AS pairs,
            (SELECT count(*) FROM ratings r WHERE r.dataset_id = d.dataset_id) AS ratings,
            (SELECT count(*) FROM runs r WHERE r.dataset_id = d.dataset_id) AS runs,
            (SELECT count(*) FROM predictions p JOIN runs r USING (run_id) WHERE r.dataset_id = d.dataset_id) AS predictions,
            (SELECT count(*) FROM passages p WHERE p.dataset_id = d.dataset_id) AS passages,
            (SELECT count(*) FROM qrels q WHERE q.dataset_id = d.dataset_id) AS qrels
        FROM datasets d ORDER BY d.dataset_id
    """).df()


def pair_counts(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return con.execute("SELECT dataset_id, kind, count(*) AS n FROM pairs GROUP BY ALL ORDER BY ALL").df()


def missing_datasets(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Known datasets that are not in the store, with how to add each."""
    loaded = {row[0] for row in con.execute("SELECT dataset_id FROM datasets").fetchall()}
    rows = [{"dataset_id": s.name, "title": s.title, "how_to_add": s.how_to_add}
            for s in DATASETS.values() if s.name not in loaded]
    return pd.DataFrame(rows, columns=["dataset_id", "title", "how_to_add"])
