"""The audit's SQL: append one entry (who, as what role, through what, did which action to which object, and
how it ended), and read the newest entries for the Activity page and `python -m backend audit`. There is no
UPDATE or DELETE of `audit` anywhere: the table is append-only."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import duckdb
import pandas as pd

from backend.store.writer import atomic

COLUMNS = ("happened_at", "actor", "role", "via", "action", "target", "outcome", "detail")


def append(con: duckdb.DuckDBPyConnection, entry: dict) -> None:
    """One entry, in its own transaction (area 'audit', so no cached page result is invalidated by it)."""
    row = {"entry_id": uuid.uuid4().hex, "happened_at": datetime.now(UTC).replace(tzinfo=None), **entry}
    with atomic(con, "audit"):
        con.execute(
            "INSERT INTO audit (entry_id, happened_at, actor, role, via, action, target, outcome, detail) "
            "VALUES ($entry_id, $happened_at, $actor, $role, $via, $action, $target, $outcome, $detail)",
            {"detail": None, **row},
        )


def entries(
    con: duckdb.DuckDBPyConnection, limit: int = 500, actor: str | None = None, outcome: str | None = None
) -> pd.DataFrame:
    """The newest entries first (all columns but the id), optionally of one actor or one outcome; a missing detail
    or target is '' (it read "nan" in the audit list)."""
    columns = ", ".join(f"coalesce({c}, '') AS {c}" if c in ("detail", "target") else c for c in COLUMNS)
    return con.execute(
        f"SELECT {columns} FROM audit WHERE ($a IS NULL OR actor = $a) AND ($o IS NULL OR outcome = $o) "
        "ORDER BY happened_at DESC LIMIT $n",
        {"a": actor, "o": outcome, "n": limit},
    ).df()


def count_since(con: duckdb.DuckDBPyConnection, action: str, outcome: str, since: datetime) -> int:
    """How many entries of this action and outcome were written since `since` (UTC)."""
    return con.execute(
        "SELECT count(*) FROM audit WHERE action = $a AND outcome = $o AND happened_at >= $t",
        {"a": action, "o": outcome, "t": since},
    ).fetchone()[0]


MADE = {  # kind of object → (table, key column): whose work it is, for 'delete or replace others' work'
    "run": ("runs", "run_id"),
    "dataset": ("datasets", "dataset_id"),
    "slice": ("saved_slices", "name"),
    "report item": ("report_items", "item_id"),
    "rating task": ("rating_tasks", "task_id"),
    "judge run": ("judge_runs", "judge_run_id"),
    "link": ("links", "link_id"),
    "study": ("studies", "study_id"),
}


def made_by(con: duckdb.DuckDBPyConnection, kind: str, key: str) -> str | None:
    """Who made the object (None: no such object, or made before anyone was recorded)."""
    table, column = MADE[kind]
    rows = con.execute(f"SELECT created_by FROM {table} WHERE {column} = $k", {"k": key}).fetchall()
    return rows[0][0] if rows else None
