"""Saved slices' writes: save one (replacing it: its maker or an owner), delete one."""

from __future__ import annotations

import duckdb

from backend.actions.door import door
from backend.analysis import saved_slices, slicing
from backend.identity.actor import Actor
from backend.identity.permissions import acting, check
from backend.store import audit
from backend.store import saved_slices as store_slices


@door("save slice")
def save(
    con: duckdb.DuckDBPyConnection,
    name: str,
    where: slicing.Slice,
    note: str | None = None,
    replace: bool = False,
    *,
    actor: Actor,
) -> None:
    """`saved_slices.save` as `actor`: Forbidden when they may not save slices, or replace this one."""
    with acting(con, actor, "save slice", name) as by:
        if replace and store_slices.one(con, name) is not None:
            check(con, by, "delete slice", name, owner=audit.made_by(con, "slice", name))
        saved_slices.save(con, name, where, note, replace)


@door("delete slice")
def delete(con: duckdb.DuckDBPyConnection, name: str, *, actor: Actor) -> bool:
    """Delete the slice (an analyst their own, an owner anyone's); whether there was one."""
    with acting(con, actor, "delete slice", name, owner=audit.made_by(con, "slice", name)):
        return saved_slices.delete(con, name)
