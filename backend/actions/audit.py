"""Reading the audit (owners only): checked like a write, so a refusal is itself audited."""

from __future__ import annotations

import duckdb
import pandas as pd

from backend.actions.door import door
from backend.identity.actor import Actor
from backend.identity.permissions import check
from backend.store import audit


@door("view activity")
def entries(
    con: duckdb.DuckDBPyConnection, limit: int, who: str | None, outcome: str | None, *, actor: Actor
) -> pd.DataFrame:
    """The newest `limit` entries (of one person, of one outcome); Forbidden unless `actor` is an owner."""
    check(con, actor, "view activity", "audit")
    return audit.entries(con, limit, who, outcome)
