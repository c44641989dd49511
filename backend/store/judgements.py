"""Judge runs and their judgements as the store keeps them (schema.sql: judge_runs, judgements).

A judge run scores the stored outputs of another run; its rows are written per chunk in one
transaction each, counted in the 'ratings' area (the Rate page's caches see them), and a resumed run
skips the (example, criterion, sample, position) it already judged without an error.
"""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import pandas as pd

from backend.store.writer import arrow_table, atomic, transaction


def start(con: duckdb.DuckDBPyConnection, row: dict) -> set[tuple]:
    """Create the judge run as 'running' (or re-open it to resume); returns the keys already judged
    (example_id, criterion, sample, position) without an error."""
    found = con.execute("SELECT rubric_sha256 FROM judge_runs WHERE judge_run_id = $j", {"j": row["judge_run_id"]})
    existing = found.fetchall()
    if existing and existing[0][0] != row["rubric_sha256"]:
        raise ValueError(
            f"judge run {row['judge_run_id']} was made with another text of rubric {row['rubric']}: bump the "
            "template's version (a new judge run) rather than resume this one with other prompts"
        )
    if not existing:
        now = datetime.now(UTC).replace(tzinfo=None)
        table = arrow_table(con, "judge_runs", [{"created_at": now, **row, "status": "running"}])
        transaction(con, [], {"judge_runs": table}, area="ratings")
    else:
        with atomic(con, area="ratings"):
            con.execute("UPDATE judge_runs SET status = 'running' WHERE judge_run_id = $j", {"j": row["judge_run_id"]})
    done = con.execute(
        "SELECT example_id, criterion, sample, position FROM judgements WHERE judge_run_id = $j AND error IS NULL",
        {"j": row["judge_run_id"]},
    ).fetchall()
    return set(done)


