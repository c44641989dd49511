"""PROPRES (Asami & Sugawara, CoNLL 2023): templated NLI items for presupposition triggers under four
environments, and crowd judgements of 619 items under five (see ../shared/datasets/propres/SOURCE.md).

- `tsv/<environment>_<trigger>.tsv`: the templated items (splits train / test), the template's label as gold;
  28 trigger files of 200 rows and 4 `*_control` files of 1,200 (non-presupposing controls). The
  `<environment>_all.tsv` files concatenate the others and are not read.
- `human/human_annotated_data_for_target_conditions.csv`: 24,631 judgements of 619 distinct items (environment,
  trigger, premise, hypothesis; split `human`). The item's gold is the template's label (`predifined_label`,
  sic); every person's label (`human_selection`) is a crowd rating (`propres_label`, raters numbered per item:
  the file names none), and the crowd's label counts are kept with the item (`extra.crowd`). Most of these
  items are not in the TSVs. The rows of 133 items carry more than one template label (67 of them
  comparatives, 101 under a modal): such an item's gold is its most frequent template label (ties: E, N, C),
  `gold_labels` lists every template label its rows give, `ambiguous` is set, and `extra.templates` counts them;
  `extra.differing` counts the judgements that differ from their own row's template label (for
  `analysis.projection.template_vs_people`).

Environments become the shared operator names (active → unembedded, neg → negation); triggers keep PROPRES's
names except `csv` / `cos` (change-of-state verb), spelt `change_of_state` as NOPE and IMPPRES do. Commas in
the conditional premises are written `%2C` in the files and decoded here.
"""

from __future__ import annotations

import csv
import io
from collections import Counter

from backend.datasets.base import DataError, Source, read_text
from backend.datasets.description import Description
from backend.store.bundle import Bundle

ENVIRONMENTS = {
    "active": "unembedded",
    "unembedded": "unembedded",
    "negation": "negation",
    "neg": "negation",
    "question": "question",
    "conditional": "conditional",
    "modal": "modal",
}
TRIGGERS = {"csv": "change_of_state", "cos": "change_of_state"}  # else PROPRES's own name
TSV_TRIGGERS = ("again", "comparative", "csv", "factive", "manner", "relative", "temporal", "control")
TSV_ENVIRONMENTS = ("active", "negation", "question", "conditional")
LABELS = {"entailment": "E", "neutral": "N", "contradiction": "C"}
HUMAN = "human/human_annotated_data_for_target_conditions.csv"
HUMAN_COLUMNS = ["environment", "trigger", "premise", "hypothesis", "predifined_label", "human_selection", "match"]
TSV_COLUMNS = ["", "sentence1", "sentence2", "label", "heuristics", "example1", "example2", "split"]
# Projection (backend.analysis.projection): the people-rated items whose hypothesis is the presupposition (template
# label E, the same on every row of the item); a person's E says it survives. Families: NOPE's names where
# PROPRES's trigger is one of them (`again` with NOPE's re- verbs: both presuppose an earlier occurrence);
# manner adverbs have no counterpart and keep their name.
PROJECTION = {
    "trigger": "trigger_type",
    "operator": "operator",
    "where": {"split": "human", "gold_label": "E", "ambiguous": False},
    "template": {"where": {"split": "human"}, "judgements": "judgements", "differing": "differing"},
    "operators": {o: o for o in ("unembedded", "negation", "question", "conditional", "modal")},
    "human": {"criterion": "propres_label", "label": "E"},
    "families": {
        "change_of_state": "change_of_state",
        "factive": "clause_embedding_predicates",
        "comparative": "comparatives",
        "temporal": "temporal_adverbs",
        "again": "re_verbs",
    },
}
DESCRIPTION = Description(
    "nli",
    ("E", "N", "C"),
    "E",
    ("test", "human"),
    constants=("E",),
    normalised="`%2C`, the files' code for a comma, is decoded to , in premises and hypotheses; fields are stripped of "
    "surrounding spaces",
    facets=("operator", "heuristics"),
    projection=PROJECTION,
)


def load(sources: dict[str, Source]) -> Bundle:
    root = sources["propres"].path
    bundle = Bundle(dataset={"dataset_id": "propres"})
    for environment in TSV_ENVIRONMENTS:
        for trigger in TSV_TRIGGERS:
            path = root / "tsv" / f"{environment}_{trigger}.tsv"
            if not path.is_file():
                bundle.notes.append(f"tsv/{path.name} not found: {environment} × {trigger} is not loaded")
                continue
            bundle.examples += _templated(path, environment, trigger)
    path = root / HUMAN
    if path.is_file():
        examples, ratings = _human(path)
        bundle.examples += examples
        bundle.ratings += ratings
    else:
        bundle.notes.append(f"{HUMAN} not found: the crowd judgements are not loaded")
    return bundle


