"""Writing a loader's bundle: replace one dataset's ingested rows in a single transaction.

Only rows the ingest owns are replaced (examples, pairs, qrels, passages of the corpus, imported
runs and their predictions, crowd ratings). Batch, live and baseline runs and user ratings stay.
If anything fails, the transaction rolls back and the store is exactly as it was.
"""

from __future__ import annotations

import getpass
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from backend.store.bundle import Bundle

ARROW_TYPES = {
    "VARCHAR": pa.string(),
    "JSON": pa.string(),
    "BOOLEAN": pa.bool_(),
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "DOUBLE": pa.float64(),
    "TIMESTAMP": pa.timestamp("us"),
    "VARCHAR[]": pa.list_(pa.string()),
    "DOUBLE[]": pa.list_(pa.float64()),
}

# Examples and predictions carry example_keys.example_key (see schema.sql), filled here on insert:
# ids seen for the first time get the next keys, then every row is given its key.
KEYED = {  # table → (its rows' (dataset_id, example_id) pairs, the insert that adds the key)
    "examples": (
        "SELECT DISTINCT dataset_id, example_id FROM incoming",
        "SELECT i.* EXCLUDE (example_key), k.example_key FROM incoming i "
        "LEFT JOIN example_keys k ON k.dataset_id = i.dataset_id AND k.example_id = i.example_id",
    ),
    "predictions": (
        "SELECT DISTINCT r.dataset_id, i.example_id FROM incoming i JOIN runs r USING (run_id)",
        "SELECT i.* EXCLUDE (example_key), k.example_key FROM incoming i LEFT JOIN runs r USING (run_id) "
        "LEFT JOIN example_keys k ON k.dataset_id = r.dataset_id AND k.example_id = i.example_id",
    ),
}
NEW_KEYS = """INSERT INTO example_keys
    SELECT n.dataset_id, n.example_id, (SELECT coalesce(max(example_key), 0) FROM example_keys) + row_number() OVER ()
    FROM ({ids}) n ANTI JOIN example_keys k ON k.dataset_id = n.dataset_id AND k.example_id = n.example_id"""

DELETE_OWNED = [
    "DELETE FROM predictions WHERE run_id IN (SELECT run_id FROM runs WHERE dataset_id = $d AND source = 'import')",
    "DELETE FROM runs WHERE dataset_id = $d AND source = 'import'",
    "DELETE FROM examples WHERE dataset_id = $d",
    "DELETE FROM pairs WHERE dataset_id = $d",
    "DELETE FROM qrels WHERE dataset_id = $d",
    "DELETE FROM ratings WHERE dataset_id = $d AND source = 'crowd'",
    "DELETE FROM passages WHERE dataset_id = $d",
    "DELETE FROM datasets WHERE dataset_id = $d",
]


# Who makes the writes of this thread (a dashboard session is a thread): identity.permissions.acting sets it for
# the write it allows; a job the dashboard started writes as whoever started it ($PLAB_ACTING_AS, set by
# execution.jobs); a terminal command or notebook that sets neither writes as the local user.
AUTHOR: ContextVar[str | None] = ContextVar("AUTHOR", default=None)
ACTING_AS = "PLAB_ACTING_AS"
ATTRIBUTED = (
    "datasets",
    "runs",
    "saved_slices",
    "report_items",
    "judge_runs",
    "rating_tasks",
    "studies",
)  # have created_by


def author() -> str:
    """Who the current write is by: the acting identity, else the local user's name."""
    found = AUTHOR.get() or os.environ.get(ACTING_AS)
    if found:
        return found
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name for this uid (some containers)
        return "local"


def arrow_table(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict]) -> pa.Table:
    """Rows as an Arrow table typed like the store table (JSON serialised); unknown keys are dropped. Rows of an
    ATTRIBUTED table without `created_by` are stamped with `author()`."""
    if table in ATTRIBUTED:
        by = author()
        rows = [row if row.get("created_by") else {**row, "created_by": by} for row in rows]
    present = {key for row in rows for key in row}
    columns = [c for c in con.execute(f"DESCRIBE {table}").fetchall() if c[0] in present]  # absent → DEFAULT
    fields = [pa.field(name, ARROW_TYPES[kind]) for name, kind, *_ in columns]
    json_cols = {name for name, kind, *_ in columns if kind == "JSON"}
    names = [f.name for f in fields]
    prepared = [
        {k: (json.dumps(v) if k in json_cols and v is not None else v) for k, v in row.items() if k in names}
        for row in rows
    ]
    return pa.Table.from_pylist(prepared, schema=pa.schema(fields))


