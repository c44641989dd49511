"""What a model was trained on, as names: `names()` reads a run's or a card's `trained_on`, `reason()`
says whether those names cover a dataset (and split) a run is evaluated on (`backend.models.contamination`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable


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
