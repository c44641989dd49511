"""Rating tasks as the store keeps them (schema.sql: rating_tasks, rating_task_items, rating_claims).

An item is *done* by a rater when they have rated every criterion of the task on it, and *complete*
when `overlap` raters have done it. `claim` serves a rater the next item in one serialised
transaction: their own open claim first (a page reload shows the same item), else the first item
(most ratings first, so overlap is reached early, then the task's shuffled order) that they have not
done and whose done raters plus others' open claims are still short of the overlap.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb
import pandas as pd

from backend.store.writer import arrow_table, atomic, transaction

LEASE = timedelta(minutes=30)  # an unanswered claim lapses after this, and the item is served to others

DONE = """
    SELECT i.example_id, g.rater_id
    FROM rating_task_items i JOIN rating_tasks t USING (task_id)
    JOIN ratings g ON g.run_id = t.run_id AND g.example_id = i.example_id AND g.source = 'user'
      AND list_contains(t.criteria, g.criterion) AND g.value IS NOT NULL
    WHERE i.task_id = $t
    GROUP BY ALL HAVING count(DISTINCT g.criterion) = any_value(len(t.criteria))"""


def create(con: duckdb.DuckDBPyConnection, task: dict, example_ids: list[str]) -> None:
    """Store a new task and its items (in serving order) in one transaction."""
    now = datetime.now(UTC).replace(tzinfo=None)
    items = [{"task_id": task["task_id"], "example_id": e, "position": i} for i, e in enumerate(example_ids)]
    tables = {
        "rating_tasks": arrow_table(con, "rating_tasks", [{**task, "created_at": now}]),
        "rating_task_items": arrow_table(con, "rating_task_items", items),
    }
    transaction(con, [], tables, area="ratings")


def task(con: duckdb.DuckDBPyConnection, task_id: str) -> dict | None:
    cursor = con.execute("SELECT * FROM rating_tasks WHERE task_id = $t", {"t": task_id})
    rows = cursor.fetchall()
    return dict(zip([c[0] for c in cursor.description], rows[0])) if rows else None


def has_item(con: duckdb.DuckDBPyConnection, task_id: str, example_id: str) -> bool:
    return bool(
        con.execute(
            "SELECT 1 FROM rating_task_items WHERE task_id = $t AND example_id = $e", {"t": task_id, "e": example_id}
        ).fetchall()
    )


def of_run(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """The run's rating tasks, newest first, with their item counts and how many are complete."""
    return listing(con, run_id).drop(columns=["run_id", "created_by", "overlapping"])


def listing(con: duckdb.DuckDBPyConnection, run_id: str | None = None) -> pd.DataFrame:
    """Every rating task (of one run, when given), whatever the run's source, newest first: its run, criteria,
    overlap, guideline, who made it and when, items, how many are complete (k raters) and how many have two or
    more raters."""
    tasks = con.execute(
        "SELECT task_id, run_id, criteria, overlap, guideline, created_by, created_at FROM rating_tasks "
        "WHERE $r IS NULL OR run_id = $r ORDER BY created_at DESC, task_id",
        {"r": run_id},
    ).df()
    counts = [rated_items(con, t) for t in tasks["task_id"]]
    return tasks.assign(
        items=[len(c) for c in counts],
        complete=[int((c["raters"] >= k).sum()) for c, k in zip(counts, tasks["overlap"])],
        overlapping=[int((c["raters"] >= 2).sum()) for c in counts],
    )


def run_ids(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The runs that rating tasks hand out, in id order."""
    return [r[0] for r in con.execute("SELECT DISTINCT run_id FROM rating_tasks ORDER BY run_id").fetchall()]


def progress(con: duckdb.DuckDBPyConnection, task_id: str) -> pd.DataFrame:
    """Items each rater has done on the task."""
    return con.execute(
        f"SELECT rater_id, count(*) AS done FROM ({DONE}) GROUP BY ALL ORDER BY done DESC, rater_id", {"t": task_id}
    ).df()


def rated_items(con: duckdb.DuckDBPyConnection, task_id: str) -> pd.DataFrame:
    """Per item of the task: how many raters have done it."""
    return con.execute(
        f"""SELECT i.example_id, i.position, count(d.rater_id) AS raters
            FROM rating_task_items i LEFT JOIN ({DONE}) d USING (example_id)
            WHERE i.task_id = $t GROUP BY ALL ORDER BY i.position""",
        {"t": task_id},
    ).df()


NEXT = f"""
    WITH done AS ({DONE}),
    counts AS (
        SELECT i.example_id, i.position,
               (SELECT count(*) FROM done d WHERE d.example_id = i.example_id) AS raters,
               (SELECT count(*) FROM rating_claims c WHERE c.task_id = $t AND c.example_id = i.example_id
                  AND c.rater_id <> $u AND c.claimed_at >= $since
                  AND NOT EXISTS (SELECT 1 FROM done d WHERE d.example_id = c.example_id
                                  AND d.rater_id = c.rater_id)) AS claimed,
               EXISTS (SELECT 1 FROM rating_claims c WHERE c.task_id = $t AND c.example_id = i.example_id
                       AND c.rater_id = $u AND c.claimed_at >= $since) AS mine
        FROM rating_task_items i
        WHERE i.task_id = $t AND NOT EXISTS (SELECT 1 FROM done d WHERE d.example_id = i.example_id
                                             AND d.rater_id = $u))
    SELECT example_id, mine FROM counts, rating_tasks t
    WHERE t.task_id = $t AND raters < t.overlap AND (mine OR raters + claimed < t.overlap)
    ORDER BY mine DESC, raters DESC, position LIMIT 1"""


def claim(con: duckdb.DuckDBPyConnection, task_id: str, rater_id: str) -> str | None:
    """The next item for the rater (its example id), claimed for them; None when nothing is left for them.
    The rater's own open claim is returned without a write (a page rerun does not bump the store)."""
    now = datetime.now(UTC).replace(tzinfo=None)
    params = {"t": task_id, "u": rater_id, "since": now - LEASE}
    found = con.execute(NEXT, params).fetchall()
    if not found or found[0][1]:
        return found[0][0] if found else None
    with atomic(con, area="ratings"):  # chosen again inside the serialised transaction: no one else took it
        found = con.execute(NEXT, params).fetchall()
        if not found:
            return None
        con.execute(
            """INSERT INTO rating_claims VALUES ($t, $e, $u, $now)
               ON CONFLICT DO UPDATE SET claimed_at = excluded.claimed_at""",
            {"t": task_id, "e": found[0][0], "u": rater_id, "now": now},
        )
    return found[0][0]
