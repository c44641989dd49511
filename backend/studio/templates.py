"""Templates → a user dataset of projection families: items × conditions, as in SyntaxGym (each item a
family, one sentence per condition) with CheckList-style slots and filler lists.

A template file is YAML:

    name: stop-under-operators          # the dataset id it is stored as
    trigger: change_of_state            # every item's trigger_type
    slots:                              # filler lists; every combination is an item ...
      name: [Jo, Sam]
      habit: [smoke, swim]
    items:                              # ... unless items are listed (each one value per slot)
      - {name: Jo, habit: smoke}
    conditions:                         # the first is the family's base: pairs are (base, each other)
      - name: plain
        operator: unembedded            # unembedded | negation | question | modal | conditional
        premise: "{name} stopped {habit}ing."
        hypothesis: "{name} used to {habit}."
        gold: E                         # E | N | C

`expand` checks everything first (an undefined slot, an empty filler list, an unknown operator or
label, a duplicate item or condition: TemplateError with the line and field) and counts before it
builds (more than MAX_EXAMPLES is refused with the count). `bundle` turns the expansion into a user
dataset (`backend.imports.datasets`): trigger_type, the operator, the condition (`variant`) and item as facets, a
projection spec (so it joins the Projection page) and one pair per item and non-base condition,
with the template's text and SHA-256 kept as the dataset's provenance.

Hand-written rather than a library: CheckList's template engine pulls in its own model stack and
SyntaxGym's is a web service; a slot fill is `str.format_map`.
"""

from __future__ import annotations

import hashlib
import itertools
import string
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from backend.datasets.base import DataError
from backend.datasets.description import OPERATORS
from backend.datasets.validation import yaml_failer
from backend.imports import datasets as user_datasets
from backend.imports.files import read
from backend.store.bundle import Bundle

MAX_EXAMPLES = 200_000
LABELS = ("E", "N", "C")


class TemplateError(DataError):
    """A template problem: names the file, the line and the field."""


@dataclass(frozen=True)
class Expansion:
    name: str
    trigger: str
    conditions: list[dict]
    frame: pd.DataFrame  # one row per item × condition
    text: str  # the template, as read
    sha256: str


