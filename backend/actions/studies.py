"""Studies' writes: create one (a new version only by its maker or an owner), make its participants' links, close
it, make pilot links and delete one participant's data on request (its maker or an owner); and a participant's
joining, answers, demographic answers and withdrawal, each audited, only in the study their link opens (a pilot link:
as a pilot). Personal data (platform ids, demographic answers) are read only through `manage platform ids`."""

from __future__ import annotations

from pathlib import Path

import duckdb

from backend.actions.door import door
from backend.analysis import mixed_model, power_analysis, studies
from backend.identity import links
from backend.identity.actor import Actor
from backend.identity.permissions import acting, audited, check
from backend.metrics.mixed_models import Fit
from backend.store import studies as store_studies
from backend.store.access import StoreRef, opener
from backend.store.writer import atomic
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


@door("create study link")
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
    """`count` signed links to the study (or one per person named), one participant each, each its own act, by the
    study's maker or an owner (an analyst made up to 1,000 links per press to anyone's study: issue 64, item 4)."""
    target, found, maker = collection.object_of(study_id), [], collection.study(con, study_id)["created_by"]
    check(con, actor, "create study link", target, owner=maker)  # before any is made: refused, nothing written
    for person in collection.new_people(con, study_id, count, people):
        with acting(con, actor, "create study link", target, owner=maker, detail=f"for {person}") as by:
            found.append(links.create(con, store, person, target, days, by.id))
    return found


@door("fit model")
def fit_model(store: StoreRef, model: mixed_model.Model, *, actor: Actor) -> Fit:
    """Fit and keep a mixed model of a study's or graded dataset's answers as `actor` (an analyst: a viewer's or a
    rater's `Lab` fitted with no check before issue 64), audited with the formula when it ends."""
    target = f"{model.dataset} {model.formula or '(the default model)'}"[:300]
    with audited(opener(store), actor, "fit model", target):
        return mixed_model.fit(store, model)[0]


@door("run power")
def run_power(store: StoreRef, request: power_analysis.Request, *, actor: Actor):
    """Simulate a power analysis as `actor` (an analyst), audited with its key when it ends; its table."""
    with audited(opener(store), actor, "run power", request.key()):
        return power_analysis.run(request, store)


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
def join(con: duckdb.DuckDBPyConnection, study_id: str, screening: dict | None = None, *, actor: Actor) -> dict:
    """The acting person as a participant (with their answers to the design's screening questions): joining is
    audited, once (looked up and joined in one serialised transaction, so two tabs pressing *Start* at once make
    one participant and one audit row)."""
    by = _participant(con, study_id, actor)
    with atomic(con, "ratings"):
        existing = collection.joined(con, study_id, by.id)
        if existing is not None:
            return existing
        with acting(con, by, "respond", f"{study_id}: joined", scope=collection.object_of(study_id)):
            return collection.join(con, study_id, by.id, pilot=collection.is_pilot(by.id), screening=screening)


@door("respond")
def answer(
    con: duckdb.DuckDBPyConnection,
    study_id: str,
    position: int,
    given,
    measured: dict | None = None,
    *,
    actor: Actor,
    then: bool = True,
) -> Screen | None:
    """Store the acting participant's answer, with what their browser measured (`collection.timing`), one audit row
    with it (a refused one too), and return the next screen; None with `then=False`, for a caller that reads the
    next screen itself (the participant page, on its next run), so one answer reads what it needs once."""
    with acting(con, actor, "respond", f"{study_id}: trial {position + 1}", scope=collection.object_of(study_id)) as by:
        collection.answer(con, study_id, position, given, by.id, measured)
    return collection.screen(con, study_id, by.id) if then else None


@door("respond")
def give_demographics(con: duckdb.DuckDBPyConnection, study_id: str, answers: dict, *, actor: Actor) -> Screen:
    """Store the acting participant's answers to the demographic questions and finish them
    (`collection.give_demographics`), one audit row naming the study (never an answer), a refused one too; the next
    screen."""
    target = f"{study_id}: demographics"
    with acting(con, actor, "respond", target, scope=collection.object_of(study_id)) as by:
        collection.give_demographics(con, study_id, answers, by.id)
    return collection.screen(con, study_id, by.id)


