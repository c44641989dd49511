"""A judgement study's design, as the researcher declares it in YAML before any data (issue 47):

    name: stop-study                 # the study's id, and the name of the dataset its responses make
    dataset: stop-under-operators    # where the items come from (a Studio family set, any dataset)
    split: generated                 # optional: only this split's items
    item: item                       # the facet naming an item (a family) ...
    condition: variant               # ... and the one naming its condition
    assignment: latin                # latin | crossed | random (with k: items per participant)
    controls:                        # optional: items with a known answer, shown to every participant
      where: {predicate: [control]}  #   the items that are controls (facet → values); they leave the grid
      expected: 0                    #   the answer they should get
      placement: mixed               #   mixed (among the items) | start | end
    attention:                       # optional: instructed items, e.g. "move the slider to the right end"
      - {text: "...", expected: 1, tolerance: 0.1, at: 5}   # at: after the 5th item (default: spread out)
    order: {seed: 1, separate: item} # order per participant from a recorded seed; no two of one facet in a row
    text: "{input}"                  # what is shown (fields: input, context, hypothesis and the item's facets)
    question: "Is the speaker certain that {hypothesis}?"
    criterion: certainty             # the crowd ratings' criterion in the study's dataset
    scale: {kind: slider, min: 0, max: 1, left: "no", right: "yes"}   # | likert (-3..3) | choice (options: {yes: 1})
    trial: {kind: rating}            # optional: rating (the default) | forced_choice | reading | maze (backend.studies
                                     #   .trials: the fields of each; only a rating trial has a scale, controls,
                                     #   attention checks and survives)
    require_movement: true           # the slider shows no value, and Next stays off, until it is moved (default)
    survives: 0.5                    # optional: the least answer that counts as "the content survives" (Projection)
    instructions: "..."
    consent: "..."
    practice: [{text: "...", question: "..."}]
    completion_code: auto            # auto (one per participant) or the platform's code
    platform: {name: prolific}       # optional: a general link's platform (prolific | sona | mturk | other), its
                                     #   id parameter, the parameters kept with it, and its completion URL:
                                     #   {name, id: PROLIFIC_PID, keep: [STUDY_ID, SESSION_ID], completion: "...{code}"}
    native_language: English         # optional: ask at the end whether it is their native language
    demographics:                    # optional: asked once, on one form, after the last trial (personal data)
      - {preset: age_band}           #   ready-made: age_band (a choice of bands), native_languages (free text)
      - {name: handedness, question: "Which hand do you write with?", kind: choice, options: [left, right, both],
         required: true}             #   kind: choice (options) | text | number (min, max); required: false unless said
    debrief: "..."                   # optional: shown after the last answer, above the completion code
    time_limit: 60                   # optional: minutes (as Prolific's maximum time); one not finished by then is
                                     #   timed out: their place and list slot go to someone else
    screening:                       # optional: asked with the welcome, before the first trial; an answer outside
      - {name: english, question: "Is English your first language?", options: [yes, no], accept: [yes]}
                                     #   `accept` ends the study politely, with the screened_out code
    completion_codes: {screened_out: SCR1, failed_attention: ATT1, no_consent: NOC1}   # optional, besides
                                     #   completion_code (completed): each sent to the platform's URL for its path
    exclusions:                      # declared before data, applied in this order, logged rule by rule
      - {rule: controls_sd, k: 2, direction: above}  # mean on controls beyond k SD of the group mean
      - {rule: attention, max_failed: 0}
      - {rule: min_seconds, seconds: 60}
      - {rule: non_native}

Demographic answers are personal data (only the study's maker or an owner reads them; collection.demographics);
a participant has finished only once they are answered.

`parse` checks every field first and names it (StudyError: the file, the line and the field). `lists` makes the
lists and `order` one participant's sequence of trials; both are pure functions of the design, the items and the
seed, so a seed reproduces an order.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import yaml

from backend.datasets.validation import DataError, yaml_failer
from backend.studies.trials import RATING, TrialType, maze_foils
from backend.studies.trials import parse as parse_trial

ASSIGNMENTS = ("latin", "crossed", "random")
SCALES = {"slider": (0.0, 1.0), "likert": (-3.0, 3.0), "choice": (0.0, 1.0)}
PLACEMENTS = ("mixed", "start", "end")
RULES = {  # each completes "participants who ..."
    "controls_sd": "had a mean answer on the controls more than {k} SD {direction} the group's mean of those means",
    "attention": "failed more than {max_failed} attention check(s)",
    "min_seconds": "finished in less than {seconds} s",
    "non_native": "said {language} is not their native language",
}
DIRECTIONS = ("above", "below", "either")
NAME_CHARS = set(string.ascii_lowercase + string.digits + "-_")
MAX_TEXT = 10_000
MAX_TRIALS = 2_000
TRIES = 10_000  # shuffles tried for an order that keeps `separate`


class StudyError(DataError):
    """A design problem: names the file, the line and the field."""


@dataclass(frozen=True)
class Scale:
    kind: str
    min: float
    max: float
    left: str = ""
    right: str = ""
    options: tuple[tuple[str, float], ...] = ()  # choice: (label, value), in the order shown

    def value(self, answer) -> tuple[float, str | None]:
        """The stored (value, label) of an answer; ValueError saying what the scale takes."""
        if self.kind == "choice":
            labels = dict(self.options)
            if answer not in labels:
                raise ValueError(f"{answer!r}; expected one of {list(labels)}")
            return float(labels[answer]), str(answer)
        try:
            number = float(answer)
        except (TypeError, ValueError):
            number = float("nan")
        whole = self.kind == "likert"
        if not (self.min <= number <= self.max) or (whole and number != int(number)):
            kind = "a whole number" if whole else "a number"
            raise ValueError(f"{answer!r}; expected {kind} from {self.min:g} to {self.max:g}")
        return number, None

    @property
    def points(self) -> list[int]:
        return list(range(int(self.min), int(self.max) + 1))


@dataclass(frozen=True)
class Design:
    name: str
    dataset: str
    item: str
    condition: str
    question: str
    scale: Scale
    criterion: str = "response"
    split: str | None = None
    assignment: str = "latin"
    k: int | None = None
    controls: dict = field(default_factory=dict)  # where, expected, placement
    attention: tuple[dict, ...] = ()  # text, question, expected, tolerance, at
    seed: int = 0
    separate: str | None = None
    text: str = "{input}"
    survives: float | str | None = None
    instructions: str = ""
    consent: str = ""
    practice: tuple[dict, ...] = ()
    completion_code: str = "auto"
    native_language: str | None = None
    exclusions: tuple[dict, ...] = ()
    require_movement: bool = True  # a slider has no answer until it is moved (jsPsych's require_movement)
    platform: Platform | None = None  # where a general link's participants come from (issue 56, item 1)
    demographics: tuple[Question, ...] = ()  # asked once after the last trial (issue 56, item 5)
    debrief: str = ""  # shown after the last answer
    time_limit: float | None = None  # minutes to finish in; then timed out, the place freed (issue 63, item 4)
    screening: tuple[Screener, ...] = ()  # asked with the welcome (issue 63, item 5)
    completion_codes: dict = field(default_factory=dict)  # path (CODE_PATHS) → its code, besides completion_code
    trial: TrialType = RATING  # what one trial asks (issue 63, item 6)
    source: str = field(default="", compare=False)  # the YAML as written (kept with the study)

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "dataset": self.dataset,
            "split": self.split,
            "item": self.item,
            "condition": self.condition,
            "assignment": self.assignment,
            "k": self.k,
            "controls": self.controls,
            "attention": list(self.attention),
            "order": {"seed": self.seed, "separate": self.separate},
            "text": self.text,
            "question": self.question,
            "criterion": self.criterion,
            "scale": _scale_dict(self.scale),
            "survives": self.survives,
            "instructions": self.instructions,
            "consent": self.consent,
            "practice": list(self.practice),
            "completion_code": self.completion_code,
            "native_language": self.native_language,
            "exclusions": list(self.exclusions),
            "require_movement": self.require_movement,
            "platform": None if self.platform is None else self.platform.as_dict(),
            "demographics": [question.as_dict() for question in self.demographics],
            "debrief": self.debrief,
        } | (
            ({"time_limit": self.time_limit} if self.time_limit is not None else {})
            | ({"screening": [s.as_dict() for s in self.screening]} if self.screening else {})
            | ({"completion_codes": dict(self.completion_codes)} if self.completion_codes else {})
            | ({"trial": self.trial.as_dict()} if self.trial != RATING else {})
        )  # only when set: a design without them keeps its record as it was

    def rule_text(self, rule: dict) -> str:
        """A declared exclusion rule in words."""
        direction = {"either": "above or below"}.get(rule.get("direction"), rule.get("direction"))
        return RULES[rule["rule"]].format(language=self.native_language, **(rule | {"direction": direction}))


def _scale_dict(scale: Scale) -> dict | None:
    if scale.kind == "none":
        return None
    found = {"kind": scale.kind, "min": scale.min, "max": scale.max, "left": scale.left, "right": scale.right}
    return found | ({"options": dict(scale.options)} if scale.options else {})


def parse(text: str, path: str = "study.yaml") -> Design:
    """The design a YAML text declares; StudyError (file, line, field) on the first problem."""
    fail = yaml_failer(text, path, StudyError)

    spec = yaml.safe_load(text) or {}
    if not isinstance(spec, dict):
        fail("expected a mapping: name, dataset, item, condition, question, scale, ...")
    known = {*Design.__dataclass_fields__, "order"} - {"seed", "separate", "source"}
    for key in spec:
        if key not in known:
            fail(f"unknown field {key!r}; the fields are {sorted(known)}", key)
    trial = parse_trial(spec.get("trial"), fail)
    rating = trial.kind == "rating"
    needed = ("question", "scale") if rating else ("question",) if trial.kind == "forced_choice" else ()
    for key in ("name", "dataset", "item", "condition", *needed):
        if spec.get(key) in (None, ""):
            fail(f"missing {key!r}", key)
    for key in () if rating else ("scale", "controls", "attention", "survives", "require_movement"):
        if key in spec:
            fail(f"a {trial.kind} trial has no {key}: only rating trials do", key)
    if trial.kind == "forced_choice" and spec.get("assignment", "latin") == "latin":
        fail("a forced choice shows an item's members together: use crossed (every item) or random (k)", "assignment")
    if trial.kind == "forced_choice" and spec.get("practice"):
        fail("a forced choice has no practice items (a practice item is one text)", "practice")
    name = str(spec["name"])
    if not (2 <= len(name) <= 40 and name[0].isalpha() and set(name) <= NAME_CHARS):
        fail(f"{name!r}: use 2-40 lower-case letters, digits, '-' or '_', starting with a letter", "name")
    for key in ("text", "question", "instructions", "consent", "debrief"):
        if not isinstance(spec.get(key, ""), str) or len(spec.get(key, "")) > MAX_TEXT:
            fail(f"expected text of at most {MAX_TEXT:,} characters", key)
    assignment = spec.get("assignment", "latin")
    if assignment not in ASSIGNMENTS:
        fail(f"{assignment!r}; expected one of {list(ASSIGNMENTS)}", "assignment")
    k = spec.get("k")
    if assignment == "random" and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
        fail("a random assignment needs k: how many items each participant sees (1 or more)", "k")
    scale = _scale(spec["scale"], fail) if rating else NO_SCALE
    controls = _controls(spec.get("controls") or {}, scale, fail)
    attention = tuple(_attention(spec.get("attention") or [], scale, fail))
    practice = spec.get("practice") or []
    if not isinstance(practice, list) or not all(isinstance(p, dict) and p.get("text") for p in practice):
        fail("expected a list of {text, question} practice items", "practice")
    for i, given in enumerate(practice):
        if trial.kind == "maze":
            try:
                maze_foils(trial, trial.split(str(given["text"])), given.get("foils"))
            except ValueError as exc:
                fail(f"a Maze practice item needs foils, one per region after the first: {exc}", "practice", i)
    order = spec.get("order") or {}
    if not isinstance(order, dict) or set(order) - {"seed", "separate"}:
        fail("expected {seed: a whole number, separate: a facet}", "order")
    seed = order.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        fail(f"{seed!r}; expected a whole number, 0 or more", "order", "seed")
    code = str(spec.get("completion_code", "auto")).strip()
    if not code or len(code) > 64:
        fail("expected auto or the platform's code (at most 64 characters)", "completion_code")
    survives = spec.get("survives")
    if survives is not None:
        try:
            scale.value(survives)
        except ValueError as exc:
            fail(str(exc), "survives")
    exclusions = tuple(_exclusions(spec.get("exclusions") or [], spec, fail))
    require_movement = spec.get("require_movement", True)
    if not isinstance(require_movement, bool):
        fail(f"{require_movement!r}; expected true or false", "require_movement")
    time_limit = spec.get("time_limit")
    if time_limit is not None and (
        isinstance(time_limit, bool) or not isinstance(time_limit, int | float) or not 1 <= time_limit <= 7 * 24 * 60
    ):
        fail(f"{time_limit!r}; expected minutes to finish in, 1 to 10,080 (a week)", "time_limit")
    return Design(
        name=name,
        dataset=str(spec["dataset"]),
        item=str(spec["item"]),
        condition=str(spec["condition"]),
        question=str(spec.get("question") or ""),
        scale=scale,
        criterion=str(spec.get("criterion") or "response"),
        split=None if spec.get("split") is None else str(spec["split"]),
        assignment=assignment,
        k=k,
        controls=controls,
        attention=attention,
        seed=seed,
        separate=order.get("separate"),
        text=str(spec.get("text") or "{input}"),
        survives=survives,
        instructions=str(spec.get("instructions") or ""),
        consent=str(spec.get("consent") or ""),
        practice=tuple(
            {"text": str(p["text"]), "question": str(p.get("question") or "")}
            | ({"foils": str(p.get("foils") or "")} if trial.kind == "maze" else {})
            for p in practice
        ),
        completion_code=code,
        native_language=spec.get("native_language"),
        exclusions=exclusions,
        require_movement=require_movement,
        platform=_platform(spec.get("platform"), fail),
        demographics=_demographics(spec.get("demographics"), fail),
        debrief=str(spec.get("debrief") or ""),
        time_limit=None if time_limit is None else float(time_limit),
        screening=_screening(spec.get("screening"), fail),
        completion_codes=_codes(spec.get("completion_codes"), fail),
        trial=trial,
        source=text,
    )


# A recruitment platform's defaults: the URL parameter carrying the participant's id, those kept with it, and where a
# finished participant is sent ({code}: the completion code, {id}: their platform id, {NAME}: a kept parameter).
# Prolific: its documented completion URL. SONA: each school's own host, so the design gives `completion` (its
# webstudy_credit.aspx URL with experiment_id and credit_token, survey_code={id}). MTurk: a form POST of assignmentId
# to the turkSubmitTo parameter's /mturk/externalSubmit (mturk.com or its sandbox only).
PLATFORMS = {
    "prolific": {
        "id": "PROLIFIC_PID",
        "keep": ("STUDY_ID", "SESSION_ID"),
        "completion": "https://app.prolific.com/submissions/complete?cc={code}",
    },
    "sona": {"id": "survey_code", "keep": (), "completion": None},
    "mturk": {"id": "workerId", "keep": ("assignmentId", "hitId", "turkSubmitTo"), "completion": "mturk"},
    "other": {"id": None, "keep": (), "completion": None},
}
PARAMETER = set(string.ascii_letters + string.digits + "_-.")
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"  # MTurk's assignmentId while a worker only previews the HIT


@dataclass(frozen=True)
class Platform:
    """A general link's platform: `id` the URL parameter holding the participant's platform id, `keep` other
    parameters stored with it, `completion` the URL template a finished participant is sent to ("mturk": MTurk's
    form POST)."""

    name: str
    id: str
    keep: tuple[str, ...]
    completion: str

    def as_dict(self) -> dict:
        return {"name": self.name, "id": self.id, "keep": list(self.keep), "completion": self.completion}


def _platform(raw, fail) -> Platform | None:
    """The design's `platform` (None when it has none); fail naming platform.<field> and its line."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - {"name", "id", "keep", "completion"}:
        fail("expected {name: prolific | sona | mturk | other, id, keep, completion}", "platform")
    name = raw.get("name")
    if name not in PLATFORMS:
        fail(f"{name!r}; expected one of {list(PLATFORMS)}", "platform", "name")
    known = PLATFORMS[name]
    ident = raw.get("id", known["id"])
    if not isinstance(ident, str) or not ident or not set(ident) <= PARAMETER or len(ident) > 64:
        fail(
            f"{ident!r}; expected the URL parameter holding the participant's id (e.g. PROLIFIC_PID)", "platform", "id"
        )
    keep = raw.get("keep", list(known["keep"]))
    if not isinstance(keep, list) or not all(isinstance(k, str) and k and set(k) <= PARAMETER for k in keep):
        fail(f"{keep!r}; expected a list of URL parameter names", "platform", "keep")
    if ident in keep or len(set(keep)) != len(keep) or len(keep) > 10:
        fail(f"{keep!r}; expected at most 10 distinct names, not the id {ident!r}", "platform", "keep")
    if name == "mturk" and "assignmentId" not in keep:
        fail("MTurk's completion posts the assignmentId: keep it", "platform", "keep")
    completion = raw.get("completion", known["completion"])
    if completion is None:
        fail(f"{name} needs completion: the URL a finished participant is sent to, with {{code}}", "platform")
    if not isinstance(completion, str) or len(completion) > 2_000:
        fail(f"{completion!r}; expected a URL template", "platform", "completion")
    if completion != "mturk":
        if not completion.startswith(("https://", "http://")):
            fail(f"{completion!r}; expected an http(s) URL (or mturk: the form POST)", "platform", "completion")
        allowed = {"code", "id", *keep}
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(completion) if f is not None]
        except ValueError as exc:
            fail(f"{completion!r}: {exc}", "platform", "completion")
        unknown = [f for f in fields if f not in allowed]
        if unknown:
            fail(
                f"{{{unknown[0]}}} is not known here; the template may use {sorted(allowed)}", "platform", "completion"
            )
    elif name != "mturk":
        fail("completion: mturk (the form POST) is for the mturk platform", "platform", "completion")
    return Platform(name, ident, tuple(keep), completion)


