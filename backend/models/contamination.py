"""Training-data contamination: was a run's model trained on the data the run is evaluated on?

Every run records `trained_on` in its config: dataset names, each optionally with `:split`
("imppres", "falseqa:train"). Batch and live runs take it from the model (`registry.trained_on`: the
registry entry, or the card of a model trained here, which lists its sources); imported runs from
`import-run --trained-on`; the NOPE paper's runs from their training-data name. A name matches a
store dataset by its id (the `nli_train/` sources are named as the datasets they hold: `imppres`).

A run is contaminated when its dataset is among those names: the whole dataset, or the split it
predicted, or any split of it when the run predicted every split. Pages flag such runs wherever they
show their numbers and leave them out of default comparisons; evaluate tables carry the reason.
"""

from __future__ import annotations

import json

import pandas as pd

from backend.models import registry
from backend.models.training_data import names, reason
from backend.store import queries, runs

FLAG = "⚠ contaminated"


def trained_on(con, dataset_id: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """run id → (the split it predicted or None, what its model was trained on) for the dataset's runs.
    A run stored before runs recorded `trained_on` takes its model's from the registry, when registered."""
    return _trained_on(queries.run_training(con, dataset_id))


def _trained_on(rows) -> dict[str, tuple[str, tuple[str, ...]]]:
    """`trained_on` from (run id, model id, split, trained_on JSON or None) rows."""
    models = registry.specs()
    return {
        run_id: (
            split,
            names(json.loads(trained))
            if trained is not None
            else registry.trained_on(models[model_id])
            if model_id in models
            else (),
        )
        for run_id, model_id, split, trained in rows
    }


def flags(con, dataset_id: str) -> dict[str, str]:
    """run id → why it is contaminated, for every flagged run of the dataset."""
    return _flags(dataset_id, trained_on(con, dataset_id))


def flags_of(dataset_id: str, listed: pd.DataFrame) -> dict[str, str]:
    """`flags` for the runs of a `store.runs.listing(..., with_training=True)` frame, without reading the store."""
    columns = listed[["run_id", "model_id", "predicted_split", "trained_on"]].astype(object)
    rows = columns.where(columns.notna(), None).itertuples(index=False, name=None)  # NULL as None, as fetchall gives
    return _flags(dataset_id, _trained_on(rows))


def _flags(dataset_id: str, trained: dict) -> dict[str, str]:
    found = {run_id: reason(dataset_id, split, listed) for run_id, (split, listed) in trained.items()}
    return {run_id: why for run_id, why in found.items() if why}


def runs_frame(con, dataset_id: str) -> pd.DataFrame:
    """The dataset's complete runs (`store.runs.listing`) with why each is contaminated ('' when it is not)."""
    frame = runs.listing(con, dataset_id)
    flagged = flags(con, dataset_id)
    return frame.assign(contaminated=[flagged.get(r, "") for r in frame["run_id"]])
