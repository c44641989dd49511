"""Which column of a user's file plays which role, and how its label values map onto a dataset's labels.

Roles: `example_id`; the text (`premise` + `hypothesis` for NLI, `question` otherwise); `split`;
the prediction: `label`, `probs` (a list per row, or one column per label: `prob_E`, `p_FP`, ...),
`logits` (likewise; softmax is applied and recorded), `answer` (QA), `presupposition` and
`correction` (written text). Columns are guessed from the names below (first found wins) unless
mapped explicitly (`--map label=pred_label`); other columns are ignored.
"""

from __future__ import annotations

import re

import pandas as pd

from backend.datasets.description import Description

GUESSES = {
    "example_id": ("example_id", "id", "uid", "guid", "qid", "item_id", "pair_id_item"),
    "premise": ("premise", "sentence1", "context_premise", "input"),
    "hypothesis": ("hypothesis", "sentence2"),
    "question": ("question", "query", "input", "text"),
    "split": ("split",),
    "label": ("predicted_label", "pred_label", "prediction", "pred", "predicted", "label", "output_label"),
    "probs": ("probs", "probabilities", "probability", "prob", "scores", "label_probs"),
    "logits": ("logits", "logit"),
    "answer": ("answer", "predicted_answer", "pred_answer", "prediction", "pred", "output", "generation"),
    "presupposition": ("presupposition", "predicted_presupposition"),
    "correction": ("correction", "predicted_correction"),
}
ROLES = tuple(GUESSES)
PER_LABEL = {
    "probs": ("prob_{}", "p_{}", "prob({})", "{}_prob", "probability_{}"),
    "logits": ("logit_{}", "logits_{}", "{}_logit"),
}
# label words accepted for a dataset label (its own name is always accepted, in any case)
SYNONYMS = {  # per label set: NLI's N is neutral, detection's N is a normal question
    ("E", "N", "C"): {
        "E": ("entailment", "entailed", "entails", "entail"),
        "N": ("neutral",),
        "C": ("contradiction", "contradicted", "contradicts", "contradict"),
    },
    ("N", "FP"): {
        "N": ("normal", "valid", "no false premise", "no_false_premise"),
        "FP": (
            "false premise",
            "false_premise",
            "false presupposition",
            "false_presupposition",
            "false-premise",
            "false assumption",
            "false_assumption",
            "questionable",
        ),
    },
}
TRUE_WORDS, FALSE_WORDS = ("yes", "true", "1"), ("no", "false", "0")
_KEYS = ("example_id", "split")
TASK_ROLES = {
    "nli": (*_KEYS, "premise", "hypothesis", "label", "probs", "logits"),
    "detect": (*_KEYS, "question", "label", "probs", "logits"),
    "qa": (*_KEYS, "question", "answer"),
    "write": (*_KEYS, "question", "presupposition", "correction"),
}


def guess_task(columns: list[str], description: Description, explicit: dict[str, str] | None = None) -> str:
    """The task a predictions file is for, from its columns (and `explicit` mappings) and the dataset's task: a
    writing run when it has a presupposition or correction column; an NLI run when it has a premise and a
    hypothesis; the dataset's own task when the file holds that task's prediction (a label, probabilities or
    logits for nli and detect, an answer for qa); a QA run when it has an answer but no label; else the dataset's
    task (whose check then names the column it lacks).

    >>> qaqa = Description("detect", ("N", "FP"), "FP", ("eval",))
    >>> [guess_task(c, qaqa) for c in (["question", "answer"], ["question", "presupposition", "correction"])]
    ['qa', 'write']
    >>> [guess_task(c, qaqa) for c in (["premise", "hypothesis", "label"], ["question", "prediction"], ["id"])]
    ['nli', 'detect', 'detect']
    """
    explicit = explicit or {}

    def found(task: str) -> set[str]:
        try:
            return set(resolve(columns, task, {r: c for r, c in explicit.items() if r in TASK_ROLES[task]}))
        except ValueError:  # an unknown mapping: the check names it
            return set()

    def predicts(task: str) -> bool:
        if task == "qa":
            return "answer" in found(task)
        if task not in ("nli", "detect"):
            return False
        per_label = any(per_label_columns(columns, description.labels, kind) for kind in ("probs", "logits"))
        return per_label or bool(found(task) & {"label", "probs", "logits"})

    if found("write") & {"presupposition", "correction"}:
        return "write"
    if {"premise", "hypothesis"} <= found("nli"):
        return "nli"
    if predicts(description.task):
        return description.task
    if predicts("qa") and not predicts("detect"):
        return "qa"
    return description.task


