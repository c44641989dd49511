"""Ratings as the store keeps them: users' scores of predictions (source 'user') and the crowd's judgements
that datasets ship (source 'crowd'). What a rating may be, and agreement, are `backend.analysis.ratings`'s."""

from __future__ import annotations

from datetime import datetime

import duckdb
import pandas as pd

UPSERT = """
    INSERT INTO ratings (dataset_id, example_id, run_id, rater_id, source, criterion, value, note, rated_at)
    VALUES ($d, $e, $r, $u, 'user', $c, $v, $note, $at)
    ON CONFLICT (dataset_id, example_id, run_id, rater_id, criterion)
    DO UPDATE SET value = excluded.value, note = excluded.note, rated_at = excluded.rated_at"""
DELETE = """
    DELETE FROM ratings WHERE dataset_id = $d AND example_id = $e AND run_id = $r AND rater_id = $u
      AND criterion = $c AND source = 'user'"""


def rated_examples(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """run id → how many of its examples carry a user rating."""
    return dict(
        con.execute("""SELECT run_id, count(DISTINCT example_id) FROM ratings
                               WHERE source = 'user' GROUP BY run_id""").fetchall()
    )


def targets(con: duckdb.DuckDBPyConnection, run_id: str, split: str | None = None) -> pd.DataFrame:
    """The run's error-free predictions with the example's gold data, by example id (a live run has no
    example rows: its input comes from the prediction's `text.input`); object columns."""
    cursor = con.execute(
        """
        SELECT p.example_id, e.split,
               coalesce(e.input, p.text->>'$.input.question', p.text->>'$.input.premise') AS input,
               e.context, coalesce(e.hypothesis, p.text->>'$.input.hypothesis') AS hypothesis,
               e.gold_label, e.gold_answers, e.gold_presuppositions, e.gold_corrections, p.label, p.answer,
               p.text->>'$.presupposition' AS presupposition, p.text->>'$.correction' AS correction,
               p.text->>'$.generation' AS generation
        FROM predictions p
        JOIN runs r ON r.run_id = p.run_id
        LEFT JOIN examples e ON e.dataset_id = r.dataset_id AND e.example_id = p.example_id
        WHERE p.run_id = $r AND p.error IS NULL AND (CAST($s AS VARCHAR) IS NULL OR e.split = $s)
        ORDER BY p.example_id
    """,
        {"r": run_id, "s": split},
    )
    return pd.DataFrame(cursor.fetchall(), columns=[c[0] for c in cursor.description], dtype=object)


def rater_rows(con: duckdb.DuckDBPyConnection, run_id: str, rater_id: str) -> list[tuple]:
    """(example_id, criterion, value) of one rater's user ratings on the run."""
    return con.execute(
        """SELECT example_id, criterion, value FROM ratings
                          WHERE run_id = $r AND rater_id = $u AND source = 'user' ORDER BY example_id, criterion""",
        {"r": run_id, "u": rater_id},
    ).fetchall()


def predicted(con: duckdb.DuckDBPyConnection, run_id: str, example_id: str) -> bool:
    """Whether the run holds an error-free prediction of the example."""
    return (
        con.execute(
            "SELECT 1 FROM predictions WHERE run_id = $r AND example_id = $e AND error IS NULL",
            {"r": run_id, "e": example_id},
        ).fetchone()
        is not None
    )


def numeric_bounds(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[float, float]]:
    """criterion → (min, max) of every numeric criterion."""
    return {
        c: (lo, hi)
        for c, lo, hi in con.execute(
            "SELECT criterion, min_value, max_value FROM criteria WHERE kind = 'numeric'"
        ).fetchall()
    }


def stored(con: duckdb.DuckDBPyConnection, key: dict) -> dict[str, float]:
    """criterion → value of one rater's user ratings of one prediction (`key`: d, e, r, u)."""
    return dict(
        con.execute(
            "SELECT criterion, value FROM ratings WHERE source = 'user' AND dataset_id = $d "
            "AND example_id = $e AND run_id = $r AND rater_id = $u",
            key,
        ).fetchall()
    )


def put(
    con: duckdb.DuckDBPyConnection, key: dict, criterion: str, value: float | None, note: str | None, at: datetime
) -> None:
    """Upsert one user rating (None deletes it); the caller holds the transaction."""
    if value is None:
        con.execute(DELETE, {**key, "c": criterion})
    else:
        con.execute(UPSERT, {**key, "c": criterion, "v": value, "note": note or None, "at": at})


def user_ratings(con: duckdb.DuckDBPyConnection, run_id: str | None = None) -> pd.DataFrame:
    """User ratings of one run (all runs when None), in a stable order."""
    return con.execute(
        """
        SELECT dataset_id, run_id, example_id, rater_id, criterion, value, note, rated_at FROM ratings
        WHERE source = 'user' AND (CAST($r AS VARCHAR) IS NULL OR run_id = $r)
        ORDER BY run_id, example_id, rater_id, criterion
    """,
        {"r": run_id},
    ).df()


def scored(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """The run's scored user ratings with each criterion's scale."""
    return con.execute(
        """
        SELECT g.criterion, g.example_id, g.rater_id, g.value, c.min_value, c.max_value
        FROM ratings g JOIN criteria c ON c.criterion = g.criterion
        WHERE g.run_id = $r AND g.source = 'user' AND g.value IS NOT NULL
        ORDER BY g.criterion, g.example_id, g.rater_id
    """,
        {"r": run_id},
    ).df()


def of_example(con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str) -> pd.DataFrame:
    """Every rating of one example (crowd and user), by source, criterion and rater."""
    return con.execute(
        """
        SELECT source, rater_id, criterion, value, label, note, run_id, rated_at FROM ratings
        WHERE dataset_id = $d AND example_id = $e ORDER BY source, criterion, rater_id""",
        {"d": dataset_id, "e": example_id},
    ).df()


def per_item(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pd.DataFrame:
    """Per run, example and criterion (not the crowd's): the mean value, how many raters, and the labels given."""
    return con.execute(
        """
        SELECT run_id, example_id, criterion, avg(value) AS value, count(*) AS raters,
               string_agg(DISTINCT label, '/') AS labels
        FROM ratings WHERE list_contains($runs, run_id) AND source <> 'crowd'
        GROUP BY ALL ORDER BY criterion""",
        {"runs": run_ids},
    ).df()
