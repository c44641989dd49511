"""Where a store keeps its files (issue 64, item 5): a mixed model's kept fits, power analyses and job logs live in a
folder beside the store file, `<store file>.kept/<kind>/`, so two stores never share them (they were under the
repository's data/ whatever PLAB_STORE named, and two jobs with one key shared a status file)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from backend.config import settings
from backend.store.backup import store_of
from backend.store.connection import store_path


def folder(kind: str, store: Path | str | duckdb.DuckDBPyConnection | None = None) -> Path:
    """The folder of `kind` (fits, power, jobs) beside `store`: a path, an open connection (its file), or None (the
    configured store, $PLAB_STORE)."""
    if isinstance(store, duckdb.DuckDBPyConnection):
        path = store_of(store) or settings().store_path
    else:
        path = store_path(store)
    return path.parent / f"{path.name}.kept" / kind