def resolve(columns: list[str], task: str, explicit: dict[str, str]) -> dict[str, str]:
    """role → column for a run of `task` (see `guess`)."""
    return guess(columns, {role: GUESSES[role] for role in TASK_ROLES[task]}, explicit, ROLES)


def guess(
    columns: list[str], guesses: dict[str, tuple[str, ...]], explicit: dict[str, str], roles_known: tuple[str, ...]
) -> dict[str, str]:
    """role → column: the explicit mapping first (ValueError naming an unknown role or column), then for
    each role in `guesses` the first of its names the file has (case-insensitive), each column once."""
    bad_roles = sorted(set(explicit) - set(roles_known))
    if bad_roles:
        raise ValueError(f"--map {bad_roles[0]}=...: unknown role; roles are {list(roles_known)}")
    missing = [f"{role}={col}" for role, col in explicit.items() if col not in columns]
    if missing:
        raise ValueError(f"--map {missing[0]}: the file has no such column; its columns are {columns}")
    lowered = {c.lower().strip(): c for c in columns}
    taken, roles = set(explicit.values()), dict(explicit)
    for role, names in guesses.items():
        for guess in () if role in roles else names:
            if lowered.get(guess) is not None and lowered[guess] not in taken:
                roles[role] = lowered[guess]
                taken.add(lowered[guess])
                break
    return roles


def per_label_columns(columns: list[str], labels: tuple[str, ...], kind: str) -> dict[str, str] | None:
    """{label: column} when the file has one `kind` (probs/logits) column for every label, else None."""
    lowered = {c.lower().strip(): c for c in columns}
    found = {}
    words = label_words(labels)
    for label in labels:
        names = [w for w, named in words.items() if named == label]
        hit = next(
            (lowered[p.format(n).lower()] for n in names for p in PER_LABEL[kind] if p.format(n).lower() in lowered),
            None,
        )
        if hit is None:
            return None
        found[label] = hit
    return found


def label_lookup(
    values: pd.Series, description: Description, order: tuple[str, ...], explicit: dict[str, str]
) -> dict[str, str | None]:
    """Each distinct file value (as trimmed text) → a dataset label, or None when it cannot be mapped.

    In order: the explicit map; a number with a declared `order` (0 → order[0]); the label itself or a
    synonym (entailment → E, false premise → FP); for a two-label dataset yes/true/1 → its positive
    label and no/false/0 → the other.
    """
    labels, words = description.labels, label_words(description.labels)
    by_order = {str(i): name for i, name in enumerate(order)}
    numeric = any(_integer(label.lower()).lstrip("-").isdigit() for label in labels)  # labels like 0/1: no yes/no rule
    two = len(labels) == 2 and description.positive is not None and not numeric
    other = next((x for x in labels if x != description.positive), None)
    unknown = [f"{k}={v}" for k, v in explicit.items() if _named(v, words) is None]
    if unknown:
        raise ValueError(f"--label-map {unknown[0]}: the target is not one of the dataset's labels {list(labels)}")
    lookup = {}
    for value in values.dropna().astype(str).str.strip().unique():
        key = _integer(value.lower())  # 1.0 (a number column with a blank cell) is 1
        if value in explicit or key in explicit:
            target = explicit.get(value, explicit.get(key))
        elif key in by_order:
            target = by_order[key]
        elif key in words:
            target = words[key]
        elif two and key in TRUE_WORDS:
            target = description.positive
        elif two and key in FALSE_WORDS:
            target = other
        else:
            target = None
        lookup[value] = _named(target, words) if target is not None else None
    return lookup


def label_words(labels: tuple[str, ...]) -> dict[str, str]:
    """Lower-case word → label: each label itself, and the synonyms of its label set (entailment → E)."""
    synonyms = SYNONYMS.get(tuple(labels), {})
    return {w: label for label in labels for w in (label.lower(), *synonyms.get(label, ()))}


def order_labels(order: tuple[str, ...], description: Description) -> tuple[str, ...]:
    """A declared label order (names or synonyms) as dataset labels; ValueError naming what is unknown."""
    words = label_words(description.labels)
    named = tuple(_named(x, words) for x in order)
    unknown = [x for x, n in zip(order, named) if n is None]
    if unknown or (named and sorted(named) != sorted(description.labels)):
        raise ValueError(
            f"--label-order {','.join(order)}: expected each of the dataset's labels "
            f"{list(description.labels)} once (or their names, e.g. entailment)"
        )
    return named


def _named(value: str, words: dict[str, str]) -> str | None:
    return words.get(_integer(str(value).strip().lower()))


def _integer(text: str) -> str:
    return re.sub(r"\.0$", "", text)
