"""A study from its design to people's answers: create (the study and its own dataset, one transaction), links
(one signed link per participant; a link's object is `study:<id>`), join (the next list), the screen a participant
is on, answer (stored as given, at their next position only), the demographic questions after the last trial
(`give_demographics`: a participant with questions to answer finishes only with them), close.

A pilot (issue 56, item 4) is the researcher taking the study as a participant through a pilot link (a signed link
to the study whose person is `pilot-<id>-NNN`, a prefix no real participant's id may have): the same screens and
checks, stored with `pilot` set, given the lists in turn (pilot n previews list n mod lists) without taking a real
participant's slot, making no crowd rating and never freezing the design; replacing the design deletes pilot
answers. A participant's data leave the store when they withdraw (`withdraw`) or a researcher deletes them on
request (`delete_participant`): responses, crowd ratings, demographics and participant row go in one transaction
and the deletions log keeps who, when and why, so their link shows the withdrawn screen and a restore deletes them
again.

The study's dataset (named like the study) holds copies of the items it shows — same example ids, so any run on
the source dataset lines up — with `study_role` (target | control) among their facets, and a description whose
`gradient` spec (criterion, scale, grouped by condition then item, controls left out, runs read from the source
dataset) lets the Gradient page, Explore, Projection (when the source has a projection spec) and the model cards
show the responses like a built-in study's. Every answer on an item is a crowd rating of that dataset.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import secrets
import string
from dataclasses import dataclass, field
from datetime import timedelta
from urllib.parse import quote

import duckdb
import pandas as pd

from backend.datasets.catalogue import UnknownDataset, describe
from backend.datasets.description import Description
from backend.store import links as store_links
from backend.store import queries
from backend.store import studies as store_studies
from backend.store.bundle import Bundle
from backend.store.writer import atomic, author, in_transaction, replace_dataset
from backend.studies import exclusions, trials
from backend.studies.design import (
    MTURK_PREVIEW,
    Design,
    Items,
    Platform,
    StudyError,
    items,
    list_count,
    order,
    parse,
    participant_seed,
)

ROLE = "study_role"
NATIVE = ("yes", "no")


WITHDRAWN = "Your answers were withdrawn from this study and deleted. Thank you for your time."
SCREENED = "screened out"
ENDED = {  # what a participant reads once they no longer hold a place (issue 63, items 4 and 5)
    SCREENED: "Thank you for your interest. This study is looking for participants with other answers, so it ends "
    "here for you.",
    "timed out": "Your time for this study ran out, so your place went to someone else. Thank you for your time.",
    "returned": "Your submission was returned on the recruitment site, so this study has ended for you. Thank you "
    "for your time.",
}
WITHDREW = (
    "You withdrew from this study earlier, so it cannot be started again with your id. If you think this is a "
    "mistake, please write to the researcher."
)
LEAVING = {  # what a withdrawn participant does on the platform they came from (issue 63, item 3)
    "prolific": "If you came from Prolific, please return your submission there (the study's page on Prolific has a "
    "Return button), so that your place can go to someone else.",
    "mturk": "If you came from MTurk, please return the HIT there, so that it can go to another worker.",
    "sona": "If you signed up through SONA, you need not do anything more here; write to the researcher there if "
    "you have a question about your credit.",
}
PILOT = "pilot-"  # the start of every pilot participant's id; no real participant's may start so
GENERAL = "general-"  # the start of every general link's person (one URL for a platform's participants)
TAKEN = (
    "This study was already started with your id in another browser or device, and only that one can continue it. "
    "If you cannot go back to it, write to the researcher (through the platform) and ask them to release your id."
)
FULL = "This study has all the participants it needs. Thank you for your interest."
STALE = "This question was already answered in another tab or window; here is the next one."
TIMING = ("rt_ms", "left_count", "left_ms")  # what the participant's browser measured per answer (issue 56)
TYPED = ("regions", "choices", "sides")  # what it measured of a reading or Maze trial's regions (trials.py checks them)


class StudyRefused(ValueError):
    """An action the study does not allow now (closed, frozen, an answer out of turn): says why, naming the field
    for the researcher; `plain` is what a participant reads (no field name). Audited as 'refused' (the study's rules
    said no), not 'failed'."""

    outcome = "refused"

    def __init__(self, field: str, problem: str, plain: str | None = None):
        self.field = field
        self.plain = plain or problem[:1].upper() + problem[1:]
        super().__init__(f"{field}: {problem}")


def object_of(study_id: str) -> str:
    """A signed link's object for this study."""
    return f"study:{study_id}"


def is_pilot(person: str) -> bool:
    """Whether a link's person is a pilot participant (the id is signed in the link: nobody makes themselves one)."""
    return str(person).startswith(PILOT)


def design_of(row: dict) -> Design:
    return _parsed(row["design_text"], f"study {row['study_id']}")


@functools.lru_cache(maxsize=64)
def _parsed(text: str, name: str) -> Design:
    """A design parsed once per text (a frozen Design; every answer needs it, and parsing YAML took ~8 ms)."""
    return parse(text, name)


def study(con: duckdb.DuckDBPyConnection, study_id: str) -> dict:
    found = store_studies.study(con, study_id)
    if found is None:
        known = list(store_studies.listing(con)["study_id"])
        raise StudyRefused("study", f"no study {study_id!r}; the studies are {known}")
    return found


