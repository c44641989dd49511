"""From a response's text to what a run stores: a label, a short answer or the writing parts, and how
the parse went. Nothing is guessed: a response whose answer word is not one of the template's
verbalisers is *unparsed* (stored without a label, so it counts as wrong), never mapped to the
nearest label. The rules, per task:

- nli / detect, answer first: the first word of the response (an "Answer:" prefix is skipped);
- nli / detect, chain of thought: the first word after the last "Answer:";
- and in both, a first line that also names another label ("yes, no", "Yes or maybe") is *ambiguous*:
  unparsed, not its first word;
- qa: the first line (after the last "Answer:" for chain of thought), without a trailing period;
- write: "Presupposition: …" and "Correction: …" lines; a CREPE-style reply is all correction.

Empty responses are *empty* and replies that decline are *refusal* (both checked before the answer is
read); a request that failed is *error* (`backend.models.prompted`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

STATUSES = ("ok", "unparsed", "refusal", "empty", "error")
REFUSAL = re.compile(
    r"^\s*(i\s*(am|'m)\s+(sorry|unable|not able)|i\s+(cannot|can't|can not|won't)\b|"
    r"as an ai\b|sorry,? (but )?i)",
    re.IGNORECASE,
)
_ANSWER = re.compile(r"answer\s*:\s*", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z]+")


@dataclass(frozen=True)
class Parsed:
    status: str  # ok | unparsed | refusal | empty
    label: str | None = None
    answer: str | None = None
    parts: dict = field(default_factory=dict)  # write: presupposition, correction


def _after_answer(text: str, reasons: bool) -> str | None:
    """The text the answer is read from; None when a chain of thought never says 'Answer:'."""
    found = list(_ANSWER.finditer(text))
    if found:
        return (
            text[found[-1].end() :]
            if reasons
            else (text[found[0].end() :] if text.lstrip().lower().startswith("answer") else text)
        )
    return None if reasons else text


def label(text: str, verbalisers: dict[str, tuple[str, ...]], reasons: bool = False) -> Parsed:
    """
    >>> v = {"E": ("yes",), "N": ("maybe",), "C": ("no",)}
    >>> label("Yes.", v).label, label("Answer: no, because", v).label, label("The answer is yes", v).status
    ('E', 'C', 'unparsed')
    >>> label("It stops.\\nAnswer: maybe", v, reasons=True).label
    'N'
    >>> label("yes, no", v).status, label("No, no.", v).label, label("No, Paris is not in Spain", v).label
    ('unparsed', 'C', 'C')
    """
    if not text.strip():
        return Parsed("empty")
    if REFUSAL.match(text):
        return Parsed("refusal")
    rest = _after_answer(text, reasons)
    word = _WORD.search(rest) if rest is not None else None
    if word is None:
        return Parsed("unparsed")
    names = {w.lower(): name for name, words in verbalisers.items() for w in words}
    if word.group(0).lower() not in names:
        return Parsed("unparsed")
    first_line = rest[word.start() :].split("\n", 1)[0]
    named = {names[w.lower()] for w in _WORD.findall(first_line) if w.lower() in names}
    return Parsed("ok", label=names[word.group(0).lower()]) if len(named) == 1 else Parsed("unparsed")


def short_answer(text: str, reasons: bool = False) -> Parsed:
    """
    >>> short_answer("Answer: 4 hours.\\nBecause ...").answer
    '4 hours'
    """
    if not text.strip():
        return Parsed("empty")
    if REFUSAL.match(text):
        return Parsed("refusal")
    rest = _after_answer(text, reasons)
    lines = [line for line in (rest or "").strip().splitlines() if line.strip()]
    if not lines:
        return Parsed("unparsed")
    return Parsed("ok", answer=_ANSWER.sub("", lines[0], count=1).strip().rstrip("."))


def writing(text: str, crepe: bool = False) -> Parsed:
    """
    >>> writing("Presupposition: the moon is cheese\\nCorrection: it is rock").parts
    {'presupposition': 'the moon is cheese', 'correction': 'it is rock'}
    """
    if not text.strip():
        return Parsed("empty", parts={"presupposition": "", "correction": ""})
    if crepe:
        return Parsed("ok", parts={"presupposition": "", "correction": text.strip()})
    parts = {}
    for key in ("presupposition", "correction"):
        match = re.search(rf"{key}\s*:\s*(.+)", text, re.IGNORECASE)
        parts[key] = match.group(1).strip() if match else ""
    if REFUSAL.match(text) and not any(parts.values()):
        return Parsed("refusal", parts=parts)
    return Parsed("ok" if all(parts.values()) else "unparsed", parts=parts)


def usable_logprobs(top_logprobs: list[tuple[str, float]]) -> bool:
    """Whether every log-probability is one: a number ≤ 0 or −∞ (a server can send NaN or +∞, which are no
    probability at all).

    >>> usable_logprobs([("yes", -0.1), ("no", -math.inf)]), usable_logprobs([("yes", math.nan)])
    (True, False)
    >>> usable_logprobs([("yes", math.inf)]), usable_logprobs([("yes", 0.5)])
    (False, False)
    """
    return all(isinstance(lp, (int, float)) and not math.isnan(lp) and lp <= 1e-6 for _, lp in top_logprobs)


def label_probabilities(
    top_logprobs: list[tuple[str, float]], verbalisers: dict[str, tuple[str, ...]], labels: list[str]
) -> tuple[tuple[float, ...] | None, float]:
    """P(label) from the first answer token's top log-probabilities: the mass of every token that is a
    verbaliser of the label up to case and surrounding space ("yes", "Yes", " yes"), normalised over the
    labels; and the mass on other tokens (1 − the labels' mass). None when no verbaliser is in the top k.

    >>> top = [("yes", math.log(.5)), ("No", math.log(.2)), (" no", math.log(.1)), ("I", math.log(.1))]
    >>> probs, other = label_probabilities(top, {"FP": ("yes",), "N": ("no",)}, ["N", "FP"])
    >>> [round(p, 3) for p in probs], round(other, 3)
    ([0.375, 0.625], 0.2)
    """
    mass = dict.fromkeys(labels, 0.0)
    words = {w.lower(): name for name, ws in verbalisers.items() for w in ws}
    for token, logprob in top_logprobs:
        name = words.get(token.strip().lower())
        if name in mass:
            mass[name] += math.exp(logprob)
    total = sum(mass.values())
    if total <= 0:
        return None, 1.0
    return tuple(mass[name] / total for name in labels), max(0.0, 1.0 - total)


def sampled_probabilities(parsed: list[Parsed], labels: list[str]) -> tuple[float, ...] | None:
    """Self-consistency: each label's share of the samples that parsed (None when none did)."""
    said = [p.label for p in parsed if p.status == "ok"]
    if not said:
        return None
    return tuple(said.count(name) / len(said) for name in labels)


_SCORE = re.compile(r"^\W*score\s*[:=]\s*(.*)$", re.IGNORECASE | re.MULTILINE)
_REASON = re.compile(r"^\W*reason\s*[:=]\s*(.*)$", re.IGNORECASE | re.MULTILINE)
# an answer-first reply: "2", "2.", "2 - it reads well", "The answer is 2.", "The score is 2", "Rating: 2"
_LEADING = re.compile(
    r"\A\s*(?:(?:the\s+)?(?:answer|score|rating)(?:\s+is)?\s*:?\s*)?([-+]?\d+(?:\.\d+)?)(?!\s*[=/\d])(?:\W|\Z)",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"^[-+]?\d+(\.\d+)?")


@dataclass(frozen=True)
class Judged:
    status: str  # ok | unparsed | out-of-range | ambiguous | refusal | empty
    value: float | None = None
    reason: str | None = None


def judgement(text: str, low: int, high: int) -> Judged:
    """A judge's score: from a "Score: N" line, else from the start of an answer-first reply ("2. It reads
    well", "The answer is 2."); a whole number from `low` to `high`. Two "Score:" lines that differ are
    *ambiguous*; a number outside the scale is *out-of-range*; anything else (a scale recited, "1 = yes",
    a number only later in the text) is *unparsed*. The reason is the "Reason:" line, else the rest of the
    reply after the score.

    >>> judgement("Reason: it is fluent.\\nScore: 3", 0, 3)
    Judged(status='ok', value=3.0, reason='it is fluent.')
    >>> judgement("2. It reads well.", 0, 3), judgement("The answer is 1.", 0, 1).value
    (Judged(status='ok', value=2.0, reason='It reads well.'), 1.0)
    >>> judgement("Score: 5", 0, 3).status, judgement("I think 2", 0, 3).status, judgement("1 = yes", 0, 1).status
    ('out-of-range', 'unparsed', 'unparsed')
    >>> judgement("Score: 1\\nScore: 0", 0, 1).status, judgement("Score: 1.5", 0, 3).status
    ('ambiguous', 'unparsed')
    """
    if not text.strip():
        return Judged("empty")
    reason = _REASON.search(text)
    said = (reason.group(1).strip() or None) if reason else None
    if REFUSAL.match(text):
        return Judged("refusal", reason=said)
    numbers = [_NUMBER.match(m.group(1).strip()) for m in _SCORE.finditer(text)]
    leading = _LEADING.match(text) if not numbers else None
    if leading:
        numbers = [_NUMBER.match(leading.group(1))]
        said = said or text[leading.end() :].lstrip(" .:-\n").strip() or None
    if not numbers or numbers[0] is None or numbers[0].group(1):
        return Judged("unparsed", reason=said)
    values = {float(m.group(0)) for m in numbers if m is not None}
    if len(values) > 1:
        return Judged("ambiguous", reason=said)
    value = values.pop()
    if not low <= value <= high:
        return Judged("out-of-range", reason=said)
    return Judged("ok", value=value, reason=said)
