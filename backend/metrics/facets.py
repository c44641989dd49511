"""Break any metric down by any facet of the store in one call.

A metric here is a function from a frame of evaluated items (columns `gold_label`, `label`, and
any facet: split, trigger_type, polarity, adversarial, answer_type, question_type, hop, ambiguous)
to an `Estimate`.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from backend.metrics.bootstrap import Estimate
from backend.metrics.classification import accuracy, macro_f1

Metric = Callable[[pd.DataFrame], Estimate]


def accuracy_of(frame: pd.DataFrame) -> Estimate:
    return accuracy(frame["gold_label"], frame["label"])


def macro_f1_of(labels: list[str]) -> Metric:
    return lambda frame: macro_f1(frame["gold_label"], frame["label"], labels)


def by_facet(frame: pd.DataFrame, facets: list[str], metric: Metric = accuracy_of) -> pd.DataFrame:
    """One row per combination of facet values (NULL kept as its own group) with value, CI and n.

    >>> f = pd.DataFrame({"hop": ["single", "single", "multi"], "gold_label": ["FP", "N", "FP"],
    ...                   "label": ["FP", "FP", "FP"]})
    >>> by_facet(f, ["hop"])[["hop", "value", "n"]].values.tolist()
    [['multi', 1.0, 1], ['single', 0.5, 2]]
    """
    rows = []
    for key, group in frame.groupby(facets, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(facets, key)), **metric(group).as_dict()})
    return pd.DataFrame(rows, columns=[*facets, "value", "low", "high", "n"])
