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

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from datetime import timedelta

import duckdb

from backend.config import settings
from backend.identity import links, roles
from backend.identity.actor import NO_ROLE, Actor, sign_in_required, user_name, who
from backend.store import audit, backup
from backend.store import links as store_links
from backend.store.writer import AUTHOR, atomic, in_transaction

RANK = {NO_ROLE: 0, "viewer": 1, "analyst": 2, "owner": 3}
ACTIONS = {  # action → the least role that may do it (raters: RATER_ACTIONS only)
    "export": "viewer",
    "rate": "analyst",
    "import run": "analyst",
    "import dataset": "analyst",
    "run model": "analyst",
    "ask": "analyst",
    "judge": "analyst",
    "make map": "analyst",
    "fit model": "analyst",
    "run power": "analyst",
    "save slice": "analyst",
    "pin to report": "analyst",
    "edit report": "analyst",
    "create rating task": "analyst",
    "create study": "analyst",
    "close study": "analyst",
    "pilot study": "analyst",
    "delete participant data": "analyst",
    "respond": "analyst",
    "create link": "analyst",
    "create study link": "analyst",  # a personal link to a study: its maker's or an owner's (issue 64, item 4)
    "create general link": "analyst",
    "manage platform ids": "analyst",
    "delete run": "analyst",
    "delete slice": "analyst",
    "replace dataset": "analyst",
    "revoke link": "analyst",
    "register model": "owner",
    "train": "owner",
    "ingest": "owner",  # load or rebuild the built-in datasets, their baselines and indexes (the terminal's)
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
    "pilot study",
    "delete participant data",
    "create general link",
    "create study link",
    "manage platform ids",
}
MAX_REFUSED_LINKS = 100  # refused link opens audited per hour, at most
RATER_ACTIONS = {"rate", "respond"}  # within what a link or an account's links assign them


class Forbidden(PermissionError):
    """The actor's role does not allow the action; `needs` names the role it takes. Raised inside an open write
    transaction, its audit row is written once that transaction has rolled back (`after_rollback`)."""

    def __init__(self, actor: Actor, action: str, target: str, needs: str, why: str = ""):
        self.actor, self.action, self.target, self.needs = actor, action, target, needs
        self.after_rollback = None
        what = f"{action} {target}".strip()
        super().__init__(
            why or f"{actor.id} ({actor.role}) may not {what}: that needs the {needs} role; ask a lab owner"
        )

    def audit(self, con: duckdb.DuckDBPyConnection) -> None:
        record(con, self.actor, self.action, self.target, "refused", str(self))


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


def current(con: duckdb.DuckDBPyConnection, actor: Actor) -> tuple[Actor, str | None]:
    """The actor as of now, read at the write: a signed-in person's role from the roles file as it is now (a
    demotion or removal takes effect at their next write, in every open tab and job); a link holder's link row
    (revoked, expired or unknown: refused); the local owner only where this process is not a lab server.
    Returns (the actor with its current role, why it may not act at all or None)."""
    if actor.via == "local" and (sign_in_required() or settings().mode == "server"):
        return actor, (
            "this lab server requires sign-in: the local owner of a laptop's lab cannot act on it (in a notebook or "
            "script on the server, name who acts: Lab(actor=terminal()) acts as this machine's user)"
        )
    if actor.via == "terminal" and actor.id != user_name():  # issue 64, item 4: a terminal actor is this process's
        return actor, (  # OS user, whose file access to the store is the real boundary; it cannot claim another name
            f"a terminal actor is the machine user running this process ({user_name()}), not {actor.id!r}"
        )
    if actor.via == "sign-in":
        store = backup.store_of(con)
        try:
            role = roles.role_of(roles.read(roles.path(store)), actor.id) if store else actor.role
        except roles.RolesError as exc:
            return actor, f"the roles file cannot be read, so no role is given: {exc}"
        if role is None:
            return replace(actor, role=NO_ROLE), f"{actor.id} has no role in this lab (the roles file names none)"
        return replace(actor, role=role), None
    if actor.via == "link":
        return actor, links.refusal(con, actor)
    return actor, None