@door("respond")
def withdraw(con: duckdb.DuckDBPyConnection, study_id: str, *, actor: Actor) -> Screen:
    """The acting participant withdraws: their data deleted, audited (who, which study; no answers); the withdrawn
    screen."""
    with acting(con, actor, "respond", f"{study_id}: withdrew", scope=collection.object_of(study_id)) as by:
        collection.withdraw(con, study_id, by.id)
    return collection.screen(con, study_id, by.id)


@door("export")
def archive(
    con: duckdb.DuckDBPyConnection, study_id: str, formula: str = "", power_key: str | None = None, *, actor: Actor
) -> dict[str, bytes]:
    """The study's archive files, once `actor` may export (a read: a refusal is audited, an export is not); its
    methods.md reports the kept fit of `formula` ("": the default model) and the power run `power_key`."""
    check(con, actor, "export", f"study:{study_id}")
    return studies.archive(con, study_id, formula=formula, power_key=power_key)


@door("export")
def archive_zip(
    con: duckdb.DuckDBPyConnection, study_id: str, formula: str = "", power_key: str | None = None, *, actor: Actor
) -> bytes:
    check(con, actor, "export", f"study:{study_id}")
    return studies.archive_zip(con, study_id, formula=formula, power_key=power_key)


@door("create general link")
def general_link(
    con: duckdb.DuckDBPyConnection, store: Path, study_id: str, cap: int, days: float = 30, *, actor: Actor
) -> links.Link:
    """One general link to the study for a recruitment platform (its design's `platform`): everyone who opens it
    with a platform id becomes a participant, at most `cap` of them; by the study's maker or an owner, audited."""
    row = collection.study(con, study_id)
    target = collection.object_of(study_id)
    with acting(con, actor, "create general link", target, owner=row["created_by"], detail=f"cap {cap}") as by:
        person = collection.general_person(con, study_id, cap)
        return links.create(con, store, person, target, days, by.id, cap=cap)


def _general(con: duckdb.DuckDBPyConnection, study_id: str, actor: Actor) -> tuple[Actor, dict]:
    """The acting general link's holder and its row; StudyRefused for any other link."""
    by = _participant(con, study_id, actor)
    row = links.row_of(con, by.link_id or "")
    if not collection.is_general(by.id) or row is None or row["cap"] is None:
        raise collection.StudyRefused("link", "not a general link", "This link is not a study's general link.")
    return by, row


@door("respond")
def arrive(
    con: duckdb.DuckDBPyConnection, store: Path, study_id: str, params: dict, kept: str | None, *, actor: Actor
) -> tuple[str, str | None]:
    """Who opens the general link now, from its URL's `params` and the token their browser `kept` (or None):
    ("preview", None) for a platform's preview, ("resume", token) when that browser holds the participant with this
    platform id, ("taken", None) when another browser does, ("withdrawn", None) when this browser's participant
    withdrew, else ("welcome", None). Writes nothing."""
    _general(con, study_id, actor)
    came = collection.arrival(collection.design_of(collection.study(con, study_id)), params)
    if came.preview:
        return "preview", None
    mine = None
    if kept:
        try:
            mine = links.opened(con, store, kept)
        except links.LinkRefused:
            mine = None
    ours = mine is not None and mine.scope == collection.object_of(study_id)
    if ours and store_studies.deletion(con, study_id, mine.id) is not None:
        return "withdrawn", None
    existing = store_studies.by_platform(con, study_id, came.platform_id)
    if existing is None and store_studies.withdrawn_platform(con, study_id, came.platform_id) is not None:
        return "withdrawn", None  # the id withdrew (in any browser): not started again unless a researcher allows it
    if existing is None or existing["browser_link"] is None:
        return "welcome", None
    if mine is not None and mine.id == existing["participant_id"] and mine.link_id == existing["browser_link"]:
        return "resume", kept
    return "taken", None


