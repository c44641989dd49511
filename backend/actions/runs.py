"""Runs' writes: import a run of predictions (replacing one only when its maker or an owner asks), delete one."""

from __future__ import annotations

import duckdb

from backend.actions.door import door
from backend.identity.actor import Actor
from backend.identity.permissions import acting, check
from backend.imports import predictions
from backend.store import audit


@door("import run")
def save(con: duckdb.DuckDBPyConnection, plan: predictions.Plan, replace: bool = False, *, actor: Actor) -> str:
    """`predictions.save` as `actor`: Forbidden when they may not import, or replace someone else's run."""
    run_id = plan.run["run_id"]
    with acting(con, actor, "import run", run_id) as by:
        if replace and predictions.existing_run(con, run_id) == "user":
            check(con, by, "delete run", run_id, owner=audit.made_by(con, "run", run_id))
        return predictions.save(con, plan, replace)


@door("delete run")
def delete(con: duckdb.DuckDBPyConnection, run_id: str, *, actor: Actor) -> None:
    """Remove a run the user imported (an analyst their own, an owner anyone's: Forbidden otherwise)."""
    predictions.deletable(con, run_id)
    with acting(con, actor, "delete run", run_id, owner=audit.made_by(con, "run", run_id)):
        predictions.delete(con, run_id)
