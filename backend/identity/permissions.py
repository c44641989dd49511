"""Which role each action needs, checked where the write happens (views, the API, the job starters), with
every attempt written to the audit.

    with acting(con, actor, "import run", target=run_id) as by:   # refused → Forbidden, nothing written
        ...the write...                                            # its rows are stamped created_by = by.id

Roles, most rights first: owner ⊃ analyst ⊃ viewer; a rater only rates the rating tasks assigned to them
(a signed link names the task; an account with the rater role is assigned by a link naming its e-mail), and a study's
participant only answers the study their link opens ('respond').
Work someone else made (a run, a dataset, a saved slice, a report item, a link) is deleted or replaced only by an
owner; an analyst may delete or replace their own. README.md has the table.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

from backend.identity.actor import Actor, who
from backend.store import audit
from backend.store import links as store_links
from backend.store.writer import AUTHOR

RANK = {"viewer": 1, "analyst": 2, "owner": 3}
ACTIONS = {  # action → the least role that may do it (raters: RATER_ACTIONS only)
    "export": "viewer",
    "rate": "analyst",
    "import run": "analyst",
    "import dataset": "analyst",
    "run model": "analyst",
    "ask": "analyst",
    "judge": "analyst",
    "make map": "analyst",
    "save slice": "analyst",
    "pin to report": "analyst",
    "edit report": "analyst",
    "create rating task": "analyst",
    "create study": "analyst",
    "close study": "analyst",
    "respond": "analyst",
    "create link": "analyst",
    "delete run": "analyst",
    "delete slice": "analyst",
    "replace dataset": "analyst",
    "revoke link": "analyst",
    "register model": "owner",
    "train": "owner",
    "manage roles": "owner",
    "backup": "owner",
    "restore": "owner",
    "view activity": "owner",
}
OWN_WORK = {
    "delete run",
    "delete slice",
    "replace dataset",
    "revoke link",
    "edit report",
    "close study",
}
RATER_ACTIONS = {"rate", "respond"}  # within what a link or an account's links assign them


class Forbidden(PermissionError):
    """The actor's role does not allow the action; `needs` names the role it takes."""

    def __init__(self, actor: Actor, action: str, target: str, needs: str, why: str = ""):
        self.actor, self.action, self.target, self.needs = actor, action, target, needs
        what = f"{action} {target}".strip()
        super().__init__(
            why or f"{actor.id} ({actor.role}) may not {what}: that needs the {needs} role; ask a lab owner"
        )


def assigned(con: duckdb.DuckDBPyConnection, actor: Actor) -> set[str]:
    """The objects a rater may work on: a link holder's one object; an account's live links naming its e-mail."""
    if actor.scope:
        return {actor.scope}
    found = store_links.listing(con)
    live = found[(found["person"].str.lower() == actor.id.lower()) & found["revoked_at"].isna()]
    return set(live[live["expires_at"] > store_links.now()]["object"])


def needs(
    con: duckdb.DuckDBPyConnection, actor: Actor, action: str, scope: str | None = None, owner: str | None = None
) -> tuple[str, str] | None:
    """None when allowed; else (the role it needs, why). `scope`: the assignment it falls under (e.g.
    'rating-task:T'); `owner`: who made the object acted on (None: made before anyone was recorded)."""
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
    if actor.role == "rater":
        if action not in RATER_ACTIONS:
            return ACTIONS[action], ""
        mine = assigned(con, actor)
        if scope is None or scope not in mine:
            what = f"only {', '.join(sorted(mine)) or 'what is assigned to them'}"
            return "analyst", f"{actor.id} (rater) may rate {what}, not {scope or 'outside a rating task'}"
        return None
    if actor.scope and scope != actor.scope:  # a link never reaches past its object, whatever the role
        return "analyst", f"this link opens {actor.scope} only"
    if RANK[actor.role] < RANK[ACTIONS[action]]:
        return ACTIONS[action], ""
    if action in OWN_WORK and owner != actor.id and actor.role != "owner":
        made = owner or "someone before who made it was recorded"
        return "owner", f"{actor.id} ({actor.role}) may not {action} made by {made}: that needs the owner role"
    return None


def record(con: duckdb.DuckDBPyConnection, actor: Actor, action: str, target: str, outcome: str, detail=None) -> None:
    audit.append(
        con,
        {
            "actor": actor.id,
            "role": actor.role,
            "via": actor.via,
            "action": action,
            "target": target,
            "outcome": outcome,
            "detail": detail,
        },
    )


def check(
    con: duckdb.DuckDBPyConnection,
    actor: Actor | None,
    action: str,
    target: str = "",
    scope: str | None = None,
    owner: str | None = None,
) -> Actor:
    """The acting identity if it may; else the refusal is audited and Forbidden raised (nothing is written)."""
    try:
        actor = who(actor)
    except PermissionError as exc:
        raise Forbidden(
            Actor("anonymous", "viewer", "sign-in"), action, target, ACTIONS.get(action, "owner"), str(exc)
        ) from None
    refused = needs(con, actor, action, scope, owner)
    if refused:
        error = Forbidden(actor, action, target, *refused)
        record(con, actor, action, target, "refused", str(error))
        raise error
    return actor


@contextmanager
def acting(
    con: duckdb.DuckDBPyConnection,
    actor: Actor | None,
    action: str,
    target: str = "",
    scope: str | None = None,
    owner: str | None = None,
) -> Iterator[Actor]:
    """Check, then run the write as this actor (rows stamped created_by) and audit how it ended."""
    actor = check(con, actor, action, target, scope, owner)
    token = AUTHOR.set(actor.id)
    try:
        yield actor
    except Exception as exc:
        record(con, actor, action, target, "failed", f"{type(exc).__name__}: {exc}"[:500])
        raise
    else:
        record(con, actor, action, target, "done")
    finally:
        AUTHOR.reset(token)


def may(actor: Actor, action: str) -> bool:
    """Whether the role allows the action at all (for pages to hide what it cannot do; the write checks again)."""
    if actor.role == "rater":
        return action in RATER_ACTIONS
    return RANK[actor.role] >= RANK[ACTIONS[action]]