def check(
    con: duckdb.DuckDBPyConnection,
    actor: Actor | None,
    action: str,
    target: str = "",
    scope: str | None = None,
    owner: str | None = None,
) -> Actor:
    """The acting identity as of now (`current`) if it may; else Forbidden, with its refusal audited (at once, or,
    inside an open write transaction, once that has rolled back) and nothing else written."""
    try:
        actor = who(actor)
    except PermissionError as exc:
        raise Forbidden(
            Actor("anonymous", "viewer", "sign-in"), action, target, ACTIONS.get(action, "owner"), str(exc)
        ) from None
    actor, gone = current(con, actor)
    if gone:
        error = Forbidden(actor, action, target, ACTIONS.get(action, "owner"), f"refused: {gone}")
    else:
        refused = needs(con, actor, action, scope, owner)
        if not refused:
            return actor
        error = Forbidden(actor, action, target, *refused)
    if in_transaction(con):
        error.after_rollback = error.audit
    else:
        error.audit(con)
    raise error


@contextmanager
def acting(
    con: duckdb.DuckDBPyConnection,
    actor: Actor | None,
    action: str,
    target: str = "",
    scope: str | None = None,
    owner: str | None = None,
    detail: str | None = None,
) -> Iterator[Actor]:
    """Check, then run the write as this actor (rows stamped created_by) in one transaction with its audit row:
    the write and its 'done' row (with `detail`: what was given, e.g. the role) commit together or not at all. A
    failure rolls both back and is audited as 'failed' (by the outermost act, when acts nest), or as the error's
    own `outcome` ('refused': the rules said no, e.g. a study's cap reached)."""
    actor = check(con, actor, action, target, scope, owner)
    outermost = not in_transaction(con)
    token = AUTHOR.set(actor.id)
    try:
        with atomic(con, "audit"):
            yield actor
            record(con, actor, action, target, "done", detail)
    except Forbidden:
        raise  # a check inside the act refused: its own row is the one written
    except Exception as exc:
        if outermost:  # an error that is a refusal by the rules (a full study, a name taken) says so: `outcome`
            outcome = getattr(exc, "outcome", "failed")
            record(con, actor, action, target, outcome, f"{type(exc).__name__}: {exc}"[:500])
        raise
    finally:
        AUTHOR.reset(token)


@contextmanager
def audited(
    open_store: Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]],
    actor: Actor | None,
    action: str,
    target: str = "",
    owner: str | None = None,
    detail: str | None = None,
) -> Iterator[Actor]:
    """An act whose work is not one store transaction — a fit or power table kept beside the store, a terminal's
    batch command writing in many transactions of its own: checked as of now (Forbidden, audited, before anything
    runs), run with the store closed, then audited 'done' with `detail`, or 'failed' with the error, when it ends.
    `open_store`: a fresh session on the store (each audit row its own short transaction)."""
    with open_store() as con:
        by = check(con, actor, action, target, owner=owner)
    try:
        yield by
    except BaseException as exc:
        with open_store() as con:
            record(con, by, action, target, "failed", f"{type(exc).__name__}: {exc}"[:500])
        raise
    with open_store() as con:
        record(con, by, action, target, "done", detail)


def refused_link(con: duckdb.DuckDBPyConnection, store, token: str, why: str) -> bool:
    """Audit a link that opened nothing ('open link', refused, with why), naming the link and its person when its
    signature holds. At most MAX_REFUSED_LINKS such rows an hour, so a flood of bad links cannot fill the audit:
    past that, nothing more is written that hour (SECURITY.md says so). Whether a row was written."""
    since = store_links.now() - timedelta(hours=1)
    if audit.count_since(con, "open link", "refused", since) >= MAX_REFUSED_LINKS:
        return False
    try:
        holder = links.claimed(store, token)
    except links.LinkRefused:  # changed or cut short: who it names cannot be trusted, so none is named
        holder = Actor("anonymous", "rater", "link")
    record(con, holder, "open link", holder.link_id or "", "refused", why[:500])
    return True


def may(actor: Actor, action: str) -> bool:
    """Whether the role allows the action at all (for pages to hide what it cannot do; the write checks again)."""
    if actor.role == "rater":
        return action in RATER_ACTIONS
    return RANK[actor.role] >= RANK[ACTIONS[action]]
