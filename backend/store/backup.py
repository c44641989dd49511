"""Backups of what only the user has, as Parquet: everything an ingest and `baselines` cannot rebuild.

That is the user's datasets (datasets, examples, pairs), the runs they ran, asked live or imported
(runs with source other than 'import' and 'baseline', with their predictions and retrieved passages)
and their ratings (source other than 'crowd', and every rating of their datasets: a study's responses), judge runs
and their judgements, rating tasks, studies with their participants, responses and demographic answers, saved
slices, report items, signed links and the audit. A backup is a folder `<store folder>/backups/<stamp>-<reason>/`
with one Parquet file per table and `manifest.json` (when, why, schema version, row counts).

`python -m backend backup` writes one; one is also written automatically before anything that
removes or replaces rows (a re-ingest, replacing or deleting a run or a dataset, a schema upgrade);
the newest KEEP automatic ones are kept. `restore` puts a backup's rows back in one transaction: rows
with the same keys are replaced, every other row stays. It runs on an older backup too (columns a
backup lacks get their defaults). Studies are the exception (issue 63, item 2): people go on answering a running
study after any backup, so a study's rows (`STUDY_KEYS`: the study, its participants, their answers and demographic
answers) are put back only where the store lacks them — a restore brings back what was lost and never takes away or
rolls back an answer given since; their crowd ratings are kept with them. In the same transaction it deletes again
every study participant the deletions log names (`study_deletions`, which a restore only adds to): a participant who
withdrew or was deleted after the backup was taken does not come back with it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from backend.store import studies as store_studies
from backend.store.writer import atomic, transaction

USER_DATASETS = (
    "SELECT dataset_id FROM datasets WHERE coalesce(TRY_CAST(json_extract(description, '$.user') AS BOOLEAN), FALSE)"
)
USER_RUNS = "SELECT run_id FROM runs WHERE source NOT IN ('import', 'baseline')"
USER_ROWS = {  # table → the user's rows, in the order a restore inserts them
    "datasets": f"SELECT * FROM datasets WHERE dataset_id IN ({USER_DATASETS})",
    "examples": f"SELECT * FROM examples WHERE dataset_id IN ({USER_DATASETS})",
    "pairs": f"SELECT * FROM pairs WHERE dataset_id IN ({USER_DATASETS})",
    "runs": f"SELECT * FROM runs WHERE run_id IN ({USER_RUNS})",
    "predictions": f"SELECT * FROM predictions WHERE run_id IN ({USER_RUNS})",
    "retrievals": f"SELECT * FROM retrievals WHERE run_id IN ({USER_RUNS})",
    "ratings": f"SELECT * FROM ratings WHERE source <> 'crowd' OR dataset_id IN ({USER_DATASETS})",  # studies' too
    "saved_slices": "SELECT * FROM saved_slices",
    "report_items": "SELECT * FROM report_items",
    "judge_runs": "SELECT * FROM judge_runs",
    "judgements": "SELECT * FROM judgements",
    "rating_tasks": "SELECT * FROM rating_tasks",
    "rating_task_items": "SELECT * FROM rating_task_items",
    "links": "SELECT * FROM links",
    "studies": "SELECT * FROM studies",
    "study_participants": "SELECT * FROM study_participants",
    "study_responses": "SELECT * FROM study_responses",
    "study_demographics": "SELECT * FROM study_demographics",
    "study_deletions": "SELECT * FROM study_deletions",
    "audit": "SELECT * FROM audit",
}
STUDY_KEYS = {  # a study's tables and their primary keys: a restore adds the rows the store lacks, never replaces one
    "studies": ("study_id",),
    "study_participants": ("study_id", "participant_id"),
    "study_responses": ("study_id", "participant_id", "position"),
    "study_demographics": ("study_id", "participant_id", "name"),
}
RATING_COLUMNS = ("dataset_id", "example_id", "run_id", "rater_id", "criterion")  # the primary key
RATING_KEY = f"concat_ws(chr(31), {', '.join(RATING_COLUMNS)})"
DELETION_KEY = "concat_ws(chr(31), study_id, participant_id)"  # study_deletions' primary key


class BadBackup(ValueError):
    """The folder is not a backup this release can read."""


def folder(store: Path) -> Path:
    return store.parent / "backups"


def keep() -> int:
    """How many automatic backups to keep ($PLAB_BACKUPS_KEEP, default 20)."""
    return int(os.environ.get("PLAB_BACKUPS_KEEP", "20"))


def store_of(con: duckdb.DuckDBPyConnection) -> Path | None:
    """The file the connection has open (None in memory)."""
    row = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    return Path(row[0]) if row and row[0] else None


def before(con: duckdb.DuckDBPyConnection, reason: str) -> Path | None:
    """The automatic backup before rows are removed or replaced: written only when the store (a file)
    holds user rows; returns its folder or None."""
    store = store_of(con)
    if store is None or not any(_has_rows(con, select) for select in USER_ROWS.values()):
        return None
    return write(con, reason, automatic=True)


def _has_rows(con: duckdb.DuckDBPyConnection, select: str) -> bool:
    try:
        return bool(con.execute(f"SELECT EXISTS ({select})").fetchone()[0])
    except (duckdb.BinderException, duckdb.CatalogException):  # a store from before that column or table: none
        return False


def write(con: duckdb.DuckDBPyConnection, reason: str, automatic: bool = False, target: Path | None = None) -> Path:
    """Write the user's rows to a new backup folder beside the store (or to `target`) and return it."""
    store = store_of(con) or Path("memory")
    stamp = datetime.now(UTC)
    slug = re.sub(r"[^a-z0-9]+", "-", reason.lower()).strip("-")[:40] or "backup"
    out = target or folder(store) / f"{stamp:%Y%m%d-%H%M%S-%f}-{slug}"
    out.mkdir(parents=True, exist_ok=False)
    counts = {}
    for table, select in USER_ROWS.items():
        try:
            con.execute(f"COPY ({select}) TO '{_sql_path(out / f'{table}.parquet')}' (FORMAT parquet)")
        except (duckdb.BinderException, duckdb.CatalogException):  # a store from before that column or table: none
            continue
        counts[table] = pq.read_metadata(out / f"{table}.parquet").num_rows
    version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    manifest = {
        "created_at": stamp.isoformat(),
        "reason": reason,
        "automatic": automatic,
        "store": str(store),
        "schema_version": version[0][0] if version else None,
        "rows": counts,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    if automatic:
        _prune(store)
    return out


def manifest(backup: Path) -> dict:
    """The backup's manifest; BadBackup naming the folder when it is not a backup."""
    path = Path(backup) / "manifest.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BadBackup(
            f"{backup} is not a backup folder ({path.name}: {exc}); list them with `python -m backend backups`"
        ) from None


