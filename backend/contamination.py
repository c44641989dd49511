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
import re
from typing import Iterable

FLAG = "⚠ contaminated"


def names(value: object) -> tuple[str, ...]:
    """`trained_on` as lower-case names from a list or a comma/space-separated string ('falseqa train' is
    the older card form of 'falseqa:train').

    >>> names("MNLI, snli")
    ('mnli', 'snli')
    >>> names(["falseqa train"])
    ('falseqa:train',)
    """
    if value is None:
        return ()
    items = re.split(r"[,;]", value) if isinstance(value, str) else list(value)
    out = []
    for item in items:
        item = str(item).strip().lower()
        if item:
            out.append(":".join(item.split(None, 1)) if ":" not in item else item)
    return tuple(dict.fromkeys(out))


def reason(dataset_id: str, split: str | None, trained_on: Iterable[str]) -> str:
    """Why a run on `dataset_id` (`split`: the split it predicted, None for all) is contaminated; '' if not.

    >>> reason("imppres", None, ["sick", "imppres"])
    'its model was trained on imppres'
    >>> reason("falseqa", "test", ["falseqa:train"])
    ''
    >>> reason("falseqa", None, ["falseqa:train"])
    'its model was trained on falseqa:train'
    """
    for name in names(list(trained_on)):
        dataset, _, trained_split = name.partition(":")
        if dataset == dataset_id.lower() and (not trained_split or split is None or split.lower() == trained_split):
            return f"its model was trained on {name}"
    return ""


def trained_on(con, dataset_id: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """run id → (the split it predicted or None, what its model was trained on) for the dataset's runs.
    A run stored before runs recorded `trained_on` takes its model's from the registry, when registered."""
    from backend import registry

    rows = con.execute("""
        SELECT run_id, model_id, config->>'$.split' AS split, config->'$.trained_on' AS trained_on
        FROM runs WHERE dataset_id = $d
    """, {"d": dataset_id}).fetchall()
    models = registry.specs()
    return {run_id: (split, names(json.loads(trained)) if trained is not None
                     else registry.trained_on(models[model_id]) if model_id in models else ())
            for run_id, model_id, split, trained in rows}


def flags(con, dataset_id: str) -> dict[str, str]:
    """run id → why it is contaminated, for every flagged run of the dataset."""
    found = {run_id: reason(dataset_id, split, listed) for run_id, (split, listed) in trained_on(con, dataset_id).items()}
    return {run_id: why for run_id, why in found.items() if why}
