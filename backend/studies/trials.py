"""A study's trial type (issue 63, item 6), declared in the design's `trial:` field, and what a participant's browser
sends for one trial of it, checked before anything is stored:

    trial: {kind: rating}                   # the default: the item and question on the design's scale
    trial: {kind: forced_choice, options: [a, b]}   # the item's members in these conditions (default: all), side by
                                            #   side, in an order drawn per trial from the participant's seed and
                                            #   recorded; the participant chooses one
    trial: {kind: reading, regions: words, comprehension: {question: "Did {hypothesis}?", options: [yes, no],
            answer: "{answer}"}}            # self-paced reading: a moving window, one key press (space) per region;
                                            #   regions: words | a delimiter in the text (e.g. "/"); comprehension
                                            #   optional, `answer` the correct option (a template over the item)
    trial: {kind: maze, foils: foil, regions: words}   # the Maze: each region beside a foil (the item's facet `foil`,
                                            #   one per region after the first, split like the text), chosen with
                                            #   e (left) or i (right); a wrong choice ends the sentence

Reading times are the browser's (performance.now): a region's time runs from its display to the key press that
leaves it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

KINDS = ("rating", "forced_choice", "reading", "maze")
FIRST_FOIL = "x-x-x"  # the Maze's first region has no sentence before it: its foil is a non-word (Forster et al. 2009)
MAX_REGION_MS = 600_000.0  # ten minutes on one region: longer is not a reading time
MAX_REGIONS = 200


@dataclass(frozen=True)
class TrialType:
    """The design's trial type: `kind`, a forced choice's offered `options` (conditions; () for all), a reading or
    Maze trial's `regions` (words, or the delimiter marking them), a reading trial's comprehension question (its
    `question`, `options` and the template of its correct `answer`, "" for none) and the Maze's `foils` facet."""

    kind: str = "rating"
    options: tuple[str, ...] = ()
    regions: str = "words"
    question: str = ""
    answers: tuple[str, ...] = ()
    answer: str = ""
    foils: str = ""

    def as_dict(self) -> dict:
        found = {"kind": self.kind}
        if self.kind == "forced_choice":
            found |= {"options": list(self.options)} if self.options else {}
        if self.kind in ("reading", "maze"):
            found |= {"regions": self.regions}
        if self.question:
            found |= {"comprehension": {"question": self.question, "options": list(self.answers)}}
            found["comprehension"] |= {"answer": self.answer} if self.answer else {}
        return found | ({"foils": self.foils} if self.foils else {})

    def split(self, text: str) -> list[str]:
        """The regions of a text: its words, or the parts between the delimiter (stripped, empty ones dropped)."""
        parts = text.split() if self.regions == "words" else text.split(self.regions)
        return [part.strip() for part in parts if part.strip()]


RATING = TrialType()


def parse(raw, fail) -> TrialType:
    """The design's `trial` (RATING when absent); fail naming trial.<field> and its line."""
    if raw is None:
        return RATING
    if not isinstance(raw, dict) or raw.get("kind") not in KINDS:
        fail(f"expected {{kind: one of {list(KINDS)}, ...}}", "trial", "kind")
    kind = raw["kind"]
    allowed = {
        "rating": {"kind"},
        "forced_choice": {"kind", "options"},
        "reading": {"kind", "regions", "comprehension"},
        "maze": {"kind", "regions", "foils"},
    }[kind]
    unknown = sorted(set(raw) - allowed)
    if unknown:
        fail(f"{kind} trials take {sorted(allowed)}; {unknown[0]!r} is not one of them", "trial", unknown[0])
    options = raw.get("options", [])
    if not isinstance(options, list) or (options and len(options) < 2) or len(set(map(str, options))) != len(options):
        fail(f"{options!r}; expected 2 or more distinct conditions (or none: all of them)", "trial", "options")
    regions = raw.get("regions", "words")
    if not isinstance(regions, str) or not regions or (regions != "words" and (regions.isspace() or len(regions) > 3)):
        fail(f"{regions!r}; expected words, or the delimiter marking regions in the text (e.g. /)", "trial", "regions")
    question, answers, answer = "", (), ""
    comprehension = raw.get("comprehension")
    if comprehension is not None:
        if not isinstance(comprehension, dict) or set(comprehension) - {"question", "options", "answer"}:
            fail("expected {question, options: [...], answer}", "trial", "comprehension")
        question = str(comprehension.get("question") or "")
        given = [("yes" if o else "no") if isinstance(o, bool) else str(o) for o in comprehension.get("options") or []]
        if not question.strip():
            fail("a comprehension question needs its question", "trial", "comprehension", "question")
        if len(given) < 2 or len(set(given)) != len(given):
            fail(f"{given!r}; expected 2 or more distinct options", "trial", "comprehension", "options")
        answers, answer = tuple(given), comprehension.get("answer", "")
        answer = ("yes" if answer else "no") if isinstance(answer, bool) else str(answer or "")
        if answer and "{" not in answer and answer not in answers:
            fail(f"{answer!r}; expected one of {list(answers)} or a template", "trial", "comprehension", "answer")
    foils = raw.get("foils", "")
    if kind == "maze" and (not isinstance(foils, str) or not foils):
        fail("the Maze needs foils: the item's facet holding a foil for every region after the first", "trial", "foils")
    return TrialType(kind, tuple(map(str, options)), regions, question, answers, answer, str(foils))