def create(
    con: duckdb.DuckDBPyConnection,
    text: str,
    path: str = "study.yaml",
    replace: bool = False,
) -> str:
    """A new study (or, with `replace`, a new version of one nobody has answered yet) from a design's YAML; its id.
    StudyError names the file, line and field at fault; nothing is written then. As a person's act (who may
    create, who may replace): `actions.studies.create`."""
    design = parse(text, path)
    existing = store_studies.study(con, design.name)
    if existing is not None:
        if not replace:
            raise StudyRefused("name", f"a study {design.name!r} exists; change it with --replace, or rename")
        if existing["frozen_at"] is not None:
            raise StudyRefused(
                "name", f"study {design.name!r} is frozen: its first response came {existing['frozen_at']:%Y-%m-%d}"
            )
    elif queries.dataset_exists(con, design.name):
        raise StudyError(path, f"a dataset {design.name!r} exists; a study makes its own: rename it", None, "name")
    try:
        source = describe(con, design.dataset)
    except UnknownDataset as exc:
        raise StudyError(path, str(exc), None, "dataset") from None
    rows = store_studies.example_rows(con, design.dataset)
    found = items(design, rows, path)
    _check_texts(design, rows, path)
    order(design, found, 0, participant_seed(design, 0))  # an impossible `separate` fails now, not at a join
    bundle = _dataset(design, source, rows, found, pairs=queries.pairs_frame(con, design.dataset))
    if existing is None:
        row = {"study_id": design.name, "dataset_id": design.dataset, "version": 1, "status": "open"}
        row |= {"design": design.as_dict(), "design_text": text, "created_by": author()}
        replace_dataset(con, bundle, more=[store_studies.insert(row)])
    else:
        replace_dataset(con, bundle, more=store_studies.replacing(design.name, design.as_dict(), text))
    return design.name


def _fields(rows: pd.DataFrame | dict) -> dict:
    """The fields a text template may use, from one item (the first row, or the item's row as a dict): its columns
    and its facets."""
    first = rows if isinstance(rows, dict) else rows.iloc[0]
    columns = {k: ("" if v is None or (isinstance(v, float) and v != v) else v) for k, v in first.items()}
    return {**(first["extra"] or {}), **{k: v for k, v in columns.items() if k != "extra"}}


def _check_texts(design: Design, rows: pd.DataFrame, path: str) -> None:
    """Every field a template names is one the items have; a Maze item has one foil per region after the first."""
    known = _fields(rows)
    kind = design.trial
    templates = {"text": design.text, "question": design.question, "trial": kind.question + kind.answer}
    for key, template in templates.items():
        for _, name, _, _ in string.Formatter().parse(template):
            if name is not None and name not in known:
                raise StudyError(path, f"{{{name}}} is not a field of the items; they have {sorted(known)}", None, key)
    if kind.kind != "maze":
        return
    shown = rows if design.split is None else rows[rows["split"] == design.split]  # the items the study can show
    for row in shown.to_dict("records"):
        fields = _fields(row)
        if kind.foils not in fields:
            raise StudyError(path, f"item {row['example_id']!r} has no facet {kind.foils!r}", None, "trial", "foils")
        try:
            trials.maze_foils(kind, kind.split(design.text.format_map(fields)), fields[kind.foils])
        except ValueError as exc:
            raise StudyError(path, f"item {row['example_id']!r}: {exc}", None, "trial", "foils") from None


def _dataset(design: Design, source: Description, rows: pd.DataFrame, found: Items, pairs: pd.DataFrame) -> Bundle:
    roles = dict.fromkeys(found.grid.to_numpy().ravel(), "target") | dict.fromkeys(found.controls, "control")
    chosen = rows[rows["example_id"].isin(roles)].copy()
    chosen["extra"] = [json.dumps(extra | {ROLE: roles[e]}) for e, extra in zip(chosen["example_id"], chosen["extra"])]
    scale = design.scale
    weights = {"E": scale.max} | ({"C": scale.min} if scale.min < 0 else {})
    formula = " + ".join(f"{w:g}·P({label})" for label, w in weights.items())
    by = list(dict.fromkeys([design.condition, design.item]))
    gradient = {
        "criterion": design.criterion,
        "scale": [scale.min, scale.max],
        "by": by,
        "leave_out": {ROLE: ["control"]},
        "model": weights,
        "formula": f"{formula}: a run's expected answer on the study's scale",
        "runs_from": design.dataset,
        "study": design.name,
    }
    projection = dict(source.projection)
    if design.trial.kind != "rating":  # no crowd rating on a scale: nothing for Gradient or Projection to read
        gradient, projection = {}, {}
    if projection:
        least = design.survives if design.survives is not None else _survives(design)
        kind = "label" if design.scale.kind == "choice" else "least"
        projection["human"] = {"criterion": design.criterion, kind: least}
    description = Description(
        source.task,
        source.labels,
        source.positive,
        (),
        facets=tuple(dict.fromkeys([*source.facets, ROLE, design.item, design.condition])),
        user=True,
        columns=source.columns,
        projection=projection,
        gradient=gradient,
    )
    kept = pairs[pairs["example_a"].isin(roles) & pairs["example_b"].isin(roles)]
    return Bundle(
        dataset={
            "dataset_id": design.name,
            "title": f"{design.name} (study over {design.dataset})",
            "source": f"study {design.name}",
            "sha256": design_sha(design),
            "license": "yours",
            "description": description.as_dict(),
        },
        examples=chosen.drop(columns=["dataset_id"]),
        pairs=[row | {"pair_id": f"{design.name}/{row['pair_id']}"} for row in kept.to_dict("records")],
        notes=[f"made by study {design.name} from {design.dataset}:\n{design.source}"],
    )


def design_sha(design: Design) -> str:
    return hashlib.sha256(design.source.encode()).hexdigest()


def _survives(design: Design):
    """The least answer that counts as the content surviving, when the design does not say: the slider's middle, a
    likert scale's first point above its middle (CommitmentBank's +1), a choice scale's first option."""
    scale = design.scale
    if scale.kind == "choice":
        return scale.options[0][0]
    middle = (scale.min + scale.max) / 2
    return middle if scale.kind == "slider" else float(int(middle) + 1)


