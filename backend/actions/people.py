"""Who may do what: the roles file (owners), and signed links made or revoked from a terminal."""

from __future__ import annotations

from pathlib import Path

import duckdb

from backend.actions.door import door
from backend.identity import links, roles
from backend.identity.actor import Actor
from backend.identity.permissions import acting
from backend.store import audit


@door("manage roles")
def add_role(con: duckdb.DuckDBPyConnection | None, where: Path, who: str, role: str, *, actor: Actor) -> None:
    """Give `who` (an e-mail or *@domain) `role` in the roles file, audited with the role given (`con` None: no
    store yet to audit into, before the first ingest)."""
    if con is None:
        roles.add(where, who, role)
        return
    with acting(con, actor, "manage roles", who, detail=f"add {role}"):
        roles.add(where, who, role)


@door("manage roles")
def remove_role(con: duckdb.DuckDBPyConnection | None, where: Path, who: str, *, actor: Actor) -> None:
    """Take `who`'s entry out of the roles file (RolesError when it has none), audited."""
    if con is None:
        _remove(where, who)
        return
    with acting(con, actor, "manage roles", who, detail="remove"):
        _remove(where, who)


def _remove(where: Path, who: str) -> None:
    if not roles.remove(where, who):
        raise roles.RolesError(f"{who} has no entry in {where}")


@door("create link")
def make_link(
    con: duckdb.DuckDBPyConnection, store: Path, person: str, target: str, days: float, *, actor: Actor
) -> links.Link:
    """One signed link for `person` to `target`, audited naming the person."""
    with acting(con, actor, "create link", target, detail=f"for {person}") as by:
        return links.create(con, store, person, target, days, by.id)


@door("revoke link")
def revoke_link(con: duckdb.DuckDBPyConnection, link_id: str, *, actor: Actor) -> None:
    """End a live link now (its maker or an owner); LookupError when there is no live link of that id."""
    with acting(con, actor, "revoke link", link_id, owner=audit.made_by(con, "link", link_id)) as by:
        if not links.revoke(con, link_id, by.id):
            raise LookupError(f"no live link {link_id!r} (see `links list`)")