# Ready-made demographic questions, so a design writes `{preset: age_band}`; any other field given beside `preset`
# replaces the preset's (e.g. required: true). The bands are those surveys commonly use, with a way not to say.
PRESETS = {
    "age_band": {
        "name": "age_band",
        "question": "What is your age?",
        "kind": "choice",
        "options": ["18-24", "25-34", "35-44", "45-54", "55-64", "65 or over", "Prefer not to say"],
    },
    "native_languages": {
        "name": "native_languages",
        "question": "Which language or languages did you speak at home as a child? (Separate several with commas.)",
        "kind": "text",
    },
}
KINDS = ("choice", "text", "number")
QUESTION_FIELDS = {"preset", "name", "question", "kind", "options", "required", "min", "max"}
MAX_ANSWER = 500  # characters of a text answer
MAX_QUESTIONS = 50
RESERVED = ("participant_id", "answered_at")  # demographics.csv's own columns beside one per question


@dataclass(frozen=True)
class Question:
    """A demographic question: `name` (its column in demographics.csv), the `question` shown, its `kind` (choice |
    text | number), the choice's `options`, whether an answer is `required`, and a number's `min` and `max`."""

    name: str
    question: str
    kind: str
    options: tuple[str, ...] = ()
    required: bool = False
    min: float | None = None
    max: float | None = None

    def as_dict(self) -> dict:
        found = {"name": self.name, "question": self.question, "kind": self.kind, "required": self.required}
        return (
            found
            | ({"options": list(self.options)} if self.options else {})
            | {k: v for k, v in (("min", self.min), ("max", self.max)) if v is not None}
        )

    def value(self, given) -> str | None:
        """The stored text of an answer (None: not answered); ValueError in plain words saying what it takes."""
        if given is None or (isinstance(given, str) and not given.strip()):
            return None
        if self.kind == "choice":
            if given not in self.options:
                raise ValueError(f"choose one of {', '.join(self.options)}")
            return str(given)
        if self.kind == "text":
            text = str(given).strip()
            if len(text) > MAX_ANSWER:
                raise ValueError(f"write at most {MAX_ANSWER} characters")
            return text
        number = given if isinstance(given, int | float) and not isinstance(given, bool) else _number(given)
        low = -math.inf if self.min is None else self.min
        high = math.inf if self.max is None else self.max
        if number is None or not math.isfinite(number) or not low <= number <= high:
            ends = [f"from {self.min:g}"] * (self.min is not None) + [f"to {self.max:g}"] * (self.max is not None)
            raise ValueError(" ".join(["enter a number", *ends]))
        return str(int(number)) if float(number).is_integer() else repr(float(number))