def expand(text: str, path: str = "template.yaml", limit: int = MAX_EXAMPLES) -> Expansion:
    """The template's items × conditions; TemplateError (line, field) on the first problem."""
    fail = yaml_failer(text, path, TemplateError)

    spec = yaml.safe_load(text) or {}
    if not isinstance(spec, dict):
        fail("expected a mapping with name, trigger, slots and conditions")
    for key in ("name", "trigger", "conditions"):
        if not spec.get(key):
            fail(f"missing {key!r}", key)
    slots = spec.get("slots") or {}
    if not isinstance(slots, dict):
        fail("slots: expected a mapping of slot name → list of fillers", "slots")
    for slot, fillers in slots.items():
        if not isinstance(fillers, list) or not fillers:
            fail(f"slot {slot!r} has no fillers: give a non-empty list", "slots", slot)
    conditions = spec["conditions"]
    if not isinstance(conditions, list):
        fail("conditions: expected a list", "conditions")
    seen = set()
    for i, condition in enumerate(conditions):
        if not isinstance(condition, dict):
            fail("a condition is a mapping with name, operator, premise, hypothesis and gold", "conditions", i)
        for key in ("name", "operator", "premise", "hypothesis", "gold"):
            if not condition.get(key):
                fail(f"condition {i + 1} has no {key!r}", "conditions", i, key)
        if condition["name"] in seen:
            fail(f"condition {condition['name']!r} is defined twice", "conditions", i, "name")
        seen.add(condition["name"])
        if condition["operator"] not in OPERATORS:
            fail(f"operator {condition['operator']!r} is not one of {OPERATORS}", "conditions", i, "operator")
        if condition["gold"] not in LABELS:
            fail(f"gold {condition['gold']!r} is not one of {list(LABELS)}", "conditions", i, "gold")
        for field in ("premise", "hypothesis"):
            for _, slot, _, _ in string.Formatter().parse(str(condition[field])):
                if slot is not None and slot not in slots:
                    fail(
                        f"slot {{{slot}}} is not defined under slots (defined: {sorted(slots)})", "conditions", i, field
                    )
    items = spec.get("items")
    if items is None:
        count = 1
        for fillers in slots.values():
            count *= len(fillers)
    else:
        if not isinstance(items, list) or not items:
            fail("items: expected a non-empty list of slot values", "items")
        count = len(items)
        keys = set()
        for i, item in enumerate(items):
            if not isinstance(item, dict) or set(item) != set(slots):
                fail(f"item {i + 1} must give exactly the slots {sorted(slots)}", "items", i)
            key = tuple(str(item[s]) for s in sorted(slots))
            if key in keys:
                fail(f"item {i + 1} repeats an earlier item ({dict(zip(sorted(slots), key))})", "items", i)
            keys.add(key)
    if count * len(conditions) > limit:
        fail(
            f"{count:,} items × {len(conditions)} conditions = {count * len(conditions):,} sentences; at most "
            f"{limit:,} "
            "are generated at once: shorten the filler lists or list the items",
            "items" if items else "slots",
        )
    names = list(slots)
    values = items if items is not None else [dict(zip(names, combo)) for combo in itertools.product(*slots.values())]
    rows = []
    for n, item in enumerate(values, start=1):
        item_id = f"i{n}"
        for condition in conditions:
            rows.append(
                {
                    "example_id": f"{item_id}-{condition['name']}",
                    "item": item_id,
                    "variant": condition["name"],
                    "operator": condition["operator"],
                    "input": str(condition["premise"]).format_map(item),
                    "hypothesis": str(condition["hypothesis"]).format_map(item),
                    "gold_label": condition["gold"],
                    "fillers": ", ".join(f"{k}={item[k]}" for k in names),
                }
            )
    frame = pd.DataFrame(rows)
    return Expansion(
        str(spec["name"]), str(spec["trigger"]), conditions, frame, text, hashlib.sha256(text.encode()).hexdigest()
    )


def bundle(expansion: Expansion, source: str = "template.yaml") -> Bundle:
    """The expansion as a user dataset: examples, pairs (base condition vs each other, per item), a
    description with the projection spec, and the template as provenance."""

    frame = expansion.frame.assign(trigger_type=expansion.trigger, split="generated")
    options = user_datasets.DatasetOptions(
        name=expansion.name,
        task="nli",
        operator_column="operator",
        columns={
            "example_id": "example_id",
            "input": "input",
            "hypothesis": "hypothesis",
            "gold_label": "gold_label",
            "split": "split",
        },
        title=f"{expansion.name} (generated from {source})",
    )
    made, _ = user_datasets.check(read(frame, name=source), options)
    base = expansion.conditions[0]["name"]
    by_item = expansion.frame.set_index(["item", "variant"])["example_id"]
    made.pairs = [
        {
            "pair_id": f"{expansion.name}/{item}/{c['name']}",
            "kind": f"{base} → {c['name']}",
            "example_a": by_item[(item, base)],
            "example_b": by_item[(item, c["name"])],
            "role_a": base,
            "role_b": c["name"],
        }
        for item in expansion.frame["item"].unique()
        for c in expansion.conditions[1:]
    ]
    made.dataset.update({"sha256": expansion.sha256, "source": source})
    made.notes = [f"generated from the template {source} (SHA-256 {expansion.sha256[:12]}):\n{expansion.text}"]
    return made


EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "templates" / "stop-under-operators.yaml"


def example_text() -> str:
    """The worked example template shipped in data/templates (what the Studio page starts from)."""
    return EXAMPLE.read_text() if EXAMPLE.is_file() else ""


def pair_sets(expansion: Expansion) -> list[str]:
    """The Minimal pairs page's pair-set ids the stored expansion will have (one per non-base condition)."""
    base = expansion.conditions[0]["name"]
    return [f"{expansion.name}/{base} → {c['name']}/generated" for c in expansion.conditions[1:]]
