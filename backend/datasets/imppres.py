"""IMPPRES presupposition part (Jeretič, Warstadt, Bhooshan, Williams; ACL 2020): templated NLI items for
nine presupposition triggers under the operators of the "family of sentences".

`dataset/presupposition/<trigger>.jsonl`, 1,900 lines each (17,100 in all): 1,500 target items (`trigger`:
unembedded / negated / interrogative / modal / conditional; `presupposition`: positive → E, negated →
C, neutral → N; 100 paradigms) and 400 controls (`control_item`, `trigger1` vs `trigger2`). Stored:
premise/hypothesis, the trigger (file) as `trigger_type`, and in `extra` the operator, the hypothesis
kind, control, paradigm and `family` (trigger/paradigm: the items one template produced). Minimal
pairs: per paradigm, the unembedded item against each operator's item with the positive
presupposition as hypothesis (does it survive negation, a question, a modal, a conditional?).
The implicature part (two gold labels, logical and pragmatic) has another shape and is not loaded.
"""

from __future__ import annotations

from backend.datasets.base import DataError, Source, iter_jsonl, need
from backend.datasets.description import Description
from backend.store.bundle import Bundle

FOLDER = "dataset/presupposition"
TRIGGERS = (
    "all_n_presupposition",
    "both_presupposition",
    "change_of_state",
    "cleft_existence",
    "cleft_uniqueness",
    "only_presupposition",
    "possessed_definites_existence",
    "possessed_definites_uniqueness",
    "question_presupposition",
)
OPERATORS = ("unembedded", "negated", "interrogative", "modal", "conditional")
KINDS = ("positive", "negated", "neutral")
LABELS = {"entailment": "E", "neutral": "N", "contradiction": "C"}
PAIR_KINDS = {"negated": "negation", "interrogative": "question", "modal": "modal", "conditional": "conditional"}
# Projection (backend.analysis.projection): the items whose hypothesis is the presupposition itself; gold E by
# construction under every operator. Families: IMPPRES triggers → NOPE's trigger names where NOPE has
# the same trigger (clefts; change of state; "both"/"all N" are numeric determiners; the embedded
# question); "only" and possessed definites have no NOPE counterpart and keep their own family.
PROJECTION = {
    "trigger": "trigger_type",
    "operator": "operator",
    "where": {"hypothesis_kind": "positive"},
    "operators": {
        "unembedded": "unembedded",
        "negated": "negation",
        "interrogative": "question",
        "modal": "modal",
        "conditional": "conditional",
    },
    "families": {
        "cleft_existence": "clefts",
        "cleft_uniqueness": "clefts",
        "change_of_state": "change_of_state",
        "both_presupposition": "numeric_determiners",
        "all_n_presupposition": "numeric_determiners",
        "question_presupposition": "embedded_question",
        "only_presupposition": "only",
        "possessed_definites_existence": "possessed_definites",
        "possessed_definites_uniqueness": "possessed_definites",
    },
}
DESCRIPTION = Description(
    "nli",
    ("E", "N", "C"),
    "E",
    ("presupposition",),
    facets=("operator", "hypothesis_kind", "control"),
    projection=PROJECTION,
    normalised="nothing: the sentences as published",
)


def load(sources: dict[str, Source]) -> Bundle:
    root = sources["imppres"].path / FOLDER
    bundle = Bundle(dataset={"dataset_id": "imppres"})
    for trigger in TRIGGERS:
        path = root / f"{trigger}.jsonl"
        if not path.is_file():
            bundle.notes.append(f"{FOLDER}/{trigger}.jsonl not found: trigger {trigger} is not loaded")
            continue
        items = [_item(trigger, obj, path, line) for line, obj in iter_jsonl(path)]
        ids = [i["example_id"] for i in items]
        if len(set(ids)) != len(ids):
            raise DataError(path, "a pairID appears twice", None, "pairID")
        bundle.examples += items
        bundle.pairs += _pairs(trigger, items)
    return bundle


def _item(trigger: str, obj: dict, path, line: int) -> dict:
    if need(obj, "UID", str, path, line) != trigger:
        raise DataError(path, f"expected {trigger!r} (the file's trigger), got {obj['UID']!r}", line, "UID")
    label = LABELS.get(need(obj, "gold_label", str, path, line))
    if label is None:
        raise DataError(path, f"expected one of {list(LABELS)}, got {obj['gold_label']!r}", line, "gold_label")
    control = obj.get("control_item") is True
    if control:
        first, second = (need(obj, f"trigger{i}", str, path, line) for i in (1, 2))
        operator, kind = f"{first} vs {second}", "control"
    else:
        operator, kind = need(obj, "trigger", str, path, line), need(obj, "presupposition", str, path, line)
        if operator not in OPERATORS:
            raise DataError(path, f"expected one of {list(OPERATORS)}, got {operator!r}", line, "trigger")
        if kind not in KINDS:
            raise DataError(path, f"expected one of {list(KINDS)}, got {kind!r}", line, "presupposition")
    paradigm = need(obj, "paradigmID", int, path, line)
    return {
        "example_id": f"{trigger}/{need(obj, 'pairID', str, path, line)}",
        "split": "presupposition",
        "input": need(obj, "sentence1", str, path, line),
        "hypothesis": need(obj, "sentence2", str, path, line),
        "gold_label": label,
        "gold_labels": [label],
        "trigger_type": trigger,
        "polarity": "negated" if operator.startswith("negated") else "non-negated",
        "extra": {
            "operator": operator,
            "hypothesis_kind": kind,
            "control": control,
            "paradigm": paradigm,
            "family": f"{trigger}/{paradigm}",
        },
    }


def _pairs(trigger: str, items: list[dict]) -> list[dict]:
    """Per paradigm: the unembedded item against each operator's, both with the positive presupposition."""
    positive = {
        (i["extra"]["paradigm"], i["extra"]["operator"]): i
        for i in items
        if i["extra"]["hypothesis_kind"] == "positive"
    }
    pairs = []
    for (paradigm, operator), item in sorted(positive.items()):
        base = positive.get((paradigm, "unembedded"))
        if operator in PAIR_KINDS and base is not None:
            pairs.append(
                {
                    "pair_id": f"imppres:{trigger}:{paradigm}:{operator}",
                    "kind": PAIR_KINDS[operator],
                    "example_a": base["example_id"],
                    "example_b": item["example_id"],
                    "role_a": "unembedded",
                    "role_b": operator,
                }
            )
    return pairs