def _number(given) -> float | None:
    try:
        return float(str(given).strip())
    except ValueError:
        return None


CODE_PATHS = ("screened_out", "failed_attention", "no_consent")  # completion paths besides completed


@dataclass(frozen=True)
class Screener:
    """A screening question asked with the welcome: its name, the question, its options, and those it accepts."""

    name: str
    question: str
    options: tuple[str, ...]
    accept: tuple[str, ...]

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "question": self.question,
            "options": list(self.options),
            "accept": list(self.accept),
        }


def _screening(raw, fail) -> tuple[Screener, ...]:
    """The design's screening questions; fail naming screening.<i>.<field> and its line."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_QUESTIONS:
        fail(f"expected a list of 1 to {MAX_QUESTIONS} questions {{name, question, options, accept}}", "screening")
    found = []
    for i, given in enumerate(raw):
        if not isinstance(given, dict) or set(given) != {"name", "question", "options", "accept"}:
            fail("expected {name, question, options: [...], accept: [...]}", "screening", i)
        name, question = str(given["name"]), str(given["question"])
        if not name.isidentifier() or name in {s.name for s in found}:
            fail(f"{name!r}; expected a distinct name of letters, digits and _", "screening", i, "name")
        if not question.strip() or len(question) > MAX_TEXT:
            fail(f"expected a question of at most {MAX_TEXT:,} characters", "screening", i, "question")
        options, accept = _words(given["options"]), _words(given["accept"])
        if not isinstance(options, list) or len(options) < 2 or len({str(o) for o in options}) != len(options):
            fail(f"{options!r}; expected a list of at least 2 distinct options", "screening", i, "options")
        if not isinstance(accept, list) or not accept or not {str(a) for a in accept} < {str(o) for o in options}:
            fail(f"{accept!r}; expected some, not all, of the options {options!r}", "screening", i, "accept")
        found.append(Screener(name, question, tuple(map(str, options)), tuple(map(str, accept))))
    return tuple(found)


def _words(values):
    """A YAML list of options as written: unquoted yes/no (which YAML reads as true/false) back to yes/no."""
    if not isinstance(values, list):
        return values
    return [("yes" if v else "no") if isinstance(v, bool) else v for v in values]


def _codes(raw, fail) -> dict[str, str]:
    """The design's completion codes per path (CODE_PATHS); fail naming completion_codes.<path>."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not set(raw) <= set(CODE_PATHS):
        fail(f"{raw!r}; expected codes for some of {list(CODE_PATHS)}", "completion_codes")
    for path, code in raw.items():
        if not str(code).strip() or len(str(code)) > 64:
            fail(f"{code!r}; expected a code of at most 64 characters", "completion_codes", path)
    return {path: str(code).strip() for path, code in raw.items()}


