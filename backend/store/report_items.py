"""The report as the store keeps it: pinned charts and tables in order (`backend.views.report` checks
what is pinned and exports it)."""

from __future__ import annotations

from datetime import datetime

import duckdb
import pandas as pd

from backend.store.writer import atomic, author


def append(
    con: duckdb.DuckDBPyConnection,
    item_id: str,
    kind: str,
    title: str,
    caption: str,
    content: str,
    page: str | None,
    at: datetime,
) -> None:
    """Add an item after the last one, in one transaction."""
    with atomic(con, "saved"):
        last = con.execute("SELECT coalesce(max(position), 0) FROM report_items").fetchone()[0]
        con.execute(
            "INSERT INTO report_items (item_id, position, kind, title, caption, content, page, pinned_at, created_by) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [item_id, last + 1, kind, title, caption, content, page, at, author()],
        )


def listing(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The items in order: item_id, kind, title, caption, content, page, pinned_at."""
    return con.execute(
        "SELECT item_id, kind, title, caption, content, page, pinned_at FROM report_items ORDER BY position, pinned_at"
    ).df()


def reorder(con: duckdb.DuckDBPyConnection, item_id: str, steps: int, missing: type[Exception]) -> None:
    """Move an item up (negative) or down (positive) by `steps` places; `missing(message)` if there is none."""
    with atomic(con, "saved"):
        order = [
            row[0] for row in con.execute("SELECT item_id FROM report_items ORDER BY position, pinned_at").fetchall()
        ]
        if item_id not in order:
            raise missing(f"item: no report item {item_id!r}")
        at = order.index(item_id)
        order.insert(max(0, min(len(order) - 1, at + steps)), order.pop(at))
        con.executemany(
            "UPDATE report_items SET position = ? WHERE item_id = ?",
            [(float(i + 1), item) for i, item in enumerate(order)],
        )


def remove(con: duckdb.DuckDBPyConnection, item_id: str) -> bool:
    """Delete the item; whether there was one."""
    with atomic(con, "saved"):
        return bool(con.execute("DELETE FROM report_items WHERE item_id = ? RETURNING item_id", [item_id]).fetchall())


def retitle(con: duckdb.DuckDBPyConnection, item_id: str, title: str) -> bool:
    """Give the item a new title; whether there was one."""
    with atomic(con, "saved"):
        return bool(
            con.execute(
                "UPDATE report_items SET title = ? WHERE item_id = ? RETURNING item_id", [title, item_id]
            ).fetchall()
        )