@door("respond")
def join_general(
    con: duckdb.DuckDBPyConnection,
    store: Path,
    study_id: str,
    params: dict,
    screening: dict | None = None,
    *,
    actor: Actor,
) -> str:
    """The general link's holder joins as a new participant with the platform id their URL carries (or takes over
    a released one); the token of the personal link their browser keeps from now on. Audited once, naming the
    study, never the platform id."""
    by, row = _general(con, study_id, actor)
    came = collection.arrival(collection.design_of(collection.study(con, study_id)), params)
    target = f"{study_id}: joined through {by.id}"
    expires = max((row["expires_at"] - store_studies.now()).total_seconds() / 86400, 1 / 24)

    def issue(person: str) -> tuple[str, str]:
        made = links.create(con, store, person, collection.object_of(study_id), expires, row["created_by"])
        return made.link_id, made.token

    with acting(con, by, "respond", target, scope=collection.object_of(study_id)):
        return collection.general_join(con, study_id, row, came, issue, screening)[1]


@door("manage platform ids")
def release(con: duckdb.DuckDBPyConnection, study_id: str, platform_id: str, *, actor: Actor) -> str:
    """Free a platform id for another browser on request (the study's maker or an owner): the old browser's link
    is revoked, the answers stay, and the next browser to open the general link with that id continues them; or let
    an id that withdrew start again as a new participant. The participant's id; audited naming the participant, not
    the platform id."""
    row = collection.study(con, study_id)
    with acting(con, actor, "manage platform ids", f"{study_id}: release", owner=row["created_by"]) as by:
        found = store_studies.by_platform(con, study_id, str(platform_id))
        person = collection.release(con, study_id, platform_id)
        if found is not None and found["browser_link"]:
            links.revoke(con, found["browser_link"], by.id)
        return person


@door("manage platform ids")
def mark_returned(con: duckdb.DuckDBPyConnection, study_id: str, who: str, *, actor: Actor) -> str:
    """Mark a participant's submission returned on the platform (the study's maker or an owner; by platform id or
    participant id): their place and list slot are freed, their answers stay. The participant's id; audited naming
    the participant, not the platform id."""
    row = collection.study(con, study_id)
    with acting(con, actor, "manage platform ids", f"{study_id}: returned", owner=row["created_by"]):
        return collection.mark_returned(con, study_id, who)


@door("manage platform ids")
def platform_ids(con: duckdb.DuckDBPyConnection, study_id: str, *, actor: Actor):
    """The study's participants' platform ids (store_studies.platform_ids), shown only to its maker or an owner;
    reading them is audited."""
    row = collection.study(con, study_id)
    with acting(con, actor, "manage platform ids", f"{study_id}: read platform ids", owner=row["created_by"]):
        return store_studies.platform_ids(con, study_id)


@door("manage platform ids")
def archive_with_platform_ids(
    con: duckdb.DuckDBPyConnection, study_id: str, formula: str = "", power_key: str | None = None, *, actor: Actor
) -> bytes:
    """The study's archive with `platform_ids.csv` and `demographics.csv` added, for the lab's own records (the
    study's maker or an owner; audited): the shareable archive never holds them."""
    row = collection.study(con, study_id)
    with acting(con, actor, "manage platform ids", f"{study_id}: archive with platform ids", owner=row["created_by"]):
        return studies.archive_zip(con, study_id, True, formula, power_key)


@door("manage platform ids")
def demographics(con: duckdb.DuckDBPyConnection, study_id: str, *, actor: Actor):
    """The study's participants' demographic answers (analysis.studies.demographics: one column per question),
    personal data shown only to its maker or an owner; reading them is audited."""
    row = collection.study(con, study_id)
    with acting(con, actor, "manage platform ids", f"{study_id}: read demographics", owner=row["created_by"]):
        return studies.demographics(con, study_id)


def completion(con: duckdb.DuckDBPyConnection, study_id: str, *, actor: Actor) -> collection.Completion | None:
    """Where the acting participant is sent after their last answer (`collection.completion`), read as them."""
    return collection.completion(con, study_id, _participant(con, study_id, actor).id)