def _demographics(raw, fail) -> tuple[Question, ...]:
    """The design's demographic questions (presets filled in); fail naming demographics.<i>.<field> and its line."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) > MAX_QUESTIONS:
        fail(f"expected a list of at most {MAX_QUESTIONS} questions {{name, question, kind, ...}}", "demographics")
    found: list[Question] = []
    for i, given in enumerate(raw):
        if not isinstance(given, dict):
            fail("expected {name, question, kind, ...} or {preset: ...}", "demographics", i)
        unknown = sorted(set(given) - QUESTION_FIELDS)
        if unknown:
            known = sorted(QUESTION_FIELDS)
            fail(f"unknown field {unknown[0]!r}; the fields are {known}", "demographics", i, unknown[0])
        if "preset" in given and given["preset"] not in PRESETS:
            fail(f"{given['preset']!r}; expected one of {list(PRESETS)}", "demographics", i, "preset")
        found.append(_question(PRESETS.get(given.get("preset"), {}) | given, i, fail))
        if found[-1].name in [q.name for q in found[:-1]]:
            fail(f"{found[-1].name!r} is asked twice; give each question its own name", "demographics", i, "name")
    return tuple(found)


def _question(given: dict, i: int, fail) -> Question:
    def at(key: str, problem: str):
        fail(problem, "demographics", i, key)

    name, kind = given.get("name"), given.get("kind")
    if not isinstance(name, str) or not (1 <= len(name) <= 40 and name[0].isalpha() and set(name) <= NAME_CHARS):
        at("name", f"{name!r}: use 1-40 lower-case letters, digits, '-' or '_', starting with a letter")
    if name in RESERVED:
        at("name", f"{name!r} names a column of demographics.csv already; choose another name")
    text = given.get("question")
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
        at("question", f"expected the question's text (at most {MAX_TEXT:,} characters)")
    if kind not in KINDS:
        at("kind", f"{kind!r}; expected one of {list(KINDS)}")
    required = given.get("required", False)
    if not isinstance(required, bool):
        at("required", f"{required!r}; expected true or false")
    options = given.get("options")
    if kind == "choice":
        answers = isinstance(options, list) and all(isinstance(o, str | int | float) for o in options)
        if not answers or len(options) < 2:
            at("options", "a choice needs options: a list of 2 or more answers")
        options = [str(o) for o in options]
        if len(set(options)) != len(options):
            at("options", f"{options!r}: each option once")
    elif options is not None:
        at("options", f"only a choice has options; this question is {kind}")
    bounds = {}
    for key in ("min", "max"):
        value = given.get(key)
        if value is not None and kind != "number":
            at(key, f"only a number has {key}; this question is {kind}")
        if value is not None and (not isinstance(value, int | float) or isinstance(value, bool)):
            at(key, f"{value!r}; expected a number")
        bounds[key] = None if value is None else float(value)
    if None not in bounds.values() and not bounds["min"] < bounds["max"]:
        at("max", f"min {bounds['min']:g} must be below max {bounds['max']:g}")
    return Question(name, text.strip(), kind, tuple(options or ()), required, bounds["min"], bounds["max"])


NO_SCALE = Scale("none", 0.0, 1.0)  # a forced choice, reading or Maze trial: no scale (what is stored: trials.py)


def _scale(raw, fail) -> Scale:
    if not isinstance(raw, dict) or raw.get("kind") not in SCALES:
        fail(f"expected {{kind: one of {list(SCALES)}, ...}}", "scale", "kind")
    kind = raw["kind"]
    low, high = (float(raw.get("min", SCALES[kind][0])), float(raw.get("max", SCALES[kind][1])))
    if not low < high:
        fail(f"min {low:g} must be below max {high:g}", "scale")
    options: tuple = ()
    if kind == "choice":
        given = raw.get("options")
        if isinstance(given, list):  # labels only: the first counts 1, the last 0, evenly between
            given = {label: 1 - i / max(len(given) - 1, 1) for i, label in enumerate(given)}
        if not isinstance(given, dict) or len(given) < 2:
            fail("a choice scale needs options: a list of 2 or more labels, or label → value", "scale", "options")
        try:
            options = tuple((str(label), float(value)) for label, value in given.items())
        except (TypeError, ValueError):
            fail("each option's value must be a number", "scale", "options")
        low, high = min(v for _, v in options), max(v for _, v in options)
    if kind == "likert" and (low != int(low) or high != int(high)):
        fail("a likert scale's min and max are whole numbers", "scale")
    return Scale(kind, low, high, str(raw.get("left") or ""), str(raw.get("right") or ""), options)


def _controls(raw, scale: Scale, fail) -> dict:
    if not raw:
        return {}
    where = raw.get("where") if isinstance(raw, dict) else None
    if not isinstance(where, dict) or not where or not all(isinstance(v, list) and v for v in where.values()):
        fail("expected where: {facet: [values]} naming the control items", "controls", "where")
    try:
        scale.value(raw.get("expected"))
    except ValueError as exc:
        fail(f"expected: {exc}", "controls", "expected")
    placement = raw.get("placement", "mixed")
    if placement not in PLACEMENTS:
        fail(f"{placement!r}; expected one of {list(PLACEMENTS)}", "controls", "placement")
    return {"where": {str(k): [str(v) for v in vs] for k, vs in where.items()}, "expected": raw["expected"]} | {
        "placement": placement
    }


def _attention(raw, scale: Scale, fail) -> list[dict]:
    if not isinstance(raw, list):
        fail("expected a list of {text, expected, tolerance, at}", "attention")
    found = []
    for i, check in enumerate(raw):
        if not isinstance(check, dict) or not check.get("text"):
            fail("an attention check needs text", "attention", i)
        try:
            scale.value(check.get("expected"))
        except ValueError as exc:
            fail(f"expected: {exc}", "attention", i, "expected")
        tolerance, at = check.get("tolerance", 0), check.get("at")
        if not isinstance(tolerance, int | float) or tolerance < 0:
            fail(f"{tolerance!r}; expected a number, 0 or more", "attention", i, "tolerance")
        if at is not None and (not isinstance(at, int) or at < 0):
            fail(f"{at!r}; expected the number of items before it, 0 or more", "attention", i, "at")
        found.append(
            {
                "text": str(check["text"]),
                "question": str(check.get("question") or ""),
                "expected": check["expected"],
                "tolerance": float(tolerance),
                "at": at,
            }
        )
    return found


def _exclusions(raw, spec: dict, fail) -> list[dict]:
    if not isinstance(raw, list):
        fail("expected a list of rules", "exclusions")
    found = []
    for i, rule in enumerate(raw):
        name = rule.get("rule") if isinstance(rule, dict) else None
        if name not in RULES:
            fail(f"{name!r}; expected one of {list(RULES)}", "exclusions", i, "rule")
        if name == "controls_sd":
            if not spec.get("controls"):
                fail("controls_sd needs controls declared", "exclusions", i)
            k, direction = rule.get("k", 2), rule.get("direction", "either")
            if not isinstance(k, int | float) or k <= 0:
                fail(f"{k!r}; expected a number of SDs above 0", "exclusions", i, "k")
            if direction not in DIRECTIONS:
                fail(f"{direction!r}; expected one of {list(DIRECTIONS)}", "exclusions", i, "direction")
            found.append({"rule": name, "k": k, "direction": direction})
        elif name == "attention":
            if not spec.get("attention"):
                fail("the attention rule needs attention checks declared", "exclusions", i)
            found.append({"rule": name, "max_failed": int(rule.get("max_failed", 0))})
        elif name == "min_seconds":
            seconds = rule.get("seconds")
            if not isinstance(seconds, int | float) or seconds <= 0:
                fail(f"{seconds!r}; expected seconds above 0", "exclusions", i, "seconds")
            found.append({"rule": name, "seconds": seconds})
        else:
            if not spec.get("native_language"):
                fail("non_native needs native_language: the language to ask about", "exclusions", i)
            found.append({"rule": name})
    return found


# ---- items, lists and orders ---------------------------------------------------------------------------------


def facet(frame: pd.DataFrame, name: str) -> pd.Series:
    """A facet of every item as text: a column of the examples, else a key of their `extra`."""
    if name in frame.columns and name != "extra":
        return frame[name].astype("string")
    return frame["extra"].map(lambda extra: None if (extra or {}).get(name) is None else str(extra[name]))


@dataclass(frozen=True)
class Items:
    """The design's items: `grid` (item × condition → example id) for the targets, `controls` (example ids)."""

    grid: pd.DataFrame  # index: items, columns: conditions, values: example ids
    controls: tuple[str, ...]
    facets: pd.DataFrame  # example_id → every facet named by the design (for `separate`)