# ---- what a browser sends for one trial, checked --------------------------------------------------------------


class Refused(ValueError):
    """What was sent for a trial cannot be stored: `field` and the problem (collection turns it into StudyRefused)."""

    def __init__(self, field: str, problem: str):
        super().__init__(problem)
        self.field = field


def _times(sent, count: int, field: str = "regions") -> list[float]:
    if not isinstance(sent, list) or len(sent) != count:
        raise Refused(field, f"{sent!r}; expected {count} reading time(s), one per region shown")
    found = []
    for value in sent:
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        if not numeric or not math.isfinite(value) or not 0 < value <= MAX_REGION_MS:
            raise Refused(field, f"{value!r}; expected milliseconds above 0 and at most {MAX_REGION_MS:,.0f}")
        found.append(float(value))
    return found


def reading(
    kind: TrialType, regions: list[str], sent: dict, answer: str, asked: bool
) -> tuple[float | None, str | None, dict]:
    """A reading trial's (value, label, detail): value 1 or 0 whether the comprehension answer is `answer` (None
    without a question `asked` or a correct answer to check), label the answer, detail each region's text and
    time."""
    times = _times(sent.get("regions"), len(regions))
    detail = {"regions": [{"region": n + 1, "text": t, "rt_ms": ms} for n, (t, ms) in enumerate(zip(regions, times))]}
    if not asked:
        return None, None, detail
    given = sent.get("answer")
    if given not in kind.answers:
        raise Refused("answer", f"{given!r}; expected one of {list(kind.answers)}")
    return (None if not answer else float(given == answer)), given, detail


def maze(regions: list[str], foils: list[str], sent: dict) -> tuple[float, None, dict]:
    """A Maze trial's (value, label, detail): value 1 when every region was chosen right, 0 when a wrong choice ended
    it; detail each region reached with its foil, the side the word was on, whether it was chosen and its time."""
    chosen = sent.get("choices")
    if not isinstance(chosen, list) or not 1 <= len(chosen) <= len(regions):
        raise Refused("choices", f"{chosen!r}; expected 1 to {len(regions)} choices, one per region reached")
    times = _times(sent.get("regions"), len(chosen))
    sides = sent.get("sides")
    if not isinstance(sides, list) or len(sides) != len(chosen) or not set(sides) <= {"left", "right"}:
        raise Refused("sides", f"{sides!r}; expected left or right for each region reached")
    if not all(isinstance(c, bool) for c in chosen) or not all(chosen[:-1]):
        raise Refused("choices", f"{chosen!r}; expected true for each region before a wrong choice, which ends it")
    if len(chosen) < len(regions) and chosen[-1]:
        raise Refused("choices", "the sentence ended before its last region without a wrong choice")
    detail = {
        "regions": [
            {"region": n + 1, "text": regions[n], "foil": foils[n], "side": sides[n], "correct": chosen[n]}
            | {"rt_ms": times[n]}
            for n in range(len(chosen))
        ]
    }
    return float(all(chosen) and len(chosen) == len(regions)), None, detail


def maze_foils(kind: TrialType, regions: list[str], foil_text: str | None) -> list[str]:
    """The foil of every region: FIRST_FOIL, then the item's foils split like its text; ValueError when their count
    is not one per region after the first."""
    foils = kind.split(foil_text or "")
    if len(foils) != len(regions) - 1:
        raise ValueError(f"{len(foils)} foil(s) for {len(regions)} regions; expected {len(regions) - 1}")
    return [FIRST_FOIL, *foils]
