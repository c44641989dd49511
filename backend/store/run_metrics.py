"""The caches of what is scored from the predictions: each run's headline rows (`run_metrics`), keyed by a
fingerprint of what those rows depend on, and the predictions they are scored from (`backend.analysis.leaderboard`
scores them); and each dataset's verdicts against its trivial baselines (`dataset_verdicts`), keyed by the data
version they were computed from (`backend.analysis.verdicts`)."""

from __future__ import annotations

import io

import duckdb
import pandas as pd

from backend.store.runs import LABELS
from backend.store.writer import atomic


def scored_predictions(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pd.DataFrame:
    """Every prediction of the complete runs among `run_ids` with its example's split and gold data, in one
    item order (the bootstrap intervals do not depend on storage order)."""
    return con.execute(
        f"""
        SELECT r.dataset_id, r.run_id, r.model_id, r.source, r.task, {LABELS} AS labels,
               p.example_id, e.split, e.gold_label, e.gold_answers, e.gold_presuppositions,
               e.gold_corrections, p.label, p.answer, p.text,
               p.text->>'$.parse' AS parse,
               CAST(p.text->>'$.cost' AS DOUBLE) AS cost
        FROM runs r JOIN predictions p USING (run_id)
        JOIN examples e ON e.dataset_id = r.dataset_id AND e.example_id = p.example_id
        WHERE r.status = 'complete' AND list_contains($runs, r.run_id)
        ORDER BY r.run_id, p.example_id
    """,
        {"runs": run_ids},
    ).df()


def fingerprints(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """run id → what its headline rows depend on (its predictions, its dataset's description, its config,
    source and model), for every complete run with predictions."""
    return dict(
        con.execute("""
        WITH counts AS (SELECT run_id, count(*) AS n, sum(hash(example_id, label, answer, text)) AS h
                        FROM predictions GROUP BY run_id)
        SELECT r.run_id, concat_ws(':', c.n, c.h, md5(coalesce(CAST(d.description AS VARCHAR), '')),
                                   md5(CAST(r.config AS VARCHAR)), r.source, r.model_id)
        FROM runs r JOIN counts c USING (run_id) LEFT JOIN datasets d ON d.dataset_id = r.dataset_id
        WHERE r.status = 'complete'""").fetchall()
    )


def cached(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, str]]:
    """run id → (fingerprint, rows as JSON) of every cached run."""
    return {
        run: (fingerprint, rows)
        for run, fingerprint, rows in con.execute("SELECT run_id, fingerprint, rows FROM run_metrics").fetchall()
    }


def replace(con: duckdb.DuckDBPyConnection, rows: dict[str, str], fingerprints_: dict[str, str]) -> None:
    """Keep only runs in `fingerprints_`, and store `rows` (run id → JSON) under their fingerprints."""
    with atomic(con, "cache"):
        con.execute(
            "DELETE FROM run_metrics WHERE NOT list_contains($keep, run_id) OR list_contains($new, run_id)",
            {"keep": list(fingerprints_), "new": list(rows)},
        )
        if rows:
            con.executemany(
                "INSERT INTO run_metrics VALUES (?, ?, ?, now())",
                [(run, fingerprints_[run], found) for run, found in rows.items()],
            )


DATA_VERSION = "(SELECT coalesce(max(value), '0') FROM meta WHERE key = 'version:data')"


def current_verdicts(
    con: duckdb.DuckDBPyConnection, dataset_id: str, method: str = ""
) -> tuple[pd.DataFrame | None, str]:
    """(the dataset's cached verdicts if they were computed by `method` from the data as it is now, else None;
    `method` + the data version now, the key to keep new ones under), in one query."""
    row = con.execute(
        f"""SELECT $m || {DATA_VERSION}, (SELECT frame FROM dataset_verdicts
                                           WHERE dataset_id = $d AND data_version = $m || {DATA_VERSION})""",
        {"d": dataset_id, "m": method},
    ).fetchone()
    version, frame = row
    return (pd.read_parquet(io.BytesIO(frame)) if frame is not None else None), version


def keep_verdicts(con: duckdb.DuckDBPyConnection, dataset_id: str, version: str, frame: pd.DataFrame) -> None:
    """Cache the dataset's verdicts as computed from data version `version` (Parquet keeps every dtype)."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    with atomic(con, "cache"):
        con.execute(
            "INSERT OR REPLACE INTO dataset_verdicts VALUES ($d, $v, $f, now())",
            {"d": dataset_id, "v": version, "f": buffer.getvalue()},
        )