def new_people(con: duckdb.DuckDBPyConnection, study_id: str, count: int, people: list[str] | None) -> list[str]:
    """Who the study's next links are for: the people named, or `count` numbered <study>-001, ... after the links it
    has; StudyRefused when the study is closed or the count is out of range."""
    row = study(con, study_id)
    if row["status"] != "open":
        raise StudyRefused("study", f"study {study_id!r} is closed: it takes no more participants")
    if people is not None:
        piloting = [person for person in people if str(person).startswith((PILOT, GENERAL))]
        if piloting:
            raise StudyRefused(
                "people",
                f"{piloting}: ids starting {PILOT!r} are pilot participants', {GENERAL!r} general links'; rename them",
            )
        return list(people)
    if not isinstance(count, int) or not 1 <= count <= 10_000:
        raise StudyRefused("count", f"{count!r}; expected 1 to 10,000 links")
    made = sum(not is_pilot(person) for person in store_links.listing(con, object_of(study_id))["person"])
    return [f"{study_id}-{made + n:03d}" for n in range(1, count + 1)]


def pilot_people(con: duckdb.DuckDBPyConnection, study_id: str, count: int) -> list[str]:
    """Who the study's next pilot links are for: pilot-<study>-NNN after the pilot links it has; StudyRefused when
    the study is closed or the count is out of range (1 to 100)."""
    row = study(con, study_id)
    if row["status"] != "open":
        raise StudyRefused("study", f"study {study_id!r} is closed: there is nothing left to pilot")
    if not isinstance(count, int) or not 1 <= count <= 100:
        raise StudyRefused("count", f"{count!r}; expected 1 to 100 pilot links")
    made = sum(is_pilot(person) for person in store_links.listing(con, object_of(study_id))["person"])
    return [f"{PILOT}{study_id}-{made + n:03d}" for n in range(1, count + 1)]


def joined(con: duckdb.DuckDBPyConnection, study_id: str, person: str) -> dict | None:
    """The person as a participant when they have joined, else None."""
    return store_studies.participant(con, study_id, person)


def screened(design: Design, answers: dict | None) -> bool:
    """Whether the screening answers (question name → option) let the participant take part; StudyRefused naming
    the question when one is unanswered or not an option. True for a design without screening."""
    answers = answers or {}
    for question in design.screening:
        given = answers.get(question.name)
        if given not in question.options:
            expected = f"{given!r}; expected one of {list(question.options)}"
            raise StudyRefused(f"screening.{question.name}", expected, "Please answer every question before you start.")
    return all(answers[q.name] in q.accept for q in design.screening)


def join(
    con: duckdb.DuckDBPyConnection, study_id: str, person: str, pilot: bool = False, screening: dict | None = None
) -> dict:
    """The person as a participant (joined now, given the list with fewest participants, ties to the lowest number,
    and an order from their recorded seed), or as they were when they joined before. A `pilot` participant takes
    the next list in turn and no real participant's slot. Refused once their data were withdrawn or deleted. As a
    participant's act (only the study their link opens): `actions.studies.join`."""
    _not_withdrawn(con, study_id, person)
    existing = joined(con, study_id, person)
    if existing is not None:
        return existing
    row = study(con, study_id)
    if row["status"] != "open":
        raise StudyRefused("study", "this study is closed: it takes no more answers. Thank you for your interest.")
    try:
        return _join(con, study_id, design_of(row), person, pilot, screening)
    except duckdb.ConstraintException:  # another tab's join committed first (its own transaction): theirs holds
        if in_transaction(con):
            raise  # the outer transaction is spoilt: the act that opened it reports it
        return joined(con, study_id, person)


def _not_withdrawn(con: duckdb.DuckDBPyConnection, study_id: str, person: str) -> None:
    gone = store_studies.deletion(con, study_id, person)
    if gone is not None:
        raise StudyRefused("participant", f"{person}'s data were deleted {gone['deleted_at']:%Y-%m-%d}", WITHDRAWN)


def expire(con: duckdb.DuckDBPyConnection, study_id: str, design: Design) -> int:
    """Time out (inside the caller's transaction) every participant who has not finished within the design's
    time_limit, freeing their place and list slot; how many. Done where places are counted and answers taken."""
    if design.time_limit is None:
        return 0
    return store_studies.time_out(con, study_id, store_studies.now() - timedelta(minutes=design.time_limit))


def _still_holding(design: Design, participant: dict, why: str | None) -> None:
    """StudyRefused in the participant's plain words once they no longer hold a place (`why`: their row's `ended`):
    timed out (by the time limit, whether or not it was marked yet) or returned."""
    late = design.time_limit is not None and participant["started_at"] < store_studies.now() - timedelta(
        minutes=design.time_limit
    )
    if why is None and late and participant["finished_at"] is None and not participant["pilot"]:
        why = "timed out"
    if why is not None and participant["finished_at"] is None:
        raise StudyRefused("participant", f"{participant['participant_id']} {why}", ENDED[why])


def _join(
    con: duckdb.DuckDBPyConnection,
    study_id: str,
    design: Design,
    person: str,
    pilot: bool = False,
    screening: dict | None = None,
) -> dict:
    """Join the person (see `join`); one whose screening answers the design does not accept is joined and ended at
    once as screened out (no place, no list slot held), with the screened_out completion code."""
    passed = screened(design, screening)  # checked before anything is written
    with atomic(con, "ratings"):  # counted inside the serialised transaction: two joins at once get two lists
        existing = store_studies.participant(con, study_id, person)
        if existing is not None:  # two tabs pressed Start at once: the first one's participant is the one
            return existing
        expire(con, study_id, design)  # a place held past the time limit is free again
        found = items(design, store_studies.example_rows(con, study_id))
        index = store_studies.participant_count(con, study_id, pilot)
        lists = list_count(design, found)
        counts = store_studies.list_counts(con, study_id)
        if pilot:  # each pilot previews the next list: a real participant's balance is not touched
            list_no = index if lists is None else index % lists
        else:
            list_no = index if lists is None else min(range(lists), key=lambda n: (counts.get(n, 0), n))
        seed = participant_seed(design, index)
        participant = {
            "study_id": study_id,
            "participant_id": person,
            "list_no": list_no,
            "seed": seed,
            "trials": order(design, found, list_no, seed),
            "started_at": store_studies.now(),
            "finished_at": None,
            "completion_code": None,
            "pilot": pilot,
        }
        store_studies.add_participant(con, participant)
        if not passed:
            store_studies.end(con, study_id, person, SCREENED, design.completion_codes.get("screened_out", ""))
    return participant


