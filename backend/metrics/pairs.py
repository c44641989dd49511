"""Minimal pairs: 2×2 outcome table, pair accuracy, flip and consistency rates, McNemar's test.

For pairs (a, b) with gold and predicted labels: *pair accuracy* = both members right; *flip rate*
= share of pairs whose prediction differs between the members (compare with the gold flip rate);
McNemar's exact test (McNemar 1947; exact binomial form, Edwards 1948) asks whether the model is
right on member a and wrong on b as often as the reverse.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from backend.metrics.bootstrap import Estimate, mean

OUTCOMES = ("both right", "a right only", "b right only", "both wrong")


@dataclass(frozen=True)
class PairSummary:
    pair_accuracy: Estimate
    flip_rate: Estimate
    gold_flip_rate: float
    mcnemar_p: float
    table: pd.DataFrame  # rows: a right/wrong, columns: b right/wrong


def outcome(a_right: np.ndarray, b_right: np.ndarray) -> np.ndarray:
    """Per pair, the name of its cell in the 2×2 table.

    >>> outcome(np.array([1, 1, 0, 0]), np.array([1, 0, 1, 0])).tolist()
    ['both right', 'a right only', 'b right only', 'both wrong']
    """
    index = 2 * (1 - np.asarray(a_right, dtype=int)) + (1 - np.asarray(b_right, dtype=int))
    return np.array(OUTCOMES, dtype=object)[index]


def mcnemar(a_right: np.ndarray, b_right: np.ndarray) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs (1.0 when there are none).

    >>> round(mcnemar(np.array([1] * 10 + [0] * 2), np.array([0] * 10 + [1] * 2)), 4)
    0.0386
    """
    a, b = np.asarray(a_right, dtype=bool), np.asarray(b_right, dtype=bool)
    only_a, only_b = int(np.sum(a & ~b)), int(np.sum(~a & b))
    if only_a + only_b == 0:
        return 1.0
    return float(binomtest(only_a, only_a + only_b, 0.5).pvalue)


def summarise(gold_a, pred_a, gold_b, pred_b, ci: bool = True) -> PairSummary:
    """Everything the pair views show for one run over one set of pairs."""
    gold_a, pred_a, gold_b, pred_b = (np.asarray(x, dtype=object) for x in (gold_a, pred_a, gold_b, pred_b))
    a_right, b_right = gold_a == pred_a, gold_b == pred_b
    table = pd.crosstab(
        pd.Categorical(np.where(a_right, "a right", "a wrong"), ["a right", "a wrong"]),
        pd.Categorical(np.where(b_right, "b right", "b wrong"), ["b right", "b wrong"]),
        dropna=False,
    )
    table.index, table.columns = table.index.astype(str), table.columns.astype(str)
    return PairSummary(
        pair_accuracy=mean((a_right & b_right).astype(float), ci=ci),
        flip_rate=mean((pred_a != pred_b).astype(float), ci=ci),
        gold_flip_rate=float(np.mean(gold_a != gold_b)) if gold_a.size else float("nan"),
        mcnemar_p=mcnemar(a_right, b_right),
        table=table,
    )
