"""Saved slices as the store keeps them: a name, a dataset, facet filters (JSON) and a search; and every
run's right / scored counts on one (`backend.analysis.saved_slices` checks names and scores the matrix)."""

from __future__ import annotations

import json
from datetime import datetime

import duckdb
import pandas as pd

from backend.store.examples import Filters, Slice, slice_sql
from backend.store.writer import atomic, author


def taken_by(con: duckdb.DuckDBPyConnection, name: str) -> str | None:
    """The dataset of the slice saved under `name`, or None when the name is free."""
    row = con.execute("SELECT dataset_id FROM saved_slices WHERE name = ?", [name]).fetchone()
    return row[0] if row else None


def put(
    con: duckdb.DuckDBPyConnection,
    name: str,
    dataset_id: str,
    filters: Filters,
    search: str,
    note: str | None,
    at: datetime,
    replace: bool,
    refuse: type[Exception],
) -> None:
    """Store the slice in one transaction; `refuse(message)` is raised when the name is taken and not `replace`."""
    with atomic(con, "saved"):
        taken = taken_by(con, name)
        if taken and not replace:
            raise refuse(
                f"name: a slice called {name!r} is saved already (on {taken}); choose another name or replace it"
            )
        con.execute("DELETE FROM saved_slices WHERE name = ?", [name])
        con.execute(
            "INSERT INTO saved_slices (name, dataset_id, filters, search, note, saved_at, created_by) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [name, dataset_id, json.dumps(filters), search or "", note, at, author()],
        )


def remove(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Delete the slice; whether there was one."""
    with atomic(con, "saved"):
        return bool(con.execute("DELETE FROM saved_slices WHERE name = ? RETURNING name", [name]).fetchall())


def rows(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every saved slice (filters as stored JSON), by name."""
    return con.execute("SELECT name, dataset_id, filters, search, note, saved_at FROM saved_slices ORDER BY name").df()


def one(con: duckdb.DuckDBPyConnection, name: str) -> tuple | None:
    """(dataset_id, filters JSON, search) of the slice, or None."""
    return con.execute("SELECT dataset_id, filters, search FROM saved_slices WHERE name = ?", [name]).fetchone()


def scores(con: duckdb.DuckDBPyConnection, where: Slice, run_ids: list[str]) -> tuple[int, pd.DataFrame]:
    """The slice's size, and per run among `run_ids`: n (its items with a gold label that the run predicted)
    and `right` (of those, predicted as the gold label), indexed by run id."""
    sql, params = slice_sql(where)
    scored = (
        con.execute(
            f"""
        WITH items AS ({sql.format(select="example_key, gold_label")})
        SELECT p.run_id, count(*) AS n, sum(CASE WHEN p.label = i.gold_label THEN 1 ELSE 0 END) AS right
        FROM items i JOIN predictions p ON p.example_key = i.example_key
        WHERE i.gold_label IS NOT NULL AND list_contains($runs, p.run_id)
        GROUP BY p.run_id""",
            {**params, "runs": run_ids},
        )
        .df()
        .set_index("run_id")
    )
    return int(con.execute(sql.format(select="count(*)"), params).fetchone()[0]), scored