def replace_dataset(
    con: duckdb.DuckDBPyConnection,
    bundle: Bundle,
    also_sources: tuple[str, ...] = (),
    more: list[tuple[str, dict]] = (),
) -> None:
    """Replace everything the ingest owns for `bundle.dataset['dataset_id']` (and its runs of `also_sources`),
    atomically; `more`: statements run in the same transaction after it (a study's own row)."""
    dataset_id = bundle.dataset["dataset_id"]
    now = datetime.now(UTC).replace(tzinfo=None)
    tables = {"datasets": [{**bundle.dataset, "loaded_at": now, "notes": bundle.notes}]}
    for name in bundle.TABLES:
        defaults = {"dataset_id": dataset_id} if name != "predictions" else {}
        if name == "runs":
            defaults["created_at"] = now
        rows = getattr(bundle, name)
        if isinstance(rows, pd.DataFrame):  # a user dataset's examples: typed column by column, not row by row
            tables[name] = typed_table(con, name, rows.assign(**defaults))
        else:
            tables[name] = [{**defaults, **row} for row in rows]
    arrow = {
        name: rows if isinstance(rows, pa.Table) else arrow_table(con, name, rows)
        for name, rows in tables.items()
        if len(rows)
    }
    extra = [
        (
            f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM runs WHERE dataset_id = $d AND "
            f"list_contains($s, source))",
            {"d": dataset_id, "s": list(also_sources)},
        )
        for table in ("retrievals", "predictions")
    ] + [
        (
            "DELETE FROM runs WHERE dataset_id = $d AND list_contains($s, source)",
            {"d": dataset_id, "s": list(also_sources)},
        )
    ]
    with atomic(con):
        _apply(
            con, (extra if also_sources else []) + [(statement, {"d": dataset_id}) for statement in DELETE_OWNED], arrow
        )
        for statement, params in more:
            con.execute(statement, params)


def typed_table(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame) -> pa.Table:
    """A DataFrame as Arrow typed like the store table (JSON columns must hold JSON text; NaN is NULL)."""
    columns = [c for c in con.execute(f"DESCRIBE {table}").fetchall() if c[0] in frame.columns]
    return pa.table(
        {
            name: pa.array(frame[name].to_numpy(dtype=object), ARROW_TYPES[kind], from_pandas=True)
            for name, kind, *_ in columns
        }
    )


def prediction_table(
    run_id: str, example_ids, labels=None, probs: np.ndarray | None = None, answers=None, texts=None
) -> pa.Table:
    """Predictions of one run as Arrow, built from arrays (probabilities: a rows × classes matrix), so
    millions of rows never become Python dicts. `texts` are JSON strings."""
    n = len(example_ids)
    columns = {
        "run_id": pa.array([run_id] * n, pa.string()),
        "example_id": pa.array(np.asarray(example_ids, dtype=object), pa.string()),
    }
    for name, values in (("label", labels), ("answer", answers), ("text", texts)):
        if values is not None:
            columns[name] = pa.array(np.asarray(values, dtype=object), pa.string(), from_pandas=True)
    if probs is not None:
        width = probs.shape[1]
        offsets = pa.array(np.arange(0, n * width + 1, width, dtype=np.int32))
        columns["probs"] = pa.ListArray.from_arrays(offsets, pa.array(np.ascontiguousarray(probs, dtype=float).ravel()))
    return pa.table(columns)


def replace_runs(
    con: duckdb.DuckDBPyConnection, runs: list[dict], predictions: list[dict] | pa.Table, retrievals: list[dict] = ()
) -> None:
    """Insert runs with their predictions (rows, or Arrow from `prediction_table`) and retrieved passages,
    replacing earlier runs with the same ids, atomically."""
    now = datetime.now(UTC).replace(tzinfo=None)
    runs = [{"created_at": now, "status": "complete", **run} for run in runs]
    rows = {"runs": runs, "predictions": predictions, "retrievals": list(retrievals)}
    tables = {
        name: batch if isinstance(batch, pa.Table) else arrow_table(con, name, batch)
        for name, batch in rows.items()
        if len(batch)
    }
    ids = [run["run_id"] for run in runs]
    deletes = [
        (f"DELETE FROM {name} WHERE list_contains($ids, run_id)", {"ids": ids})
        for name in ("retrievals", "predictions", "runs")
    ]
    transaction(con, deletes, tables)


