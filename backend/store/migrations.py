"""Bringing a store to this release's schema, in place: an older store is upgraded, never rebuilt.

`meta.schema_version` records the schema a store was written with. Opening a store whose version is
older runs, in one transaction: `schema.sql` (idempotent: new tables, `ADD COLUMN IF NOT EXISTS`), the
criteria, and each later version's backfill; user rows (their runs, ratings, datasets) stay where they
are. The user rows are backed up first (`backend.store.backup`), so a failed upgrade can be undone with
`python -m backend restore`. A store written by a newer release is refused, never downgraded.

To change the schema: edit schema.sql so it still runs on every older store, bump SCHEMA_VERSION, and
add the statements that fill the new columns of existing rows to BACKFILL under the new version.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from backend.store import backup
from backend.store.writer import NEW_KEYS, atomic

SCHEMA = Path(__file__).with_name("schema.sql")
SCHEMA_VERSION = 18

BACKFILL: dict[int, list[str]] = {
    4: [  # the integer join key of examples and predictions (schema.sql: example_keys)
        NEW_KEYS.format(
            ids="SELECT dataset_id, example_id FROM examples UNION "
            "SELECT r.dataset_id, p.example_id FROM predictions p JOIN runs r USING (run_id)"
        ),
        "UPDATE examples e SET example_key = k.example_key FROM example_keys k "
        "WHERE k.dataset_id = e.dataset_id AND k.example_id = e.example_id AND e.example_key IS NULL",
        "UPDATE predictions p SET example_key = k.example_key FROM runs r, example_keys k WHERE r.run_id = p.run_id "
        "AND k.dataset_id = r.dataset_id AND k.example_id = p.example_id AND p.example_key IS NULL",
    ],
    5: [],  # the cb_commitment criterion (CRITERIA are inserted on every upgrade)
    6: [],  # saved_slices and report_items (new tables, nothing to fill)
    7: [],  # run_metrics, the leaderboard's cache (filled on first use)
    8: [],  # judge_runs, judgements, rating tasks (new tables), the corrects_assumption and equivalent criteria
    9: [],  # created_by columns (NULL: made before anyone was recorded), audit and links (new tables)
    10: [],  # dataset_verdicts, the verdicts' cache (filled on first use)
    11: [],  # studies, study_participants, study_responses (new tables)
    12: [],  # study_responses' moved, rt_ms, left_count, left_ms (NULL: answered before browsers measured them)
    13: [],  # the pilot flags (DEFAULT FALSE: every earlier participant was real) and study_deletions (new table)
    14: [],  # links' cap and the participants' platform columns (NULL: joined through a personal link)
    15: [],  # study_demographics (a new table, nothing to fill)
    16: [],  # study_deletions' platform_key (NULL: deleted before ids were kept from starting again)
    17: [],  # study_participants' ended, ended_at (NULL: every earlier participant still holds their place)
    18: [],  # study_responses' detail (NULL: every earlier answer was a rating)
}


class StoreTooNew(RuntimeError):
    """The store was written by a newer release than this one."""


def schema_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The schema version the store records; None for a new (empty) file."""
    try:
        # fetchall, not fetchone: an unfinished result keeps a transaction open, and that blocks CHECKPOINT
        rows = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    except duckdb.CatalogException:
        return None
    return int(rows[0][0]) if rows else None


def bring_up_to_date(con: duckdb.DuckDBPyConnection, path: Path, criteria: list[tuple]) -> int | None:
    """Create the schema in a new store or upgrade an older one; returns the version found (None = new).
    An up-to-date store is left untouched (an open that writes nothing leaves the file as it was)."""
    found = schema_version(con)
    if found == SCHEMA_VERSION:
        return found
    if found is not None and found > SCHEMA_VERSION:
        raise StoreTooNew(
            f"{path} was written by a newer release (schema {found}; this code reads schema "
            f"{SCHEMA_VERSION}): update the code (git pull, then run the README command again), or "
            "restore a backup made by this release with `python -m backend restore`"
        )
    if found is not None:
        backup.before(con, reason=f"upgrade from schema {found}")
    with atomic(con):
        con.execute(SCHEMA.read_text())
        con.executemany("INSERT INTO criteria VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING", criteria)
        for version in sorted(BACKFILL):
            if (found or 0) < version:  # a file from before meta existed gets every backfill
                for statement in BACKFILL[version]:
                    con.execute(statement)
        con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', $v)", {"v": str(SCHEMA_VERSION)})
    return found
