"""What a study's participant sees, through their signed link: the welcome (instructions, consent), one trial at a
time on the study's scale, the design's demographic questions on one form, then the debrief and their completion
code — never gold, models or anyone else's answers (backend.studies.collection)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from backend.actions import studies as study_actions
from backend.identity.actor import Actor
from backend.studies import collection
from backend.studies.collection import (  # noqa: F401 — the page's names
    ENDED,
    LEAVING,
    NATIVE,
    SCREENED,
    TAKEN,
    TYPED,
    WITHDRAWN,
    Completion,
    Screen,
    StudyRefused,
)
from backend.studies.design import MAX_ANSWER, Design  # noqa: F401 — the page's names


def study_of(actor: Actor) -> str | None:
    """The study a participant's link opens (None for anyone else)."""
    kind, _, ident = (actor.scope or "").partition(":")
    return ident if kind == "study" else None


def design(con: duckdb.DuckDBPyConnection, study_id: str) -> Design:
    """What the page needs of the design: the texts and the scale (no items, no gold)."""
    return collection.design_of(collection.study(con, study_id))


def screen(con: duckdb.DuckDBPyConnection, study_id: str, actor: Actor) -> Screen:
    return study_actions.screen(con, study_id, actor=actor)


def join(con: duckdb.DuckDBPyConnection, study_id: str, actor: Actor, screening: dict | None = None) -> None:
    study_actions.join(con, study_id, screening, actor=actor)


def answer(
    con: duckdb.DuckDBPyConnection, study_id: str, position: int, given, measured: dict | None, actor: Actor
) -> None:
    """Store the answer with what the browser measured (moved, rt_ms, left_count, left_ms); the page reads the next
    screen on its next run, so the act does not make it too."""
    study_actions.answer(con, study_id, position, given, measured, actor=actor, then=False)


def give_demographics(con: duckdb.DuckDBPyConnection, study_id: str, answers: dict, actor: Actor) -> Screen:
    """Store the answers to the demographic questions (question name → answer; blank: not given); the done screen."""
    return study_actions.give_demographics(con, study_id, answers, actor=actor)


def withdraw(con: duckdb.DuckDBPyConnection, study_id: str, actor: Actor) -> Screen:
    """The acting participant withdraws: their answers deleted, their link then shows the withdrawn screen."""
    return study_actions.withdraw(con, study_id, actor=actor)


def is_general(actor: Actor) -> bool:
    """Whether the link opened is a study's general link (one URL for a recruitment platform's participants)."""
    return study_of(actor) is not None and collection.is_general(actor.id)


def cookie(study_id: str) -> str:
    """The name of the browser cookie that keeps a general link's participant token for this study."""
    return f"plab-study-{study_id}"


def arrive(
    con: duckdb.DuckDBPyConnection, store: Path, study_id: str, params: dict, kept: str | None, actor: Actor
) -> tuple[str, str | None]:
    """Who opens the general link (preview | resume | taken | withdrawn | welcome, and the token to resume with)."""
    return study_actions.arrive(con, store, study_id, params, kept, actor=actor)


def join_general(
    con: duckdb.DuckDBPyConnection,
    store: Path,
    study_id: str,
    params: dict,
    actor: Actor,
    screening: dict | None = None,
) -> str:
    """Join through the general link with the URL's platform id (and the screening answers); the personal token the
    browser keeps."""
    return study_actions.join_general(con, store, study_id, params, screening, actor=actor)


def no_consent(design: Design, params: dict) -> Completion | None:
    """Where an arrival through the general link who does not consent is sent (None: nowhere, say so instead)."""
    return collection.no_consent(design, collection.arrival(design, params))


def completion(con: duckdb.DuckDBPyConnection, study_id: str, actor: Actor) -> Completion | None:
    """Where a finished general-link participant is sent (None for anyone else)."""
    return study_actions.completion(con, study_id, actor=actor)


def said(exc: Exception) -> str:
    """What a participant reads of a refusal: a study's refusal in plain words (no field name), others as raised."""
    return exc.plain if isinstance(exc, StudyRefused) else str(exc)