def items(design: Design, examples: pd.DataFrame, path: str = "study.yaml") -> Items:
    """The grid of target items and the controls from the dataset's examples (example_id, split, ..., extra as a
    dict); StudyError naming the field when a facet is missing, a cell is empty or doubled."""

    def fail(problem: str, key: str) -> None:
        raise StudyError(path, problem, None, key)

    rows = examples if design.split is None else examples[examples["split"] == design.split]
    if rows.empty:
        splits = sorted(examples["split"].unique()) if len(examples) else []
        fail(f"no items in {design.dataset} split {design.split!r}; its splits are {splits}", "split")
    named = [design.item, design.condition, *design.controls.get("where", {}), design.separate]
    table = pd.DataFrame({name: facet(rows, name) for name in dict.fromkeys(n for n in named if n)})
    table.index = rows["example_id"].to_numpy()
    for name in table.columns:
        if table[name].isna().all():
            fail(f"no item of {design.dataset} has a facet {name!r}", name)
    is_control = pd.Series(False, index=table.index)
    for key, values in design.controls.get("where", {}).items():
        is_control |= table[key].isin(values)
    if design.controls and not is_control.any():
        fail(f"no item matches {design.controls['where']}", "controls")
    targets = table[~is_control]
    missing = targets[[design.item, design.condition]].isna().any(axis=1)
    if missing.any():
        fail(f"item {targets.index[missing][0]!r} has no {design.item!r} or {design.condition!r}", "item")
    doubled = targets.duplicated([design.item, design.condition])
    if doubled.any():
        cell = tuple(targets.loc[doubled, [design.item, design.condition]].iloc[0])
        fail(f"two items share {design.item} × {design.condition} = {cell}: an item has one of each condition", "item")
    grid = targets.reset_index().pivot(index=design.item, columns=design.condition, values="index")
    if grid.isna().any().any():
        item, condition = grid.stack(future_stack=True).loc[lambda s: s.isna()].index[0]
        fail(f"item {item!r} has no {condition!r} condition: a study needs every item in every condition", "item")
    offered = design.trial.options
    if set(offered) - set(grid.columns):
        unknown = sorted(set(offered) - set(grid.columns))
        fail(f"{unknown[0]!r} is not a condition of {design.condition!r}: {list(grid.columns)}", "trial")
    if design.trial.kind == "forced_choice" and len(offered or grid.columns) < 2:
        fail(f"a forced choice needs 2 or more conditions; {design.condition!r} has {list(grid.columns)}", "condition")
    if len(grid.columns) < 2 and design.assignment == "latin":
        fail(f"a Latin square needs 2 or more conditions; {design.condition!r} has {list(grid.columns)}", "condition")
    if design.assignment == "random" and design.k > len(grid):
        fail(f"k {design.k} is more than the {len(grid)} items", "k")
    return Items(grid, tuple(table.index[is_control]), table)


