"""Registering a model: an OpenAI-compatible endpoint in data/registry.local.toml (owners)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from backend.actions.door import door
from backend.identity.actor import Actor
from backend.identity.permissions import acting
from backend.models import registry


@door("register model")
def add_endpoint(con: duckdb.DuckDBPyConnection | None, name: str, *, actor: Actor, **entry) -> Path:
    """`registry.add_endpoint` as `actor`, audited with its address (`con` None: no store yet to audit into)."""
    if con is None:
        return registry.add_endpoint(name, **entry)
    with acting(con, actor, "register model", name, detail=entry.get("base_url")):
        return registry.add_endpoint(name, **entry)
