"""What the lab needs to know about a dataset, said once, for built-in and user datasets alike.

A `Description` (task, label set, positive label, headline splits and metric, baselines, facets) is
stored as JSON in `datasets.description`: ingest writes the built-in ones (from `DatasetSpec`),
`import-dataset` writes a user dataset's. Every module that used to keep a dict per dataset name
(baselines, leaderboard, evaluate, runs, training recipes, the Playground) asks `describe(con, id)`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

TASKS = ("nli", "detect", "qa")
METRICS = {"nli": "accuracy", "detect": "macro-F1", "qa": "exact match"}
OPERATORS = ["unembedded", "negation", "question", "modal", "conditional"]  # of a projection spec
OPERATOR_WORDS = {  # a user dataset's operator values (lower case) → OPERATORS
    **{o: o for o in OPERATORS},
    "none": "unembedded",
    "plain": "unembedded",
    "affirmative": "unembedded",
    "non-negated": "unembedded",
    "negated": "negation",
    "neg": "negation",
    "interrogative": "question",
    "antecedent": "conditional",
    "if": "conditional",
}


@dataclass(frozen=True)
class Description:
    task: str  # nli | detect | qa: the default task of a run on it
    labels: tuple[str, ...] = ()  # gold labels, in the order of predicted probabilities
    positive: str | None = None  # the label "positive" means (F1 per class, always-positive)
    headline_splits: tuple[str, ...] = ()  # the splits the Overview scores runs on
    metric: str = ""  # the Overview's headline metric (default by task)
    train_split: str | None = None  # what majority / nearest-neighbour baselines and training learn from
    dev_split: str | None = None  # where training picks its checkpoint
    constants: tuple[str, ...] = ()  # constant-label baselines (always-X)
    facets: tuple[str, ...] = ()  # keys of examples.extra that Explore filters on (user datasets)
    user: bool = False  # imported by a user (never removed by an ingest)
    columns: dict = field(default_factory=dict)  # for user datasets: store column ← file column
    projection: dict = field(default_factory=dict)  # trigger × operator survival (analysis.projection); {}: none
    gradient: dict = field(default_factory=dict)  # graded certainty per predicate (analysis.gradient); {}: none
    normalised: str = ""  # what the loader changed in the published text (a built-in's; issue 64, item 3)

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task: expected one of {list(TASKS)}, got {self.task!r}")
        if self.task != "qa" and not self.labels:
            raise ValueError(f"labels: a {self.task} dataset needs its label set")
        if self.positive is not None and self.positive not in self.labels:
            raise ValueError(f"positive: {self.positive!r} is not one of the labels {list(self.labels)}")

    @property
    def headline_metric(self) -> str:
        return self.metric or METRICS[self.task]

    @property
    def classifies(self) -> bool:
        return bool(self.labels)

    def as_dict(self) -> dict:
        """For the store's JSON column (the writer serialises it)."""
        return asdict(self)

    @classmethod
    def from_json(cls, text: str) -> Description:
        raw = json.loads(text) if isinstance(text, str) else text
        tuples = {k: tuple(v) for k, v in raw.items() if isinstance(v, list)}
        return cls(**{**raw, **tuples})
