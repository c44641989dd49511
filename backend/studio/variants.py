"""A projection family from one sentence: the negated, polar-question, modal and conditional-antecedent
variants of a simple declarative premise, by rule.

The rules find the finite verb: an auxiliary or the copula (moved, negated or replaced as English does),
or a main verb in the past or present (do-support: *stopped* → *didn't stop*, *Did … stop?*, *might
have stopped*), with verb forms from `lemminflect` (a maintained lemmatiser and inflector whose data
ships in its PyPI package, so it works offline). What the rules do not cover they refuse, with the
reason (CannotTransform), rather than produce a broken sentence: questions and exclamations, a
sentence already negated, a subject with a relative clause or a fronted phrase, no finite verb found,
or a verb form they cannot read (a plural present after a noun subject, a modal made modal again).

The conditional variant is the sentence as the antecedent of "If …, it's okay." (IMPPRES's frame).
Every variant is meant to be read and edited before it is saved: the Studio page shows them as a table.
"""

from __future__ import annotations

import re

import yaml
from lemminflect import getAllLemmas, getInflection

MODALS = {"will", "would", "can", "could", "shall", "should", "may", "might", "must"}
BE = {"am", "is", "are", "was", "were"}
HAVE = {"has", "have", "had"}
DO = {"do", "does", "did"}
AUXILIARIES = MODALS | BE | HAVE | DO
NEGATIONS = {"not", "n't", "never", "no", "nobody", "nothing", "none", "neither", "nor"}
DETERMINERS = {
    "the",
    "a",
    "an",
    "my",
    "your",
    "his",
    "her",
    "its",
    "our",
    "their",
    "this",
    "that",
    "these",
    "those",
    "some",
    "every",
    "each",
    "no",
    "any",
    "all",
    "both",
    "several",
    "many",
    "few",
}
PRONOUNS = {"he", "she", "it", "we", "they", "you", "i", "someone", "somebody", "everyone", "everybody"}
PLURAL_PRONOUNS = {"we", "they", "you", "i"}
RELATIVES = {"who", "which", "that", "whose", "whom", "where", "when"}
CONSEQUENT = "it's okay"
MAX_SUBJECT = 6  # words before the verb; longer subjects are refused as too likely misread


class CannotTransform(ValueError):
    """The rules cannot make this variant of this sentence (the message says why)."""


def _finite(word: str, before: str | None) -> tuple[str, str] | None:
    """(lemma, tag) when `word` is a finite main verb form: VBD (past), VBZ (3rd singular), VBP (after
    I/we/you/they)."""
    lemmas = getAllLemmas(word.lower()).get("VERB")
    if not lemmas:
        return None
    lemma = lemmas[0]
    if before is not None and before.lower() in DETERMINERS and "NOUN" in getAllLemmas(word.lower()):
        return None  # "the dogs": a noun after a determiner
    for tag in ("VBD", "VBZ"):
        if word.lower() in {w.lower() for w in getInflection(lemma, tag=tag)}:
            return lemma, tag
    if word.lower() == lemma and before is not None and before.lower() in PLURAL_PRONOUNS:
        return lemma, "VBP"
    return None


def _subject_start(words: list[str]) -> list[str]:
    """The subject with its first word lower-cased where it is not a name or 'I' (for 'Did the teacher …')."""
    first = words[0]
    keep = first == "I" or (first[:1].isupper() and first.lower() not in DETERMINERS | PRONOUNS)
    return [first if keep else first.lower(), *words[1:]]


def analyse(sentence: str) -> tuple[list[str], int, str]:
    """(words, index of the finite verb, kind: 'aux' or a main-verb tag) or CannotTransform."""
    text = " ".join(sentence.split())
    if not text:
        raise CannotTransform("the sentence is empty")
    if text.endswith(("?", "!")):
        raise CannotTransform("only a declarative sentence (ending with a full stop) can be transformed")
    words = re.sub(r"[.]$", "", text).split(" ")
    lowered = [w.lower().strip(",;:") for w in words]
    if any(w in NEGATIONS or w.endswith("n't") for w in lowered):
        raise CannotTransform("the sentence is already negated; type its affirmative form")
    for i in range(1, min(len(words), MAX_SUBJECT + 1)):
        if "," in words[i - 1]:
            break  # a fronted phrase or a list before the verb: not a plain subject
        if lowered[i - 1] in RELATIVES:
            raise CannotTransform("the subject has a relative clause: the rules cannot tell its verb from the main one")
        if lowered[i] in AUXILIARIES:
            return words, i, "aux"
        found = _finite(lowered[i], lowered[i - 1])
        if found:
            return words, i, found[1]
    raise CannotTransform(f"no finite verb found within the first {MAX_SUBJECT} words after a plain subject")


def variants(sentence: str) -> dict[str, str]:
    """{operator: sentence} for unembedded, negation, question, modal and conditional; an operator the
    rules cannot do for this sentence maps to a CannotTransform (the others are still made)."""
    words, v, kind = analyse(sentence)
    subject, verb, rest = words[:v], words[v], words[v + 1 :]
    made: dict[str, object] = {"unembedded": " ".join(words) + "."}
    tail = (" " + " ".join(rest)) if rest else ""
    asked = " ".join(_subject_start(subject))
    if kind == "aux":
        low = verb.lower()
        made["negation"] = " ".join(subject) + (" cannot" if low == "can" else f" {verb} not") + tail + "."
        made["question"] = low.capitalize() + " " + asked + tail + "?"
        if low in MODALS:
            made["modal"] = (
                CannotTransform(f"'{verb}' is already a modal")
                if low in {"might", "may"}
                else " ".join(subject) + " might" + tail + "."
            )
        elif low in BE:
            made["modal"] = (
                " ".join(subject) + (" might have been" if low in {"was", "were"} else " might be") + tail + "."
            )
        elif low in HAVE:
            made["modal"] = " ".join(subject) + " might have" + tail + "."
        else:
            made["modal"] = CannotTransform(f"the rules do not make '{verb} …' modal; edit the sentence")
    else:
        lemma = getAllLemmas(verb.lower())["VERB"][0]
        do = {"VBD": "did", "VBZ": "does", "VBP": "do"}[kind]
        made["negation"] = " ".join(subject) + f" {do}n't {lemma}" + tail + "."
        made["question"] = do.capitalize() + " " + asked + f" {lemma}" + tail + "?"
        if kind == "VBD":
            participle = (getInflection(lemma, tag="VBN") or (verb,))[0]
            made["modal"] = " ".join(subject) + f" might have {participle}" + tail + "."
        else:
            made["modal"] = " ".join(subject) + f" might {lemma}" + tail + "."
    made["conditional"] = "If " + " ".join(_subject_start(subject)) + f" {verb}" + tail + f", {CONSEQUENT}."
    return made


def template(name: str, trigger: str, rows: list[dict]) -> str:
    """A one-item template (YAML, for `templates.expand`) from edited variants: each row's operator,
    premise, hypothesis and gold label; the first row is the family's base. Braces are kept literal."""

    literal = lambda text: str(text).replace("{", "{{").replace("}", "}}")  # noqa: E731
    conditions = [
        {
            "name": str(r["operator"]),
            "operator": str(r["operator"]),
            "premise": literal(r["premise"]),
            "hypothesis": literal(r["hypothesis"]),
            "gold": str(r["gold"]),
        }
        for r in rows
    ]
    return yaml.safe_dump(
        {"name": name, "trigger": trigger, "slots": {}, "conditions": conditions}, sort_keys=False, allow_unicode=True
    )
