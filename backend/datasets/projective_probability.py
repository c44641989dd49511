"""Projective probability (Degen & Tonhauser, Open Mind 2021 and Language 2022): how certain people take a speaker
to be of the content of a clause-embedding predicate's complement, on a 0–1 slider (see
../shared/datasets/projective_probability/SOURCE.md).

- `projectivity_no_fact_cd.csv` (2022, Exp. 1a): 6,916 ratings without a prior fact (split `no-fact`);
- `projectivity_cd.csv` (2021, Exp. 2b): 6,916 ratings after a fact that makes the content likely (`factH`,
  prior `high`) or unlikely (`factL`, prior `low`) (split `fact`).
One item per experiment × predicate × content (× prior in the fact experiment); the main-clause controls (`MC`,
`control`) are items of predicate `control`. Every slider rating is a crowd rating (`certainty`, 0–1, rater
`<experiment>-<workerid>`), and the item keeps their mean and count.

The files hold the predicate and the content, not the sentence people read ("Sue asks: Does Jane know that Bill
dances salsa? — Is Sue certain that Bill dances salsa?"). An item's premise is a documented reconstruction of
that polar question with a fixed subject: "Does Jane know that CONTENT?", "Is Jane annoyed that CONTENT?",
"Does Jane inform Sam that CONTENT?", "Is Jane right that CONTENT?" (`QUESTIONS`), and for a main-clause control
"Is it true that CONTENT?" (the experiment asked the content itself as a question). The fact, where one was
shown, is the context; the content is the hypothesis. There is no categorical gold: `gold_label` is empty, the
Overview scores no split, and what a model is compared with is people's mean certainty per predicate. The
2021 file's spellings (`annoyed`, `inform_Sam`, `be_right_that`) are those of 2022; `&quotechars` is the
files' code for 's (Hendrick&quotechars car, it&quotechars interesting): it is decoded to 's (`QUOTE`).
"""

from __future__ import annotations

import csv
import io
import math

from backend.datasets.base import DataError, Source, read_text
from backend.datasets.description import Description
from backend.store.bundle import Bundle

FILES = {"no-fact": "projectivity_no_fact_cd.csv", "fact": "projectivity_cd.csv"}
PREDICATES = (
    "be annoyed",
    "know",
    "see",
    "inform",
    "discover",
    "hear",
    "acknowledge",
    "reveal",
    "admit",
    "confess",
    "announce",
    "demonstrate",
    "establish",
    "confirm",
    "prove",
    "say",
    "suggest",
    "think",
    "be right",
    "pretend",
)
SPELLINGS = {"annoyed": "be annoyed", "inform_Sam": "inform", "be_right_that": "be right", "MC": "control"}
QUESTIONS = {"be annoyed": "Is Jane annoyed that {}?", "be right": "Is Jane right that {}?"}
QUESTIONS |= {"inform": "Does Jane inform Sam that {}?", "control": "Is it true that {}?"}
PRIORS = {"factH": "high", "factL": "low"}
# Gradient projection (analysis.gradient): people's certainty (0-1 sliders) per predicate in the no-fact experiment,
# and the prior effect (high - low) in the fact experiment; the controls are left out of both. A model's certainty
# is its probability that the content is true: P(E).
GRADIENT = {
    "criterion": "certainty",
    "scale": [0, 1],
    "by": ["predicate"],
    "split": "no-fact",
    "prior": "prior",
    "prior_split": "fact",
    "leave_out": {"predicate": ["control"]},
    "item": "content",  # a mixed model's items: the content, crossed with the predicates and the priors
    "model": {"E": 1.0},
    "formula": "P(E): the probability the run gives to the content being true",
}
QUOTE = "&quotechars"  # the files' code for 's in content and fact: each occurrence is a possessive or "it's"
DESCRIPTION = Description(
    "nli",
    ("E", "N", "C"),
    "E",
    (),
    facets=("predicate", "prior", "content", "experiment", "trigger_class"),
    gradient=GRADIENT,
    normalised=(
        "`&quotechars`, the files' code for a possessive or contracted 's, is decoded to 's in the content and the "
        "fact (Hendrick&quotechars car → Hendrick's car); the premise is a reconstruction of the question people read "
        "(the files hold the predicate and the content only)"
    ),
)


