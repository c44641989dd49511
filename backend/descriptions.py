"""What the lab needs to know about a dataset, said once, for built-in and user datasets alike.

A `Description` (task, label set, positive label, headline splits and metric, baselines, facets) is
stored as JSON in `datasets.description`: ingest writes the built-in ones (from `DatasetSpec`),
`import-dataset` writes a user dataset's. Every module that used to keep a dict per dataset name
(baselines, leaderboard, evaluate, runs, training recipes, the Playground) asks `describe(con, id)`.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import duckdb

TASKS = ("nli", "detect", "qa")
METRICS = {"nli": "accuracy", "detect": "macro-F1", "qa": "exact match"}


class UnknownDataset(LookupError):
    """The dataset is not in the store (the message lists what is)."""


@dataclass(frozen=True)
class Description:
    task: str                                  # nli | detect | qa: the default task of a run on it
    labels: tuple[str, ...] = ()               # gold labels, in the order of predicted probabilities
    positive: str | None = None                # the label "positive" means (F1 per class, always-positive)
    headline_splits: tuple[str, ...] = ()      # the splits the Overview scores runs on
    metric: str = ""                           # the Overview's headline metric (default by task)
    train_split: str | None = None             # what majority / nearest-neighbour baselines and training learn from
    dev_split: str | None = None               # where training picks its checkpoint
    constants: tuple[str, ...] = ()            # constant-label baselines (always-X)
    facets: tuple[str, ...] = ()               # keys of examples.extra that Explore filters on (user datasets)
    user: bool = False                         # imported by a user (never removed by an ingest)
    columns: dict = field(default_factory=dict)  # for user datasets: store column ← file column
    projection: dict = field(default_factory=dict)  # trigger × operator survival (backend.projection); {}: none

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
    def from_json(cls, text: str) -> "Description":
        raw = json.loads(text) if isinstance(text, str) else text
        tuples = {k: tuple(v) for k, v in raw.items() if isinstance(v, list)}
        return cls(**{**raw, **tuples})


def describe(con: duckdb.DuckDBPyConnection, dataset_id: str) -> Description:
    """The dataset's description from the store (a built-in one from its spec if the store predates them)."""
    row = con.execute("SELECT description FROM datasets WHERE dataset_id = $d", {"d": dataset_id}).fetchone()
    if row and row[0]:
        return Description.from_json(row[0])
    from backend.datasets import DATASETS
    if dataset_id in DATASETS and DATASETS[dataset_id].description is not None:
        return DATASETS[dataset_id].description
    known = [r[0] for r in con.execute("SELECT dataset_id FROM datasets ORDER BY 1").fetchall()]
    raise UnknownDataset(f"dataset {dataset_id!r} is not in the store or has no description; loaded: {known}")


def described(con: duckdb.DuckDBPyConnection) -> dict[str, Description]:
    """Every loaded dataset that has examples to predict on, with its description."""
    ids = [r[0] for r in con.execute("SELECT DISTINCT dataset_id FROM examples ORDER BY 1").fetchall()]
    found = {}
    for dataset_id in ids:
        try:
            found[dataset_id] = describe(con, dataset_id)
        except UnknownDataset:
            continue
    return found


def by_input(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """Loaded datasets by what their examples are: 'nli' (premise + hypothesis) or 'question' (the rest)."""
    found = {"question": [], "nli": []}
    for dataset_id, description in described(con).items():
        found["nli" if description.task == "nli" else "question"].append(dataset_id)
    return found
