"""Ratings' writes: rate an output (as yourself; a rater only inside a task assigned to them), the item a rating
task serves next, rating tasks and their links."""

from __future__ import annotations

from pathlib import Path

import duckdb

from backend.actions.door import door
from backend.analysis import rating_tasks, ratings
from backend.identity import links
from backend.identity.actor import Actor
from backend.identity.permissions import acting, check
from backend.identity.permissions import assigned as objects_assigned
from backend.store import audit
from backend.store import rating_tasks as store_tasks


def assigned(con: duckdb.DuckDBPyConnection, actor: Actor) -> list[str]:
    """The rating tasks a rater may work on (a link's one task; an account's tasks from links naming it)."""
    return sorted(o.partition(":")[2] for o in objects_assigned(con, actor) if o.startswith("rating-task:"))


def _as_themselves(by: Actor, rater_id: str) -> str:
    """The rater id, which a signed-in person or a link holder may only give as their own."""
    rater = ratings.valid_rater(rater_id)
    if by.signed_in and rater != by.id:
        raise ratings.RatingError("rater_id", f"{rater!r}: you rate as {by.id}, not as anyone else")
    return rater


@door("rate")
def save(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    example_id: str,
    rater_id: str,
    values: dict[str, float | int | None],
    note: str | None = None,
    loaded: dict[str, float] | None = None,
    task_id: str | None = None,
    *,
    actor: Actor,
) -> int:
    """`ratings.save` as `actor`: they rate only as themselves when signed in or holding a link, a rater only items
    of a rating task assigned to them (`task_id`). Forbidden (audited) otherwise, before anything is written."""
    scope = f"rating-task:{task_id}" if task_id else None
    with acting(con, actor, "rate", f"{run_id}/{example_id}", scope=scope) as by:
        return ratings.save(con, run_id, example_id, _as_themselves(by, rater_id), values, note, loaded, task_id)


@door("rate")
def next_item(con: duckdb.DuckDBPyConnection, task_id: str, rater_id: str, *, actor: Actor) -> str | None:
    """The item to serve this rater now, checked as a rating (themselves only; a rater only in a task assigned to
    them): the claim itself is a system write, not audited."""
    by = check(con, actor, "rate", task_id, scope=f"rating-task:{task_id}")
    return rating_tasks.next_item(con, task_id, _as_themselves(by, rater_id))


@door("create rating task")
def create_task(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    overlap: int,
    guideline: str,
    sample: int | None = None,
    seed: int = 0,
    *,
    actor: Actor,
) -> str:
    """`rating_tasks.create` as `actor`; its id."""
    with acting(con, actor, "create rating task", run_id):
        return rating_tasks.create(con, run_id, overlap, guideline, sample, seed)


@door("create link")
def make_links(
    con: duckdb.DuckDBPyConnection, store: Path, task_id: str, people: list[str], days: float, *, actor: Actor
) -> list[links.Link]:
    """One signed link per person to this task (an analyst or owner; Forbidden otherwise); ValueError naming the
    person or the days at fault, before any link is made. Audited once, naming the people."""
    if store_tasks.task(con, task_id) is None:
        raise ratings.RatingError("task", f"no rating task {task_id!r}")
    people = [p.strip() for p in people if p.strip()]
    if not people:
        raise ValueError("people: name at least one rater (a rater id each: letters, digits and . _ - + @)")
    for person in people:
        ratings.valid_rater(person)
    target, detail = f"rating-task:{task_id}", f"for {', '.join(people)}"
    with acting(con, actor, "create link", target, detail=detail[:500]) as by:
        return [links.create(con, store, p, target, days, by.id) for p in people]


@door("revoke link")
def revoke_link(con: duckdb.DuckDBPyConnection, link_id: str, *, actor: Actor) -> bool:
    """End a link now (an analyst their own links, an owner any); whether it was live."""
    with acting(con, actor, "revoke link", link_id, owner=audit.made_by(con, "link", link_id)) as by:
        return links.revoke(con, link_id, by.id)