def _reader(path, delimiter: str, expected: list[str]) -> csv.reader:
    reader = csv.reader(io.StringIO(read_text(path), newline=""), delimiter=delimiter)
    header = next(reader, None)
    if header != expected:
        raise DataError(path, f"expected the header {expected}, got {header}", 1)
    return reader


def _label(text: str, path, line: int, field: str) -> str:
    label = LABELS.get(text.strip())
    if label is None:
        raise DataError(path, f"expected one of {list(LABELS)}, got {text!r}", line, field)
    return label


def _templated(path, environment: str, trigger: str) -> list[dict]:
    reader = _reader(path, "\t", TSV_COLUMNS)
    items = []
    for row in reader:
        line = reader.line_num
        if len(row) != len(TSV_COLUMNS):
            raise DataError(path, f"expected {len(TSV_COLUMNS)} tab-separated fields, got {len(row)}", line)
        index, premise, hypothesis, label, heuristics, _, _, split = (field.strip() for field in row)
        if split not in ("train", "test"):
            raise DataError(path, f"expected train or test, got {split!r}", line, "split")
        if not premise or not hypothesis:
            raise DataError(path, "empty sentence", line, "sentence1" if not premise else "sentence2")
        gold = _label(label, path, line, "label")
        items.append(
            {
                "example_id": f"{environment}-{trigger}-{index}",
                "split": split,
                "input": premise.replace("%2C", ","),
                "hypothesis": hypothesis.replace("%2C", ","),
                "gold_label": gold,
                "gold_labels": [gold],
                "ambiguous": False,
                "trigger_type": TRIGGERS.get(trigger, trigger),
                "polarity": "negated" if environment == "negation" else "non-negated",
                "extra": {"operator": ENVIRONMENTS[environment], "heuristics": heuristics or "-", "file": path.name},
            }
        )
    if len({i["example_id"] for i in items}) != len(items):
        raise DataError(path, "a row index appears twice", None, "(row index)")
    return items


def _human(path) -> tuple[list[dict], list[dict]]:
    """One example per distinct (environment, trigger, premise, hypothesis), in order of first appearance."""
    reader = _reader(path, ",", HUMAN_COLUMNS)
    items: dict[tuple, dict] = {}
    ratings = []
    for row in reader:
        line = reader.line_num
        if len(row) != len(HUMAN_COLUMNS):
            raise DataError(path, f"expected {len(HUMAN_COLUMNS)} fields, got {len(row)}", line)
        environment, trigger, premise, hypothesis, template, person, match = (f.strip() for f in row)
        if environment not in ENVIRONMENTS:
            raise DataError(path, f"expected one of {sorted(ENVIRONMENTS)}, got {environment!r}", line, "environment")
        gold, said = _label(template, path, line, "predifined_label"), _label(person, path, line, "human_selection")
        if match not in ("0", "1") or (match == "1") != (gold == said):
            raise DataError(path, f"match {match!r} disagrees with the two labels ({gold}, {said})", line, "match")
        key = (environment, trigger, premise, hypothesis)
        if key not in items:
            items[key] = {
                "example_id": f"human-{len(items) + 1}",
                "split": "human",
                "input": premise.replace("%2C", ","),
                "hypothesis": hypothesis.replace("%2C", ","),
                "trigger_type": TRIGGERS.get(trigger, trigger),
                "polarity": "negated" if ENVIRONMENTS[environment] == "negation" else "non-negated",
                "extra": {"operator": ENVIRONMENTS[environment], "heuristics": "-", "crowd": Counter()},
                "templates": Counter(),
                "differing": 0,
            }
        item = items[key]
        item["templates"][gold] += 1
        item["differing"] += gold != said
        item["extra"]["crowd"][said] += 1
        n = sum(item["extra"]["crowd"].values())
        ratings.append(
            {
                "dataset_id": "propres",
                "example_id": item["example_id"],
                "run_id": "",
                "rater_id": f"p{n}",
                "source": "crowd",
                "criterion": "propres_label",
                "label": said,
            }
        )
    examples = list(items.values())
    for item in examples:
        crowd, templates, differing = item["extra"]["crowd"], item.pop("templates"), item.pop("differing")
        item["gold_label"] = max(LABELS.values(), key=lambda label: templates[label])  # ties: E, then N, then C
        item["gold_labels"] = [label for label in LABELS.values() if templates[label]]
        item["ambiguous"] = len(templates) > 1
        item["extra"] |= {
            "crowd": {label: crowd[label] for label in LABELS.values()},
            "templates": {label: templates[label] for label in LABELS.values()},
            "judgements": crowd.total(),
            "differing": differing,  # judgements whose label is not their own row's template label
        }
    return examples, ratings