def listing(store: Path) -> list[tuple[Path, dict]]:
    """The store's backups, newest first, with their manifests (unreadable folders skipped)."""
    found = []
    for path in sorted(folder(store).glob("*/manifest.json"), reverse=True):
        try:
            found.append((path.parent, json.loads(path.read_text())))
        except ValueError:
            continue
    return found


def restore(con: duckdb.DuckDBPyConnection, backup: Path) -> dict[str, int]:
    """Put the backup's rows back, replacing rows with the same keys, in one transaction; returns rows per table."""
    manifest(backup)
    tables = {}
    for table in USER_ROWS:
        path = Path(backup) / f"{table}.parquet"
        if path.exists():
            try:
                tables[table] = pq.read_table(path)
            except Exception as exc:  # pyarrow raises several types for a damaged file
                raise BadBackup(f"{path}: not a readable Parquet file ({exc})") from None
    ids = {
        name: tables[name].column(column).to_pylist() if name in tables else []
        for name, column in (
            ("datasets", "dataset_id"),
            ("runs", "run_id"),
            ("judge_runs", "judge_run_id"),
            ("rating_tasks", "task_id"),
        )
    }
    rated = tables.get("ratings")
    ratings = ["\x1f".join(key) for key in zip(*(rated.column(c).to_pylist() for c in RATING_COLUMNS))] if rated else []
    deletes = [
        (f"DELETE FROM {name} WHERE list_contains($ids, dataset_id)", {"ids": ids["datasets"]})
        for name in ("pairs", "examples", "datasets")
    ]
    deletes += [
        (f"DELETE FROM {name} WHERE list_contains($ids, run_id)", {"ids": ids["runs"]})
        for name in ("retrievals", "predictions", "runs")
    ]
    deletes.append((f"DELETE FROM ratings WHERE list_contains($k, {RATING_KEY})", {"k": ratings}))
    deletes += [
        (f"DELETE FROM {name} WHERE list_contains($ids, judge_run_id)", {"ids": ids["judge_runs"]})
        for name in ("judgements", "judge_runs")
    ]
    deletes += [
        (f"DELETE FROM {name} WHERE list_contains($ids, task_id)", {"ids": ids["rating_tasks"]})
        for name in ("rating_task_items", "rating_tasks")
    ]
    for name, key in (
        ("saved_slices", "name"),
        ("report_items", "item_id"),
        ("links", "link_id"),
        ("audit", "entry_id"),
    ):
        if name in tables:
            deletes.append(
                (f"DELETE FROM {name} WHERE list_contains($k, {key})", {"k": tables[name].column(key).to_pylist()})
            )
    if "study_deletions" in tables:  # the log only grows: its rows come back as they were, later ones stay
        logged = tables["study_deletions"]
        pairs = [
            "\x1f".join(p)
            for p in zip(logged.column("study_id").to_pylist(), logged.column("participant_id").to_pylist())
        ]
        deletes.append((f"DELETE FROM study_deletions WHERE list_contains($k, {DELETION_KEY})", {"k": pairs}))
    with atomic(con):
        for name, key in STUDY_KEYS.items():  # inside the transaction: an answer given meanwhile waits for it
            if name in tables:
                tables[name] = _missing(con, name, key, tables[name])
        transaction(con, deletes, {name: table for name, table in tables.items() if len(table)})
        for statement in store_studies.REAPPLY:  # deletions made after the backup was taken hold
            con.execute(statement, {"s": None})
    return {name: len(table) for name, table in tables.items()}


def _missing(con: duckdb.DuckDBPyConnection, name: str, key: tuple[str, ...], table: pa.Table) -> pa.Table:
    """The backup's rows of `name` whose key the store does not hold."""
    held = {tuple(row) for row in con.execute(f"SELECT {', '.join(key)} FROM {name}").fetchall()}
    keys = zip(*(table.column(column).to_pylist() for column in key), strict=True)
    return table.filter(pa.array([tuple(k) not in held for k in keys], pa.bool_()))


def _prune(store: Path) -> None:
    automatic = [path for path, meta in listing(store) if meta.get("automatic")]
    for path in automatic[keep() :]:
        shutil.rmtree(path, ignore_errors=True)


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def user_dataset_ids(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The ids of the datasets users imported."""
    return [r[0] for r in con.execute(USER_DATASETS).fetchall()]
