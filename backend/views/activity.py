"""Activity: the audit for a lab's owners — who did what, when, to which object, through what (sign-in, a link,
the terminal), and how it ended (done, refused with the role it needed, failed); newest first. Reading it is
itself checked: only an owner may."""

from __future__ import annotations

import duckdb
import pandas as pd

from backend.actions import audit as audit_actions
from backend.identity.actor import Actor
from backend.store.ids import pasted

OUTCOMES = ("done", "refused", "failed")


def entries(
    con: duckdb.DuckDBPyConnection,
    actor: Actor,
    limit: int = 500,
    who: str | None = None,
    outcome: str | None = None,
) -> pd.DataFrame:
    """The newest `limit` entries (of one person, of one outcome); Forbidden unless the actor is an owner."""
    if outcome is not None and outcome not in OUTCOMES:
        raise ValueError(f"outcome {outcome!r}; expected one of {', '.join(OUTCOMES)}")
    return audit_actions.entries(con, limit, pasted(who) or None, outcome, actor=actor)  # an e-mail copied from a page