def is_general(person: str) -> bool:
    """Whether a link's person is a general link (one URL for every participant of a recruitment platform)."""
    return str(person).startswith(GENERAL)


def general_person(con: duckdb.DuckDBPyConnection, study_id: str, cap: int) -> str:
    """Who the study's next general link is for (general-<study>-NN); StudyRefused when the study is closed, has no
    platform in its design, or the cap is out of range (1 to 100,000)."""
    row = study(con, study_id)
    if row["status"] != "open":
        raise StudyRefused("study", f"study {study_id!r} is closed: it takes no more participants")
    if design_of(row).platform is None:
        raise StudyRefused(
            "platform",
            f"study {study_id!r} names no platform: add e.g. platform: {{name: prolific}} to its design "
            "(create --replace) before making a general link",
        )
    if not isinstance(cap, int) or isinstance(cap, bool) or not 1 <= cap <= 100_000:
        raise StudyRefused("cap", f"{cap!r}; expected 1 to 100,000 participants")
    made = sum(is_general(person) for person in store_links.listing(con, object_of(study_id))["person"])
    return f"{GENERAL}{study_id}-{made + 1:02d}"


@dataclass(frozen=True)
class Arrival:
    """Who a general link's URL says arrives: the platform's id for them, the other parameters kept, and whether
    it is only a preview (MTurk's, before a worker accepts the HIT: no participant is made)."""

    platform: str
    platform_id: str
    keep: dict
    preview: bool = False


def arrival(design: Design, params: dict) -> Arrival:
    """The arrival a general link's URL parameters name (`params`: name → value, as the URL gave them);
    StudyRefused (plain words for the participant) when the platform's id is missing or malformed."""
    platform = design.platform
    if platform is None:
        raise StudyRefused("platform", "this study names no platform", "This link is not open to participants yet.")
    keep = {name: str(params[name])[:500] for name in platform.keep if params.get(name) not in (None, "")}
    if platform.name == "mturk" and keep.get("assignmentId") == MTURK_PREVIEW:
        return Arrival(platform.name, "", keep, preview=True)
    given = str(params.get(platform.id) or "").strip()
    if not given or len(given) > 200 or not given.isprintable():
        raise StudyRefused(
            platform.id,
            f"missing or malformed {platform.id}",
            f"This link needs your {platform.name} id: open the study from {platform.name}, not from a copied link.",
        )
    return Arrival(platform.name, given, keep)


def general_join(
    con: duckdb.DuckDBPyConnection, study_id: str, general: dict, came: Arrival, issue, screening: dict | None = None
) -> tuple[dict, str]:
    """A general link's arrival as a participant: a new one (joined as `join` does, under a new random id, the
    platform's id stored with them) unless the link's cap is reached, or the one with this platform id when a
    researcher released it for another browser. `issue(participant_id)` makes the personal link their browser will
    hold, returning (link id, token). Returns (participant, token). StudyRefused: a preview, the cap reached, or
    the platform id already started in another browser (TAKEN). As an act: `actions.studies.join_general`."""
    if came.preview:
        raise StudyRefused("platform", "a preview makes no participant", "Accept the task to start the study.")
    row = study(con, study_id)
    if row["status"] != "open":
        raise StudyRefused("study", "this study is closed: it takes no more answers. Thank you for your interest.")
    with atomic(con, "ratings"):  # checked and written in one serialised transaction: one participant per id
        existing = store_studies.by_platform(con, study_id, came.platform_id)
        if existing is not None:
            if existing["browser_link"] is not None:
                raise StudyRefused("platform", f"{came.platform_id} has already started", TAKEN)
            link_id, token = issue(existing["participant_id"])
            store_studies.bind_browser(con, study_id, existing["participant_id"], link_id)
            return store_studies.participant(con, study_id, existing["participant_id"]), token
        expire(con, study_id, design_of(row))  # places held past the time limit count no more
        if store_studies.withdrawn_platform(con, study_id, came.platform_id) is not None:
            raise StudyRefused("platform", f"{came.platform_id} withdrew from this study", WITHDREW)
        if store_studies.general_count(con, general["link_id"]) >= general["cap"]:
            raise StudyRefused("cap", f"the general link's cap of {general['cap']} is reached", FULL)
        person = f"{study_id}-{secrets.token_hex(6)}"  # random: the platform id never names them in the data
        participant = _join(con, study_id, design_of(row), person, screening=screening)
        link_id, token = issue(person)
        store_studies.set_platform(
            con,
            study_id,
            person,
            {
                "platform": came.platform,
                "platform_id": came.platform_id,
                "platform_keep": came.keep,
                "general_link": general["link_id"],
                "browser_link": link_id,
            },
        )
    return participant, token


# What each platform fills in for a participant when the study URL carries its placeholder (Prolific: "URL
# parameters" in the study's setup; SONA: %SURVEY_CODE%, in the study's URL; MTurk appends its own parameters to an
# external question's URL).
PLACEHOLDERS = {"prolific": "{{{{%{name}%}}}}", "sona": "%SURVEY_CODE%"}  # str.format: {{{{ gives {{


