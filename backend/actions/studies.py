"""Studies' writes: create one (a new version only by its maker or an owner), make its participants' links, close
it, make pilot links and delete one participant's data on request (its maker or an owner); and a participant's
joining, answers and withdrawal, each audited, only in the study their link opens (a pilot link: as a pilot)."""

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
    existing = store_studies.study(con, name)
    piloted = store_studies.pilots(con, name) if replace and existing is not None else {"answers": 0}
    said = (
        f"deleted {piloted['answers']} pilot answers of {piloted['participants']} pilots"
        if piloted["answers"]
        else None
    )
    with acting(con, actor, "create study", name, detail=said) as by:
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


@door("pilot study")
def pilot_links(
    con: duckdb.DuckDBPyConnection, store: Path, study_id: str, count: int = 1, days: float = 7, *, actor: Actor
) -> list[links.Link]:
    """`count` pilot links (pilot-<study>-NNN): whoever opens one takes the study as a pilot participant, each its
    own act, by the study's maker or an owner."""
    row = collection.study(con, study_id)
    target, found = collection.object_of(study_id), []
    for person in collection.pilot_people(con, study_id, count):
        with acting(con, actor, "pilot study", target, owner=row["created_by"], detail=f"for {person}") as by:
            found.append(links.create(con, store, person, target, days, by.id))
    return found


@door("delete participant data")
def delete_participant(
    con: duckdb.DuckDBPyConnection, study_id: str, participant_id: str, reason: str, *, actor: Actor
) -> dict:
    """Delete one participant's responses, crowd ratings and row on request, as `actor` (the study's maker or an
    owner); the audit row names the study and the participant, never an answer. {"responses", "ratings"} deleted."""
    row = collection.study(con, study_id)
    target = f"{study_id}: participant {participant_id}"
    with acting(con, actor, "delete participant data", target, owner=row["created_by"]) as by:
        return collection.delete_participant(con, study_id, participant_id, by.id, reason)


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
        return collection.join(con, study_id, by.id, pilot=collection.is_pilot(by.id))


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


@door("respond")
def withdraw(con: duckdb.DuckDBPyConnection, study_id: str, *, actor: Actor) -> Screen:
    """The acting participant withdraws: their data deleted, audited (who, which study; no answers); the withdrawn
    screen."""
    with acting(con, actor, "respond", f"{study_id}: withdrew", scope=collection.object_of(study_id)) as by:
        collection.withdraw(con, study_id, by.id)
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
