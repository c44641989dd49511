"""The backup commands of `python -m backend`: backup, backups, restore (see backend.store.backup)."""

from __future__ import annotations

import argparse
from pathlib import Path

from backend.actions import store as store_actions
from backend.identity.actor import terminal
from backend.store import backup
from backend.store.access import session
from backend.store.connection import store_path


def add(sub) -> None:
    p = sub.add_parser(
        "backup",
        help="write your rows (your datasets, runs, live answers, ratings) to Parquet",
        description="Everything an ingest cannot rebuild, as one Parquet file per table in "
        "<store folder>/backups/<time>-<reason>/ (or --to DIR), with manifest.json.",
    )
    p.add_argument("--to", type=Path, help="a new folder to write the backup to")
    p.add_argument("--reason", default="manual", help="kept in the manifest and the folder name")
    p.set_defaults(func=cmd_backup)
    p = sub.add_parser("backups", help="list the store's backups, newest first")
    p.set_defaults(func=cmd_backups)
    p = sub.add_parser(
        "restore",
        help="put a backup's rows back (rows with the same keys are replaced)",
        description="In one transaction; every other row stays. Into a new store: run "
        "`python -m backend ingest` first, then restore. The baselines of restored datasets are rebuilt.",
    )
    p.add_argument("backup", type=Path, nargs="?", help="a backup folder (default: the newest)")
    p.set_defaults(func=cmd_restore)


def cmd_backup(args: argparse.Namespace) -> int:
    with session(args.store) as con:
        out = store_actions.backup(con, args.reason, args.to, actor=terminal())
    rows = backup.manifest(out)["rows"]
    print(f"backup written to {out}: " + ", ".join(f"{n:,} {table}" for table, n in rows.items()))
    return 0


def cmd_backups(args: argparse.Namespace) -> int:
    found = backup.listing(store_path(args.store))
    if not found:
        print(f"no backups in {backup.folder(store_path(args.store))}")
    for path, meta in found:
        rows = sum(meta.get("rows", {}).values())
        print(f"{path}  {meta.get('reason', '?')}  schema {meta.get('schema_version')}  {rows:,} rows")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:

    chosen = args.backup
    if chosen is None:
        found = backup.listing(store_path(args.store))
        if not found:
            print(f"no backups in {backup.folder(store_path(args.store))}; name a backup folder")
            return 1
        chosen = found[0][0]
    try:
        with session(args.store, create=True) as con:
            counts = store_actions.restore(con, chosen, actor=terminal())
    except backup.BadBackup as exc:
        print(f"error: {exc}")
        return 1
    print(f"restored from {chosen}: " + ", ".join(f"{n:,} {table}" for table, n in counts.items() if n))
    return 0