def general_url(con: duckdb.DuckDBPyConnection, study_id: str, url: str) -> str:
    """A general link's URL as its platform takes it: with the placeholders the platform replaces by the
    participant's id and the kept parameters (Prolific's {{%PROLIFIC_PID%}}, SONA's %SURVEY_CODE%); as it is for
    MTurk and other platforms, which append their own."""
    platform = design_of(study(con, study_id)).platform
    if platform is None or platform.name not in PLACEHOLDERS:
        return url
    names = [platform.id, *platform.keep] if platform.name == "prolific" else [platform.id]
    return url + "".join(f"&{name}={PLACEHOLDERS[platform.name].format(name=name)}" for name in names)


def release(con: duckdb.DuckDBPyConnection, study_id: str, platform_id: str) -> str:
    """Free a platform id for another browser on request (their old browser's link is revoked by the caller, the
    answers stay, and the next browser that opens the general link with the id continues them), or let an id that
    withdrew start again as a new participant; the participant's id. StudyRefused when no participant has it. As an
    act: `actions.studies.release`."""
    study(con, study_id)
    with atomic(con, "ratings"):
        found = store_studies.by_platform(con, study_id, str(platform_id))
        if found is None:
            gone = store_studies.withdrawn_platform(con, study_id, str(platform_id))
            if gone is not None:
                store_studies.allow_platform(con, study_id, str(platform_id))
                return gone
            raise StudyRefused("platform_id", f"study {study_id!r} has no participant with that platform id")
        store_studies.bind_browser(con, study_id, found["participant_id"], None)
    return found["participant_id"]


def mark_returned(con: duckdb.DuckDBPyConnection, study_id: str, who: str) -> str:
    """The researcher marks a participant's submission returned on the platform (`who`: their platform id or
    participant id): they no longer hold a place under the cap nor in their list's balance, and their link says the
    study has ended for them; their answers stay. The participant's id. StudyRefused for no such participant or one
    who has finished. As an act: `actions.studies.mark_returned`."""
    study(con, study_id)
    with atomic(con, "ratings"):
        found = store_studies.by_platform(con, study_id, str(who))
        person = found["participant_id"] if found is not None else str(who)
        row = store_studies.participant(con, study_id, person)
        if row is None or row["pilot"]:
            raise StudyRefused("participant", f"study {study_id!r} has no participant or platform id {who!r}")
        if row["finished_at"] is not None:
            raise StudyRefused("participant", f"{person} has finished: a finished submission is not returned")
        store_studies.end(con, study_id, person, "returned")
    return person


@dataclass(frozen=True)
class Completion:
    """Where a finished general-link participant is sent: `url` (followed by the browser, shown as a link too);
    for MTurk `fields` are POSTed there as a form."""

    url: str
    fields: dict


MTURK_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")


def completion(con: duckdb.DuckDBPyConnection, study_id: str, person: str) -> Completion | None:
    """The finished participant's completion URL from the design's template ({code}, {id}, kept parameters, each
    URL-quoted); None before they finish, or when they did not come through a general link or the template needs a
    parameter their URL lacked (MTurk: a turkSubmitTo other than mturk.com or its sandbox)."""
    came = store_studies.platform_of(con, study_id, person)
    platform = design_of(study(con, study_id)).platform
    if came is None or platform is None:
        return None
    if came["finished_at"] is None and store_studies.ended(con, study_id, person) != SCREENED:
        return None
    code = store_studies.participant(con, study_id, person)["completion_code"] or ""
    return _sent_to(platform, came["platform_keep"], came["platform_id"], code)


def no_consent(design: Design, came: Arrival) -> Completion | None:
    """Where an arrival who does not consent is sent: the platform's completion URL with the design's no_consent
    code (no participant is made); None without that code or a platform URL."""
    code = design.completion_codes.get("no_consent")
    if code is None or design.platform is None or came.preview:
        return None
    return _sent_to(design.platform, came.keep, came.platform_id, code)


def _sent_to(platform: Platform, kept: dict, platform_id: str, code: str) -> Completion | None:
    """The platform's completion URL (or MTurk's form) for one participant's code."""
    if platform.completion == "mturk":
        base = str(kept.get("turkSubmitTo", "")).rstrip("/")
        if base not in MTURK_HOSTS or "assignmentId" not in kept:
            return None
        return Completion(f"{base}/mturk/externalSubmit", {"assignmentId": kept["assignmentId"], "code": code})
    values = {name: quote(str(value), safe="") for name, value in (kept | {"code": code, "id": platform_id}).items()}
    try:
        return Completion(platform.completion.format_map(values), {})
    except (KeyError, AttributeError):  # a template naming a parameter the URL lacked; no completion URL at all
        return None


@dataclass(frozen=True)
class Screen:
    """What a participant sees now: `kind` welcome | trial | demographics (the design's questions, on one form, after
    the last trial) | done (with the completion code and the design's debrief) | withdrawn; a trial's text, question
    and scale (never a gold label, a model's answer or anyone else's)."""

    kind: str
    position: int = 0
    total: int = 0
    trial_kind: str = ""  # practice | target | control | attention | native (the page shows practice as such)
    text: str = ""
    question: str = ""
    code: str = ""
    pilot: bool = False  # a pilot participant's (the page says their answers are not analysed)
    debrief: str = ""  # done: the design's debrief, shown above the code and before the platform's completion URL
    shown: dict = field(default_factory=dict)  # a forced choice's options, a reading or Maze trial's regions (foils)


