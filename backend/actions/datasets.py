"""Datasets' writes: import one (a file, a Studio template's expansion, Studio facts), replacing it only when its
maker or an owner asks."""

from __future__ import annotations

import duckdb

from backend.actions.door import door
from backend.identity.actor import Actor
from backend.identity.permissions import acting, check
from backend.imports import datasets
from backend.store import audit, queries
from backend.store.bundle import Bundle


@door("import dataset")
def save(con: duckdb.DuckDBPyConnection, bundle: Bundle, replace: bool = False, *, actor: Actor) -> dict[str, int]:
    """`datasets.save` as `actor`: the rows in one transaction with its audit row (Forbidden when they may not
    import datasets, or replace someone else's), then its baselines (a system write)."""
    name = bundle.dataset["dataset_id"]
    with acting(con, actor, "import dataset", name) as by:
        if replace and queries.dataset_exists(con, name):
            check(con, by, "replace dataset", name, owner=audit.made_by(con, "dataset", name))
        datasets.write(con, bundle, replace)
    return datasets.with_baselines(con, bundle)
