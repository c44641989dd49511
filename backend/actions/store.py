"""The store's own writes that are a person's act: a backup, a restore (owners, from a terminal)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from backend.actions.door import door
from backend.datasets import baselines
from backend.identity.actor import Actor
from backend.identity.permissions import acting
from backend.store import backup as backups


@door("backup")
def backup(con: duckdb.DuckDBPyConnection, reason: str, target: Path | None = None, *, actor: Actor) -> Path:
    """Write the user's rows to a new backup folder (or `target`); its folder."""
    with acting(con, actor, "backup", str(target or reason)):
        return backups.write(con, reason, automatic=False, target=target)


@door("restore")
def restore(con: duckdb.DuckDBPyConnection, chosen: Path, *, actor: Actor) -> dict[str, int]:
    """Put a backup's rows back in one act, then rebuild the restored datasets' baselines (a system write)."""
    with acting(con, actor, "restore", str(chosen)):
        counts = backups.restore(con, chosen)
    datasets = backups.user_dataset_ids(con)
    if counts.get("datasets") and datasets:  # [] or None would mean every dataset
        baselines.refresh(con, list(datasets))
    return counts