def screen(con: duckdb.DuckDBPyConnection, study_id: str, person: str) -> Screen:
    """The screen the participant is on: welcome before they join, then each trial, then the code; withdrawn once
    their data were withdrawn or deleted."""
    row = study(con, study_id)
    if store_studies.deletion(con, study_id, person) is not None:
        return Screen("withdrawn")
    participant = store_studies.participant(con, study_id, person)
    if participant is None:
        if row["status"] != "open":
            raise StudyRefused("study", "this study is closed: it takes no more answers. Thank you for your interest.")
        return Screen("welcome")
    sequence = participant["trials"]
    done = store_studies.answered(con, study_id, person)
    design = design_of(row)
    why = store_studies.ended(con, study_id, person)
    if why == SCREENED:
        code = participant["completion_code"] or ""
        return Screen("screened", 0, len(sequence), code=code, pilot=participant["pilot"])
    _still_holding(design, participant, why)
    asked = done >= len(sequence) and participant["finished_at"] is None and bool(design.demographics)
    if done >= len(sequence) and not asked:
        code = participant["completion_code"] or ""
        return Screen("done", done, len(sequence), code=code, pilot=participant["pilot"], debrief=design.debrief)
    if row["status"] != "open":
        raise StudyRefused("study", "this study was closed before you finished. Thank you for your answers.")
    if asked:
        return Screen("demographics", done, len(sequence), pilot=participant["pilot"])
    trial = sequence[done]
    text, question = _texts(con, design, study_id, trial)
    shown = _shown(con, design, study_id, trial, text)
    return Screen("trial", done, len(sequence), trial["kind"], text, question, pilot=participant["pilot"], shown=shown)


def _shown(con: duckdb.DuckDBPyConnection, design: Design, study_id: str, trial: dict, text: str) -> dict:
    """What a trial of the design's type shows besides the text (issue 63, item 6): a forced choice's members' texts
    in their recorded order (sent back as their place in it, so no condition name reaches the browser); a reading
    trial's regions and comprehension question; a Maze trial's regions and foils."""
    kind = design.trial
    if trial["kind"] == "native" or kind.kind == "rating":
        return {}
    if kind.kind == "forced_choice":
        members = [_fields(store_studies.example_row(con, study_id, e)) for e in trial["shown"]]
        return {"options": [design.text.format_map(fields) for fields in members]}
    regions = kind.split(text)
    if kind.kind == "reading":
        fields = _item_fields(con, study_id, trial)  # a practice item has none: no comprehension question
        question = kind.question.format_map(fields) if kind.question and fields else ""
        return {"regions": regions, "question": question, "answers": list(kind.answers) if question else []}
    return {"regions": regions, "foils": _foils(con, design, study_id, trial, regions)}


def _item_fields(con: duckdb.DuckDBPyConnection, study_id: str, trial: dict) -> dict:
    """The item's fields (a practice trial has none)."""
    if trial["kind"] not in ("target", "control"):
        return {}
    return _fields(store_studies.example_row(con, study_id, trial["id"]))


def _foils(con: duckdb.DuckDBPyConnection, design: Design, study_id: str, trial: dict, regions: list[str]) -> list[str]:
    """A Maze trial's foil per region: the item's foils facet, or a practice item's own `foils`."""
    if trial["kind"] == "practice":
        given = design.practice[int(trial["id"].split(":")[1]) - 1].get("foils", "")
    else:
        given = _item_fields(con, study_id, trial).get(design.trial.foils)
    return trials.maze_foils(design.trial, regions, given)


def _texts(con: duckdb.DuckDBPyConnection, design: Design, study_id: str, trial: dict) -> tuple[str, str]:
    kind = trial["kind"]
    if kind in ("practice", "attention"):
        number = int(trial["id"].split(":")[1]) - 1
        given = (design.practice if kind == "practice" else design.attention)[number]
        return given["text"], given["question"] or ""
    if kind == "native":
        return "", f"Is {design.native_language} your native language?"
    fields = _fields(store_studies.example_row(con, study_id, trial["id"]))  # one row, no DataFrame: every screen
    return design.text.format_map(fields), design.question.format_map(fields)


def answer(
    con: duckdb.DuckDBPyConnection, study_id: str, position: int, given, person: str, measured: dict | None = None
) -> None:
    """Store the participant's answer to the trial at `position` (it must be their next one); its response row names
    its participant and time. A choice scale takes a label, the others a number in range; the native question yes or
    no. `measured` is what their browser measured (`timing`: moved, rt_ms, left_count, left_ms; None from a script).
    Refused (StudyRefused naming the field, nothing written) when out of turn, out of range, badly timed, unmoved
    where the design requires movement, or the study is closed. As a participant's act, audited one row per answer:
    `actions.studies.answer`."""
    timed = timing(measured)
    row = study(con, study_id)
    if row["status"] != "open":
        raise StudyRefused("study", "this study is closed: it takes no more answers. Thank you for your interest.")
    participant = store_studies.participant(con, study_id, person)
    if participant is None:  # a withdrawal deletes the participant's row with their data: say which it is
        _not_withdrawn(con, study_id, person)
        raise StudyRefused("participant", "open the study's first page (your link) before answering")
    design = design_of(row)
    count = len(participant["trials"])
    with atomic(con, "ratings"):  # the position is checked inside the transaction: two tabs cannot both answer it
        expire(con, study_id, design)
        _still_holding(design, participant, store_studies.ended(con, study_id, person))
        expected = store_studies.answered(con, study_id, person)
        if position != expected:
            what = "was already answered" if position < expected else "is not shown yet"
            plain = STALE if position < expected else "This question is not shown yet; here is the one to answer."
            raise StudyRefused("position", f"trial {position + 1} {what}; the next is trial {expected + 1}", plain)
        if position >= count:
            raise StudyRefused("position", "every trial is answered")
        trial = participant["trials"][position]
        detail = None
        if trial["kind"] == "native":
            if given not in NATIVE:
                raise StudyRefused("answer", f"{given!r}; expected yes or no")
            value, label = (1.0 if given == "yes" else 0.0), given
        elif design.trial.kind != "rating":
            value, label, detail = _typed(con, design, study_id, trial, given, measured)
        else:
            try:
                value, label = design.scale.value(given)
            except ValueError as exc:
                raise StudyRefused("answer", str(exc)) from None
            browser = measured is not None  # a script's answer (measured None) has nothing to say of movement
            if design.require_movement and design.scale.kind == "slider" and browser and timed["moved"] is not True:
                said = "the slider was not moved" if timed["moved"] is False else "the browser did not say it moved"
                raise StudyRefused("moved", said, "Move the slider to give your answer.")
        now = store_studies.now()
        response = {"study_id": study_id, "participant_id": person, "position": position, "kind": trial["kind"]}
        response |= {"trial": trial["id"], "value": value, "label": label, "answered_at": now} | timed
        response |= {"pilot": participant["pilot"], "detail": None if detail is None else json.dumps(detail)}
        rating = None
        if trial["kind"] in ("target", "control") and not participant["pilot"] and design.trial.kind == "rating":
            rating = {"dataset_id": study_id, "example_id": trial["id"], "rater_id": person}
            rating |= {"criterion": design.criterion, "value": value, "label": label, "rated_at": now}
        store_studies.add_response(con, response, rating, frozen=row["frozen_at"] is not None)
        if position == count - 1 and not design.demographics:
            _finish(con, design, study_id, person)


