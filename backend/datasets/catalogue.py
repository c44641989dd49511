"""The loaded datasets and their descriptions: `describe(con, id)`, `described(con)`, `by_input(con)`.

Every module that used to keep a dict per dataset name (baselines, leaderboard, evaluate, runs,
training recipes, the Playground) asks `describe(con, id)`: the description stored with the dataset
(a user dataset's, or a built-in one written by ingest), else the built-in spec's.
"""

from __future__ import annotations

import duckdb

from backend.datasets import DATASETS
from backend.datasets.description import Description
from backend.store import queries


class UnknownDataset(LookupError):
    """The dataset is not in the store (the message lists what is)."""


def describe(con: duckdb.DuckDBPyConnection, dataset_id: str) -> Description:
    """The dataset's description from the store (a built-in one from its spec if the store predates them)."""
    stored = queries.dataset_description(con, dataset_id)
    if stored:
        return Description.from_json(stored)
    if dataset_id in DATASETS and DATASETS[dataset_id].description is not None:
        return DATASETS[dataset_id].description
    raise UnknownDataset(
        f"dataset {dataset_id!r} is not in the store or has no description; loaded: {queries.dataset_ids(con)}"
    )


def part(con: duckdb.DuckDBPyConnection, dataset_id: str, name: str) -> dict:
    """One spec of a dataset's description (`projection`, `gradient`; {} when it has none). A built-in dataset
    stored before that spec existed takes its loader's."""
    found = getattr(describe(con, dataset_id), name)
    if not found and dataset_id in DATASETS and DATASETS[dataset_id].description is not None:
        found = getattr(DATASETS[dataset_id].description, name)
    return found


def described(con: duckdb.DuckDBPyConnection) -> dict[str, Description]:
    """Every loaded dataset that has examples to predict on, with its description."""
    found = {}
    for dataset_id in queries.dataset_ids(con, with_examples=True):
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


def missing(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Built-in datasets that are not in the store, with how to add each."""
    loaded = set(queries.dataset_ids(con))
    return [
        {"dataset_id": s.name, "title": s.title, "how_to_add": s.how_to_add}
        for s in DATASETS.values()
        if s.name not in loaded
    ]