def append(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Add a chunk of judgements in one transaction; a key judged before (with an error) is replaced."""
    if not rows:
        return
    keys = [[r["judge_run_id"], r["example_id"], r["criterion"], str(r["sample"]), r["position"]] for r in rows]
    deletes = [
        (
            "DELETE FROM judgements WHERE list_contains($k, "
            "[judge_run_id, example_id, criterion, CAST(sample AS VARCHAR), position])",
            {"k": keys},
        )
    ]
    transaction(con, deletes, {"judgements": arrow_table(con, "judgements", rows)}, area="ratings")


def replace(con: duckdb.DuckDBPyConnection, row: dict, rows: list[dict]) -> None:
    """Write a complete scorer run and its judgements in one transaction, replacing an earlier one of that id."""
    now = datetime.now(UTC).replace(tzinfo=None)
    deletes = [
        (f"DELETE FROM {t} WHERE judge_run_id = $j", {"j": row["judge_run_id"]}) for t in ("judgements", "judge_runs")
    ]
    tables = {"judge_runs": arrow_table(con, "judge_runs", [{"created_at": now, **row, "status": "complete"}])}
    if rows:
        tables["judgements"] = arrow_table(con, "judgements", rows)
    transaction(con, deletes, tables, area="ratings")


def finish(con: duckdb.DuckDBPyConnection, judge_run_id: str, status: str, seconds: float) -> None:
    with atomic(con, area="ratings"):
        con.execute(
            "UPDATE judge_runs SET status = $s, seconds = coalesce(seconds, 0) + $t WHERE judge_run_id = $j",
            {"s": status, "t": seconds, "j": judge_run_id},
        )


def of_run(con: duckdb.DuckDBPyConnection, run_id: str | None = None) -> pd.DataFrame:
    """The judge runs of a judged run (every judge run when None), newest first, with their counts:
    judgements, parsed, unparsed (no score read from the response), errors, cost and tokens."""
    return con.execute(
        """
        SELECT j.judge_run_id, j.run_id, j.other_run_id, j.dataset_id, j.model_id, j.rubric, j.kind, j.source,
               j.samples, j.status, j.created_at, j.seconds, j.config->>'$.quality' AS quality,
               count(g.example_id) AS judgements, count(DISTINCT g.example_id) AS items,
               count(*) FILTER (WHERE g.parse = 'ok') AS parsed,
               count(*) FILTER (WHERE g.parse NOT IN ('ok', 'error')) AS unparsed,
               count(*) FILTER (WHERE g.parse = 'error') AS errors,
               coalesce(sum(g.cost), 0) AS cost, coalesce(sum(g.tokens_in), 0) AS tokens_in,
               coalesce(sum(g.tokens_out), 0) AS tokens_out
        FROM judge_runs j LEFT JOIN judgements g USING (judge_run_id)
        WHERE CAST($r AS VARCHAR) IS NULL OR j.run_id = $r OR j.other_run_id = $r
        GROUP BY ALL ORDER BY j.created_at DESC, j.judge_run_id
    """,
        {"r": run_id},
    ).df()


def progress(con: duckdb.DuckDBPyConnection, judge_run_id: str) -> dict | None:
    """A judge run's status and its responses so far: judgements, parsed, errors, cost; None before it is stored."""
    row = con.execute(
        """
        SELECT j.status, count(g.example_id) AS judgements, count(*) FILTER (WHERE g.parse = 'ok') AS parsed,
               count(*) FILTER (WHERE g.parse = 'error') AS errors, coalesce(sum(g.cost), 0) AS cost
        FROM judge_runs j LEFT JOIN judgements g USING (judge_run_id)
        WHERE j.judge_run_id = $j GROUP BY j.status
    """,
        {"j": judge_run_id},
    ).fetchone()
    if row is None:
        return None
    return {"status": row[0], "judgements": int(row[1]), "parsed": int(row[2]), "errors": int(row[3]), "cost": row[4]}


def of_judge_run(con: duckdb.DuckDBPyConnection, judge_run_id: str) -> dict:
    """The judge run's row; KeyError naming it when there is none."""
    cursor = con.execute("SELECT * FROM judge_runs WHERE judge_run_id = $j", {"j": judge_run_id})
    rows = cursor.fetchall()
    if not rows:
        raise KeyError(f"no judge run {judge_run_id!r}; `python -m backend judges --run RUN` lists a run's judges")
    return dict(zip([c[0] for c in cursor.description], rows[0]))


def scores(con: duckdb.DuckDBPyConnection, judge_run_id: str) -> pd.DataFrame:
    """Every judgement of a judge run with its criterion's scale, in a stable order."""
    return con.execute(
        """
        SELECT g.example_id, g.criterion, g.sample, g.position, g.value, g.verdict, g.parse, g.reason, g.response,
               g.error, c.min_value, c.max_value
        FROM judgements g LEFT JOIN criteria c USING (criterion)
        WHERE g.judge_run_id = $j ORDER BY g.criterion, g.example_id, g.sample, g.position
    """,
        {"j": judge_run_id},
    ).df()


def judged_criteria(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    """The criteria some judge scored on the run (so people can rate them beside it)."""
    rows = con.execute(
        """SELECT DISTINCT g.criterion FROM judgements g JOIN judge_runs j USING (judge_run_id)
           WHERE j.run_id = $r AND j.kind = 'score' ORDER BY 1""",
        {"r": run_id},
    ).fetchall()
    return [r[0] for r in rows]


def of_example(con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str) -> pd.DataFrame:
    """Every judgement of one example, by judge run (its judged run and source), criterion and sample."""
    return con.execute(
        """
        SELECT j.run_id, j.source, g.criterion, g.sample, g.position, g.value, g.verdict, g.parse, g.reason
        FROM judgements g JOIN judge_runs j USING (judge_run_id)
        WHERE j.dataset_id = $d AND g.example_id = $e ORDER BY j.run_id, j.source, g.criterion, g.sample""",
        {"d": dataset_id, "e": example_id},
    ).df()