def _typed(con: duckdb.DuckDBPyConnection, design: Design, study_id: str, trial: dict, given, measured: dict | None):
    """(value, label, detail) of a forced choice, reading or Maze answer (issue 63, item 6). A forced choice: `given`
    the chosen member's place in the order shown; stored as the chosen condition (label), its place in the offered
    conditions (value: 0 the first) and the order shown (detail). Reading and Maze: the browser's per-region times
    (`measured`: regions, and the Maze's choices and sides) and a comprehension answer (`given`), as trials.py
    checks them. StudyRefused naming the field when what was sent does not fit the trial shown."""
    kind, sent = design.trial, dict(measured or {})
    try:
        if kind.kind == "forced_choice":
            shown = trial["shown"]
            if not isinstance(given, int) or isinstance(given, bool) or not 0 <= given < len(shown):
                expected = f"expected the place of the chosen sentence, 0 to {len(shown) - 1}"
                raise trials.Refused("answer", f"{given!r}; {expected}")
            conditions = [_item_fields(con, study_id, {"kind": "target", "id": e})[design.condition] for e in shown]
            offered = list(kind.options) or sorted(conditions)
            chosen = conditions[given]
            return float(offered.index(chosen)), chosen, {"shown": conditions, "chosen": chosen}
        text, _ = _texts(con, design, study_id, trial)
        regions = kind.split(text)
        if kind.kind == "reading":
            fields = _item_fields(con, study_id, trial)
            correct = kind.answer.format_map(fields) if kind.answer and fields else ""
            asked = bool(kind.question and fields)
            return trials.reading(kind, regions, sent | {"answer": given}, correct, asked)
        return trials.maze(regions, _foils(con, design, study_id, trial, regions), sent)
    except trials.Refused as exc:
        raise StudyRefused(exc.field, str(exc), "Your answer was not read.") from None


def _finish(con: duckdb.DuckDBPyConnection, design: Design, study_id: str, person: str) -> None:
    """The participant has finished (inside the caller's transaction): the time, and their completion code — the
    failed_attention one when the design has it and they failed more attention checks than its attention rule
    allows (none, without the rule)."""
    code = secrets.token_hex(4).upper() if design.completion_code == "auto" else design.completion_code
    if "failed_attention" in design.completion_codes and design.attention:
        allowed = next((r.get("max_failed", 0) for r in design.exclusions if r["rule"] == "attention"), 0)
        given = store_studies.participant_responses(con, study_id, person)
        failed = exclusions.attention_failures(design, given.assign(participant_id=person)).get(person, 0)
        if failed > allowed:
            code = design.completion_codes["failed_attention"]
    store_studies.finish(con, study_id, person, code)


def give_demographics(con: duckdb.DuckDBPyConnection, study_id: str, answers: dict, person: str) -> None:
    """Store the participant's answers to the design's demographic questions (name → answer; a blank or missing one
    is stored as not given), once, after their last trial, and finish them (time and completion code) in the same
    transaction. Refused (StudyRefused: the field demographics.<name>, and in plain words the question; nothing
    written) for a required question left blank, an answer the question does not take, a name the design does not
    ask, before the last trial, a second time, or once the study is closed. As the participant's act, audited:
    `actions.studies.give_demographics`."""
    row = study(con, study_id)
    if row["status"] != "open":
        raise StudyRefused("study", "this study is closed: it takes no more answers. Thank you for your interest.")
    _not_withdrawn(con, study_id, person)
    design = design_of(row)
    given = _demographic_values(design, answers)
    participant = store_studies.participant(con, study_id, person)
    if participant is None:
        raise StudyRefused("participant", "open the study's first page (your link) before answering")
    with atomic(con, "ratings"):  # checked inside the transaction: two tabs cannot both send them
        if store_studies.answered(con, study_id, person) < len(participant["trials"]):
            raise StudyRefused("demographics", "not every trial is answered yet", "Please answer the questions first.")
        if store_studies.participant(con, study_id, person)["finished_at"] is not None:
            raise StudyRefused("demographics", "they were already given", "Your answers were already saved.")
        store_studies.add_demographics(con, study_id, person, given, participant["pilot"])
        _finish(con, design, study_id, person)


def _demographic_values(design: Design, answers: dict) -> dict[str, str | None]:
    """question name → the stored text (None: left blank) of each demographic question; StudyRefused naming the
    question (plain: its text) for a required one left blank or an answer it does not take."""
    if not design.demographics:
        raise StudyRefused("demographics", "this study asks no demographic questions")
    asked = {question.name: question for question in design.demographics}
    if not isinstance(answers, dict) or set(answers) - set(asked):
        unknown = sorted(set(answers) - set(asked)) if isinstance(answers, dict) else answers
        said = f"{unknown!r}; the questions are {list(asked)}"
        raise StudyRefused("demographics", said, "Your answers were not read.")
    found = {}
    for name, question in asked.items():
        try:
            found[name] = question.value(answers.get(name))
        except ValueError as exc:
            raise StudyRefused(f"demographics.{name}", str(exc), f'"{question.question}": {exc}.') from None
        if found[name] is None and question.required:
            raise StudyRefused(f"demographics.{name}", "required", f'Please answer "{question.question}"')
    return found


