"""Studies' writes: create one (a new version only by its maker or an owner), make its participants' links, close
it; and a participant's joining and answers, each audited, only in the study their link opens."""

from __future__ import annotations

from pathlib import Path

import duckdb

from backend.actions.door import door
from backend.analysis import studies
from backend.identity import links
from backend.identity.actor import Actor
from backend.identity.permissions import acting, check
from backend.store import studies as store_studies
from backend.studies import collection
from backend.studies.collection import Screen
from backend.studies.design import parse


@door("create study")
def create(
    con: duckdb.DuckDBPyConnection, text: str, path: str = "study.yaml", replace: bool = False, *, actor: Actor
) -> str:
    """`collection.create` as `actor` (Forbidden when they may not create studies, or replace someone else's)."""
    name = parse(text, path).name
    with acting(con, actor, "create study", name) as by:
        existing = store_studies.study(con, name)
        if replace and existing is not None:
            check(con, by, "replace dataset", name, owner=existing["created_by"])
        return collection.create(con, text, path, replace)


@door("create link")
def make_links(
    con: duckdb.DuckDBPyConnection,
    store: Path,
    study_id: str,
    count: int,
    days: float = 30,
    people: list[str] | None = None,
    *,
    actor: Actor,
) -> list[links.Link]:
    """`count` signed links to the study (or one per person named), one participant each, each its own act."""
    target, found = collection.object_of(study_id), []
    for person in collection.new_people(con, study_id, count, people):
        with acting(con, actor, "create link", target, detail=f"for {person}") as by:
            found.append(links.create(con, store, person, target, days, by.id))
    return found


@door("close study")
def close(con: duckdb.DuckDBPyConnection, study_id: str, *, actor: Actor) -> dict:
    """Close the study as `actor` (its maker or an owner)."""
    row = collection.study(con, study_id)
    with acting(con, actor, "close study", study_id, owner=row["created_by"]):
        return collection.close(con, study_id)


def _participant(con: duckdb.DuckDBPyConnection, study_id: str, actor: Actor) -> Actor:
    return check(con, actor, "respond", study_id, scope=collection.object_of(study_id))


@door("respond")
def screen(con: duckdb.DuckDBPyConnection, study_id: str, *, actor: Actor) -> Screen:
    """The screen the acting participant is on (only in the study their link opens)."""
    return collection.screen(con, study_id, _participant(con, study_id, actor).id)


@door("respond")
def join(con: duckdb.DuckDBPyConnection, study_id: str, *, actor: Actor) -> dict:
    """The acting person as a participant: joining is audited, once."""
    by = _participant(con, study_id, actor)
    existing = collection.joined(con, study_id, by.id)
    if existing is not None:
        return existing
    with acting(con, by, "respond", f"{study_id}: joined", scope=collection.object_of(study_id)):
        return collection.join(con, study_id, by.id)


@door("respond")
def answer(
    con: duckdb.DuckDBPyConnection,
    study_id: str,
    position: int,
    given,
    measured: dict | None = None,
    *,
    actor: Actor,
) -> Screen:
    """Store the acting participant's answer, with what their browser measured (`collection.timing`), one audit row
    with it (a refused one too), and return the next screen."""
    with acting(con, actor, "respond", f"{study_id}: trial {position + 1}", scope=collection.object_of(study_id)) as by:
        collection.answer(con, study_id, position, given, by.id, measured)
    return collection.screen(con, study_id, by.id)


@door("export")
def archive(con: duckdb.DuckDBPyConnection, study_id: str, *, actor: Actor) -> dict[str, bytes]:
    """The study's archive files, once `actor` may export (a read: a refusal is audited, an export is not)."""
    check(con, actor, "export", f"study:{study_id}")
    return studies.archive(con, study_id)


@door("export")
def archive_zip(con: duckdb.DuckDBPyConnection, study_id: str, *, actor: Actor) -> bytes:
    check(con, actor, "export", f"study:{study_id}")
    return studies.archive_zip(con, study_id)