def question(predicate: str, content: str) -> str:
    """The reconstructed polar question (the premise).

    >>> question("know", "Bill dances salsa"), question("be annoyed", "Mary's aunt is sick")
    ('Does Jane know that Bill dances salsa?', "Is Jane annoyed that Mary's aunt is sick?")
    """
    return QUESTIONS.get(predicate, "Does Jane " + predicate + " that {}?").format(content)


def load(sources: dict[str, Source]) -> Bundle:
    root = sources["projective_probability"].path
    bundle = Bundle(dataset={"dataset_id": "projective_probability"})
    items: dict[str, dict] = {}
    for experiment, name in FILES.items():
        path = root / name
        if not path.is_file():
            bundle.notes.append(f"{name} not found: the {experiment} experiment is not loaded")
            continue
        bundle.ratings += _ratings(path, experiment, items)
    for item in items.values():
        values = item.pop("values")
        item["extra"] |= {"mean_certainty": sum(values) / len(values), "ratings": len(values)}
    bundle.examples = list(items.values())
    return bundle


def _ratings(path, experiment: str, items: dict[str, dict]) -> list[dict]:
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    needed = ["workerid", "content", "verb", "contentNr", "trigger_class", "response"]
    needed += ["fact", "fact_type"] if experiment == "fact" else []
    missing = [c for c in needed if c not in (reader.fieldnames or [])]
    if missing:
        raise DataError(path, f"missing column(s) {missing}; header is {reader.fieldnames}", 1)
    ratings = []
    for row in reader:
        line = reader.line_num
        verb = SPELLINGS.get(row["verb"], row["verb"])
        if verb not in PREDICATES and verb != "control":
            raise DataError(path, f"expected one of {list(PREDICATES)} or a control, got {row['verb']!r}", line, "verb")
        try:
            value = float(row["response"])
        except ValueError:
            raise DataError(path, f"expected a number from 0 to 1, got {row['response']!r}", line, "response") from None
        if not 0 <= value <= 1 or math.isnan(value):
            raise DataError(path, f"expected a number from 0 to 1, got {value}", line, "response")
        content = row["content"].replace(QUOTE, "'s").strip()
        prior = "none"
        if experiment == "fact" and verb != "control":
            prior = PRIORS.get(row["fact_type"])
            if prior is None:
                raise DataError(path, f"expected factH or factL, got {row['fact_type']!r}", line, "fact_type")
        key = f"{experiment}/{verb.replace(' ', '_')}/{row['contentNr']}" + (f"/{prior}" if prior != "none" else "")
        if key not in items:
            fact = row.get("fact", "").replace(QUOTE, "'s").strip() if experiment == "fact" else ""
            items[key] = {
                "example_id": key,
                "split": experiment,
                "input": question(verb, content),
                "context": fact or None,
                "hypothesis": content,
                "gold_label": None,
                "gold_labels": [],
                "ambiguous": False,
                "extra": {
                    "predicate": verb,
                    "prior": prior,
                    "content": row["contentNr"],
                    "experiment": experiment,
                    "trigger_class": row["trigger_class"],
                },
                "values": [],
            }
        elif items[key]["hypothesis"] != content:
            raise DataError(path, f"content {row['contentNr']} was {items[key]['hypothesis']!r} above", line, "content")
        items[key]["values"].append(value)
        ratings.append(
            {
                "dataset_id": "projective_probability",
                "example_id": key,
                "run_id": "",
                "rater_id": f"{experiment}-{row['workerid']}",
                "source": "crowd",
                "criterion": "certainty",
                "value": value,
            }
        )
    return ratings