def list_count(design: Design, found: Items) -> int | None:
    """How many lists the design has (None: random, each participant their own)."""
    return {"latin": len(found.grid.columns), "crossed": 1}.get(design.assignment)


def choices(design: Design, found: Items, rng: np.random.Generator) -> list[dict]:
    """A forced choice's target trials: one per item (crossed: every item; random: k drawn by `rng`), its id the item's
    member in the first offered condition and `shown` its offered members in an order drawn by `rng`."""
    grid = found.grid
    offered = list(design.trial.options or grid.columns)
    rows = range(len(grid)) if design.assignment == "crossed" else rng.choice(len(grid), size=design.k, replace=False)
    picked = []
    for i in rows:
        members = list(grid.iloc[int(i)][offered])
        shown = [members[j] for j in rng.permutation(len(offered))]
        picked.append({"kind": "target", "id": members[0], "shown": shown})
    return picked


def targets(design: Design, found: Items, list_no: int, rng: np.random.Generator) -> list[str]:
    """The target items (example ids) of one list: Latin square list l gives item i condition (i + l) mod C, so
    every condition has ⌊I/C⌋ or ⌈I/C⌉ items and, over the C lists, every item × condition once; crossed: all;
    random: k items drawn by `rng`, conditions rotated from a random start so they stay as balanced."""
    grid = found.grid
    conditions = len(grid.columns)
    if design.assignment == "crossed":
        return [e for row in grid.to_numpy() for e in row]
    if design.assignment == "latin":
        return [grid.iat[i, (i + list_no) % conditions] for i in range(len(grid))]
    chosen = rng.choice(len(grid), size=design.k, replace=False)
    start = int(rng.integers(conditions))
    return [grid.iat[i, (start + n) % conditions] for n, i in enumerate(chosen)]