def replace_run_table(
    con: duckdb.DuckDBPyConnection, run: dict | None, predictions: pa.Table | None, delete: str | None = None
) -> None:
    """Write one run and its predictions (already Arrow: fast for millions of rows), replacing any run
    with the same id; or, with only `delete`, remove that run. One transaction either way."""
    run_id = run["run_id"] if run else delete
    deletes = [
        (f"DELETE FROM {name} WHERE run_id = $r", {"r": run_id}) for name in ("retrievals", "predictions", "runs")
    ]
    inserts = {"runs": arrow_table(con, "runs", [run]), "predictions": predictions} if run else {}
    transaction(con, deletes, inserts)


# Every write of this process takes WRITE_LOCK: DuckDB's transactions are optimistic, so two threads
# (two browser tabs) writing the same rows at once get "Conflict on update!" or a duplicate-key error
# and one write is lost. Serialised, each write sees the other's result. (Between processes the store's
# file lock, backend.store.access, already serialises everything.)
WRITE_LOCK = threading.RLock()
_WRITES = [0]  # this process's committed writes: a page's rerun reads the versions again after one


def writes() -> int:
    """How many writes this process has committed (any area)."""
    return _WRITES[0]


# Each write bumps the version of what it changed, in the same transaction: `data` (datasets, runs,
# predictions: ingest, imports, batch runs), `ratings` (user ratings), `live` (live answers), `saved`
# (saved slices, report items). Caches of
# query results key on the versions they depend on (ui/resources.py), so a live answer stored every
# second does not throw away every cached Explore slice; the counters live in the store, so writes
# from other processes count too.
AREAS = ("data", "ratings", "live", "saved", "audit")  # saved: saved slices and the report; audit: audit and links
# One UPDATE for every area a transaction wrote (an upsert per area cost about 4.5 ms each inside an answer's
# transaction, an UPDATE about 1 ms); an area's first write adds its counter at 1.
BUMP = "UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS VARCHAR) WHERE list_contains($k, key)"
FIRST_VERSIONS = (
    "INSERT INTO meta SELECT k, '1' FROM unnest($k::VARCHAR[]) AS t(k) WHERE k NOT IN (SELECT key FROM meta)"
)


