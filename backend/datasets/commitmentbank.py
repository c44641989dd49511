"""CommitmentBank (de Marneffe, Simons, Tonhauser; SuB 23, 2019): naturally occurring clause-embedding
items under an entailment-cancelling operator, with graded speaker-commitment ratings.

`CommitmentBank-items.csv`: 1,200 items, 20 columns read by position (the header repeats `Embedding`:
the fine-grained operator, then the same collapsed to negation / modal / question / conditional).
An item is an NLI pair: the target sentence (with its context) as premise, the rated complement
(`Prompt`) as hypothesis. Every rating (−3 … +3, from `Reponses`) is a crowd rating
(`cb_commitment`, raters numbered per item: the per-participant file is not public here).

There is no categorical gold label; this loader derives one from the mean rating, the rule of the
issue's three-way view (`label_of`): E if Mean ≥ 1 (the speaker is committed to the complement),
C if Mean ≤ −1 (committed to its negation), N otherwise. The real file gives E 390, N 424, C 386.
"""

from __future__ import annotations

import csv
import io
import math

from backend.datasets.base import DataError, Source, read_text
from backend.datasets.description import Description
from backend.store.bundle import Bundle

FILE = "CommitmentBank-items.csv"
HEADER = [
    "",
    "uID",
    "Verb",
    "Embedding",
    "Context",
    "Target",
    "Prompt",
    "ModalType",
    "MatTense",
    "MatSubjLemma",
    "MatSubjPer",
    "MatSubjNum",
    "Embedding",
    "genre",
    "factive",
    "mean.noTarget",
    "sd.noTarget",
    "Mean",
    "SD",
    "Reponses",
]
COLUMN = {name: i for i, name in enumerate(HEADER) if name != "Embedding"} | {"operator_fine": 3, "operator": 12}
OPERATORS = ("negation", "modal", "question", "conditional")
THRESHOLD = 1.0  # |Mean| ≥ 1: the speaker is taken to be committed (E) or committed to the negation (C)
# Projection (backend.analysis.projection): every item (the complement of a clause-embedding predicate under one
# of four operators); a rater's commitment rating of +1 or more says the complement survives. Family:
# NOPE's clause-embedding predicates, factive or not.
PROJECTION = {
    "trigger": "trigger_type",
    "operator": "operator",
    "operators": {"negation": "negation", "question": "question", "modal": "modal", "conditional": "conditional"},
    "human": {"criterion": "cb_commitment", "least": 1},
    "families": {
        "clause-embedding (factive)": "clause_embedding_predicates",
        "clause-embedding (non-factive)": "clause_embedding_predicates",
    },
}
# Gradient projection (analysis.gradient): the mean commitment rating (-3 ... +3) per verb and per operator; a
# model's is its expected rating 3·P(E) - 3·P(C). The file numbers raters within each item.
GRADIENT = {
    "criterion": "cb_commitment",
    "scale": [-3, 3],
    "by": ["verb", "operator"],
    "model": {"E": 3.0, "C": -3.0},
    "formula": "3·P(E) − 3·P(C): the run's expected rating on people's −3…+3 scale",
    "raters": "per item",
}
DESCRIPTION = Description(
    "nli",
    ("E", "N", "C"),
    "E",
    ("all",),
    facets=("operator", "operator_fine", "factive", "genre", "verb"),
    projection=PROJECTION,
    normalised="fields are stripped of surrounding spaces; otherwise the text as published",
    gradient=GRADIENT,
)


def label_of(mean: float) -> str:
    """The derived three-way label of a mean commitment rating.

    >>> [label_of(m) for m in (3.0, 1.0, 0.99, -0.5, -1.0)]
    ['E', 'E', 'N', 'N', 'C']
    """
    return "E" if mean >= THRESHOLD else "C" if mean <= -THRESHOLD else "N"


def load(sources: dict[str, Source]) -> Bundle:
    path = sources["commitmentbank"].path / FILE
    bundle = Bundle(dataset={"dataset_id": "commitmentbank"})
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    header = next(reader, None)
    if header != HEADER:
        raise DataError(path, f"expected the header {HEADER}, got {header}", 1)
    seen = set()
    for row in reader:
        line = reader.line_num
        if len(row) != len(HEADER):
            raise DataError(path, f"expected {len(HEADER)} fields, got {len(row)}", line)
        example, ratings = _item(row, path, line)
        if example["example_id"] in seen:
            raise DataError(path, f"uID {example['example_id']!r} appears twice", line, "uID")
        seen.add(example["example_id"])
        bundle.examples.append(example)
        bundle.ratings += ratings
    return bundle


def _item(row: list[str], path, line: int) -> tuple[dict, list[dict]]:
    get = lambda name: row[COLUMN[name]].strip()  # noqa: E731
    operator = get("operator")
    if operator not in OPERATORS:
        raise DataError(path, f"expected one of {list(OPERATORS)}, got {operator!r}", line, "Embedding (2nd)")
    if get("factive") not in ("yes", "no"):
        raise DataError(path, f"expected yes or no, got {get('factive')!r}", line, "factive")
    try:
        values = [int(v) for v in get("Reponses").split(",")]
    except ValueError:
        raise DataError(
            path, f"expected integers separated by commas, got {get('Reponses')!r:.60}", line, "Reponses"
        ) from None
    if not values or any(not -3 <= v <= 3 for v in values):
        raise DataError(path, f"expected ratings from -3 to 3, got {values}", line, "Reponses")
    mean = _number(get("Mean"), path, line, "Mean")
    if not math.isclose(mean, sum(values) / len(values), abs_tol=1e-6):
        raise DataError(
            path, f"Mean {mean} is not the mean of Reponses ({sum(values) / len(values):.6f})", line, "Mean"
        )
    uid = get("uID")
    example = {
        "example_id": uid,
        "split": "all",
        "input": get("Target"),
        "context": get("Context") or None,
        "hypothesis": get("Prompt"),
        "gold_label": label_of(mean),
        "gold_labels": [label_of(mean)],
        "polarity": "negated" if "negation" in get("operator_fine") else "non-negated",
        "trigger_type": "clause-embedding (factive)" if get("factive") == "yes" else "clause-embedding (non-factive)",
        "extra": {
            "verb": get("Verb"),
            "operator": operator,
            "operator_fine": get("operator_fine"),
            "factive": get("factive"),
            "genre": get("genre"),
            "modal_type": get("ModalType") or None,
            "mat_tense": get("MatTense") or None,
            "mean": mean,
            "sd": _number(get("SD"), path, line, "SD"),
            "mean_no_target": _number(get("mean.noTarget"), path, line, "mean.noTarget", missing=True),
            "sd_no_target": _number(get("sd.noTarget"), path, line, "sd.noTarget", missing=True),
            "n_ratings": len(values),
        },
    }
    ratings = [
        {
            "dataset_id": "commitmentbank",
            "example_id": uid,
            "run_id": "",
            "rater_id": f"r{i}",
            "source": "crowd",
            "criterion": "cb_commitment",
            "value": float(v),
        }
        for i, v in enumerate(values, start=1)
    ]
    return example, ratings


def _number(text: str, path, line: int, field: str, missing: bool = False) -> float | None:
    if missing and text in ("", "NA"):
        return None
    try:
        return float(text)
    except ValueError:
        raise DataError(path, f"expected a number{' or NA' if missing else ''}, got {text!r}", line, field) from None