def timing(measured: dict | None) -> dict:
    """The response's timing columns from what the browser sent: moved (whether the control was touched), rt_ms
    (item shown → answer, browser clock), left_count and left_ms (times and total time away from the tab); each None
    when not sent. StudyRefused naming the field for anything but a finite number, 0 or more (a whole one for
    left_count; true or false for moved)."""
    measured = measured or {}
    if not isinstance(measured, dict) or set(measured) - {"moved", *TIMING, *TYPED}:
        raise StudyRefused("timing", f"{measured!r}; expected moved, {', '.join(TIMING)}", "Your answer was not read.")
    moved = measured.get("moved")
    if moved is not None and not isinstance(moved, bool):
        raise StudyRefused("moved", f"{moved!r}; expected true or false", "Your answer was not read.")
    found = {"moved": moved}
    for name in TIMING:
        number = measured.get(name)
        whole = name == "left_count"
        numeric = isinstance(number, int | float) and not isinstance(number, bool)
        if number is not None and (
            not numeric or not math.isfinite(number) or number < 0 or (whole and number != int(number))
        ):
            kind = "a whole number" if whole else "a finite number"
            raise StudyRefused(name, f"{number!r}; expected {kind}, 0 or more", "Your answer was not read.")
        found[name] = None if number is None else (int(number) if whole else float(number))
    return found


def withdraw(con: duckdb.DuckDBPyConnection, study_id: str, person: str) -> dict:
    """The participant withdraws: their responses, crowd ratings, demographics and participant row are deleted and
    the deletion logged (by them), in one transaction, from any screen (before joining too: their link then takes no
    answers); {"responses", "ratings"} deleted. As their act: `actions.studies.withdraw`."""
    study(con, study_id)
    with atomic(con, "ratings"):
        _not_withdrawn(con, study_id, person)
        return store_studies.forget(con, study_id, person, person, "withdrawn by the participant")


def delete_participant(
    con: duckdb.DuckDBPyConnection, study_id: str, participant_id: str, by: str, reason: str
) -> dict:
    """A researcher deletes one participant's data on request: as `withdraw`, logged as deleted by `by` with the
    reason; StudyRefused for a participant the study does not have. As their act (the study's maker or an owner):
    `actions.studies.delete_participant`."""
    study(con, study_id)
    if not str(reason or "").strip():
        raise StudyRefused("reason", "say why (e.g. 'the participant asked by e-mail'); it is kept in the log")
    with atomic(con, "ratings"):
        _not_withdrawn(con, study_id, participant_id)
        if store_studies.participant(con, study_id, participant_id) is None:
            raise StudyRefused("participant", f"study {study_id!r} has no participant {participant_id!r}")
        return store_studies.forget(con, study_id, participant_id, by, reason.strip())


def close(con: duckdb.DuckDBPyConnection, study_id: str) -> dict:
    """Close the study: no one joins or answers any more, and from now on every page, export and command reads only
    the participants its declared exclusions keep (`analysed`). As a person's act (its maker or an owner):
    `actions.studies.close`."""
    excluded = exclusions.apply(design_of(study(con, study_id)), *responses_of(con, study_id))
    left_out = sorted(set(excluded["participant_id"]) - exclusions.kept(excluded))
    with atomic(con, "ratings"):
        if not store_studies.close(con, study_id):
            raise StudyRefused("study", f"study {study_id!r} is already closed")
    return {"excluded": left_out, "participants": len(excluded)}


@dataclass(frozen=True)
class Analysed:
    """A study's analysed participants, defined once for every page, export and command that shows its answers:
    those who finished and, once the study is closed, whom no declared exclusion names (while it is open: those who
    finished so far). `excluded_by`: each participant left out, with why ("not finished", or the rule's name)."""

    participants: frozenset[str]
    closed: bool
    excluded_by: dict[str, str]

    @property
    def left_out(self) -> dict[str, int]:
        """How many participants each reason leaves out."""
        return dict(pd.Series(self.excluded_by, dtype=object).value_counts().astype(int))

    def describe(self) -> str:
        """What a page says of them: '36 participants analysed (the study is closed); left out: 4 by controls_sd,
        1 not finished'."""
        n = len(self.participants)
        left = ", ".join(
            f"{count:,} {'not finished' if why == exclusions.NOT_FINISHED else 'by ' + why}"
            for why, count in self.left_out.items()
        )
        state = "closed" if self.closed else "open: only those who have finished so far"
        return f"{n:,} participant{'' if n == 1 else 's'} analysed (the study is {state}); left out: {left or 'none'}"


def analysed(con: duckdb.DuckDBPyConnection, dataset_id: str) -> Analysed | None:
    """The analysed participants of the study whose answers are dataset `dataset_id`; None for a dataset that is not
    a study's (all its raters count)."""
    row = store_studies.study(con, dataset_id)
    if row is None:
        return None
    applied = exclusions.apply(design_of(row), *responses_of(con, dataset_id))
    closed = row["status"] == "closed"
    reasons = (
        applied["excluded_by"]
        if closed
        else applied["excluded_by"].where(applied["excluded_by"] == exclusions.NOT_FINISHED, "")
    )
    kept = frozenset(applied.loc[reasons == "", "participant_id"])
    left = dict(zip(applied.loc[reasons != "", "participant_id"], reasons[reasons != ""]))
    return Analysed(kept, closed, {str(k): str(v) for k, v in left.items()})


def responses_of(con: duckdb.DuckDBPyConnection, study_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The study's participants and their responses, as the exclusion rules read them."""
    return store_studies.participants(con, study_id), store_studies.responses(con, study_id)