def versions(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """area → how many writes it has seen ('0' before the first)."""
    found = dict(con.execute("SELECT key, value FROM meta WHERE key LIKE 'version:%'").fetchall())
    return {area: found.get(f"version:{area}", "0") for area in AREAS}


_OPEN: ContextVar[duckdb.DuckDBPyConnection | None] = ContextVar("open_transaction", default=None)
_BUMPED: ContextVar[set[str]] = ContextVar("areas_written")  # the areas the open transaction writes


def in_transaction(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether this thread has a write transaction open on `con` (an act of the permission door, say)."""
    return _OPEN.get() is con


@contextmanager
def atomic(con: duckdb.DuckDBPyConnection, area: str = "data") -> Iterator[None]:
    """One write transaction, serialised with this process's other writes; rolled back on any error;
    counted in `area`'s version; checkpointed once committed (a busy dashboard may keep the store
    open for long, and until a checkpoint its writes live only in the .wal file beside it).

    Inside another `atomic` on the same connection (an act and its audit row: identity.permissions.acting) it
    joins that transaction: its rows commit or roll back with the outer one. An exception that carries
    `after_rollback` (a refusal raised inside a transaction) has it called once the outermost one rolled back,
    so what it records is not rolled back with the rest."""
    if in_transaction(con):
        yield
        _BUMPED.get().add(area)
        return
    with WRITE_LOCK:
        con.execute("BEGIN TRANSACTION")
        opened = _OPEN.set(con)
        bumped = _BUMPED.set({area})
        try:
            yield
            keys = [f"version:{name}" for name in sorted(_BUMPED.get())]  # once per transaction: a version says
            if con.execute(BUMP, {"k": keys}).fetchone()[0] < len(keys):  # "changed", not how often
                con.execute(FIRST_VERSIONS, {"k": keys})
            con.execute("COMMIT")
            _WRITES[0] += 1
        except BaseException as exc:
            try:
                con.execute("ROLLBACK")
            except duckdb.TransactionException:  # a failed COMMIT has already rolled back
                pass
            _OPEN.reset(opened)
            opened = None
            after = getattr(exc, "after_rollback", None)
            if after is not None:
                exc.after_rollback = None  # once, however many transactions it passes through
                after(con)
            raise
        finally:
            _BUMPED.reset(bumped)
            if opened is not None:
                _OPEN.reset(opened)
        try:
            con.execute("CHECKPOINT")  # into the store file now: a copy of the file alone holds every write
        except duckdb.TransactionException:  # another cursor is mid-read; the next write or the close checkpoints
            pass


def transaction(
    con: duckdb.DuckDBPyConnection, deletes: list[tuple[str, dict]], inserts: dict[str, pa.Table], area: str = "data"
) -> None:
    """Run the deletes, then insert each Arrow table into its store table; all or nothing."""
    with atomic(con, area):
        _apply(con, deletes, inserts)


def _apply(con: duckdb.DuckDBPyConnection, deletes: list[tuple[str, dict]], inserts: dict[str, pa.Table]) -> None:
    for statement, params in deletes:
        con.execute(statement, params)
    for name, table in inserts.items():
        select = "SELECT * FROM incoming"
        if name in KEYED:
            if "example_key" not in table.column_names:
                table = table.append_column("example_key", pa.nulls(len(table), pa.int64()))  # EXCLUDE needs it
            ids, select = KEYED[name]
        con.register("incoming", table)
        if name in KEYED:
            con.execute(NEW_KEYS.format(ids=ids))
        con.execute(f"INSERT INTO {name} BY NAME {select}")
        con.unregister("incoming")


def start_run(con: duckdb.DuckDBPyConnection, run: dict) -> set[str]:
    """Create the run as 'running' (or re-open it to resume); returns the example ids already done."""
    existing = con.execute("SELECT status FROM runs WHERE run_id = $r", {"r": run["run_id"]}).fetchone()
    if existing is None:
        now = datetime.now(UTC).replace(tzinfo=None)
        transaction(con, [], {"runs": arrow_table(con, "runs", [{"created_at": now, **run, "status": "running"}])})
    else:
        with atomic(con):
            con.execute("UPDATE runs SET status = 'running' WHERE run_id = $r", {"r": run["run_id"]})
    done = con.execute("SELECT example_id FROM predictions WHERE run_id = $r", {"r": run["run_id"]}).fetchall()
    return {row[0] for row in done}


def append_predictions(con: duckdb.DuckDBPyConnection, predictions: list[dict], retrievals: list[dict] = ()) -> None:
    """Add a chunk of predictions (and retrieved passages) to a running run, atomically."""
    tables = {
        name: arrow_table(con, name, rows)
        for name, rows in (("predictions", predictions), ("retrievals", list(retrievals)))
        if rows
    }
    transaction(con, [], tables)


def store_live(con: duckdb.DuckDBPyConnection, run: dict, predictions: list[dict], retrievals: list[dict] = ()) -> None:
    """Store live answers in one transaction: the 'live' run is created on its first answer, and an
    example's earlier answer (and its passages) is replaced; a failure leaves the store as it was."""
    examples = [p["example_id"] for p in predictions]
    deletes = [
        (f"DELETE FROM {name} WHERE run_id = $r AND list_contains($e, example_id)", {"r": run["run_id"], "e": examples})
        for name in ("retrievals", "predictions")
    ]
    tables = {
        name: arrow_table(con, name, rows)
        for name, rows in (("predictions", predictions), ("retrievals", list(retrievals)))
        if rows
    }
    with atomic(con, area="live"):  # the run's existence is checked inside: two sessions' first answers make one run
        if con.execute("SELECT 1 FROM runs WHERE run_id = $r", {"r": run["run_id"]}).fetchone() is None:
            now = datetime.now(UTC).replace(tzinfo=None)
            tables = {"runs": arrow_table(con, "runs", [{"created_at": now, **run, "status": "live"}]), **tables}
        _apply(con, deletes, tables)


def finish_run(con: duckdb.DuckDBPyConnection, run_id: str, status: str, seconds: float) -> None:
    """Mark a run complete (or interrupted/failed): only 'complete' runs appear in evaluations."""
    with atomic(con):
        con.execute(
            "UPDATE runs SET status = $s, seconds = coalesce(seconds, 0) + $t WHERE run_id = $r",
            {"s": status, "t": seconds, "r": run_id},
        )