def order(design: Design, found: Items, list_no: int, seed: int) -> list[dict]:
    """One participant's trials in order: practice, then the list's targets and the controls (shuffled with
    `seed`, keeping `separate`), the attention checks at their places, and the native-language question.
    Each trial: {kind: practice | target | control | attention | native, id}; a forced choice's targets also name
    the members `shown`, in their order."""
    rng = np.random.default_rng(seed)
    if design.trial.kind == "forced_choice":
        drawn = {trial["id"]: trial for trial in choices(design, found, rng)}
        picked = _shuffled(design, found, [("target", e) for e in drawn], rng)
        native = [{"kind": "native", "id": "native"}] if design.native_language else []
        return [drawn[e] for _, e in picked] + native
    main = [("target", e) for e in targets(design, found, list_no, rng)]
    controls = [("control", e) for e in found.controls]
    placement = design.controls.get("placement", "mixed")
    shuffled = _shuffled(design, found, main + controls if placement == "mixed" else main, rng)
    if placement != "mixed":
        rng.shuffle(controls)
        shuffled = controls + shuffled if placement == "start" else shuffled + controls
    trials = [{"kind": kind, "id": e} for kind, e in shuffled]
    spacing = len(trials) / (len(design.attention) + 1)
    for n, check in reversed(list(enumerate(design.attention))):
        at = check["at"] if check["at"] is not None else round(spacing * (n + 1))
        trials.insert(min(at, len(trials)), {"kind": "attention", "id": f"attention:{n + 1}"})
    practice = [{"kind": "practice", "id": f"practice:{n + 1}"} for n in range(len(design.practice))]
    native = [{"kind": "native", "id": "native"}] if design.native_language else []
    return practice + trials + native


def _shuffled(design: Design, found: Items, trials: list[tuple], rng: np.random.Generator) -> list[tuple]:
    values = found.facets[design.separate] if design.separate else None
    for _ in range(TRIES):
        picked = [trials[i] for i in rng.permutation(len(trials))]
        if values is None or all(values[a[1]] != values[b[1]] for a, b in zip(picked, picked[1:])):
            return picked
    raise StudyError(
        "study.yaml",
        f"no order of {len(trials)} items keeps two items of one {design.separate!r} apart in {TRIES:,} shuffles",
        None,
        "order.separate",
    )


def participant_seed(design: Design, index: int) -> int:
    """The order seed of the index-th participant: from the study's seed, recorded with the participant."""
    return int(np.random.SeedSequence([design.seed, index]).generate_state(1)[0])
