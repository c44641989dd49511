"""Classification metrics: accuracy, per-class precision/recall/F1, macro-F1, confusion, response bias.

Definitions follow scikit-learn (`sklearn.metrics.precision_recall_fscore_support`, zero_division=0),
which the tests use as the reference. Macro-F1 is the unweighted mean of the per-class F1 over the
given labels, computed the standard way: the official CREPE scorer's guard (which scores a perfect
classifier 0.5) is *not* copied.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from backend.metrics.bootstrap import RESAMPLES, SEED, Estimate, interval, mean, weights


def correct(gold, pred) -> np.ndarray:
    """1.0 where the prediction equals the gold label, else 0.0 (missing predictions are wrong)."""
    return (np.asarray(gold, dtype=object) == np.asarray(pred, dtype=object)).astype(np.float64)


def accuracy(gold, pred, ci: bool = True, seed: int = SEED) -> Estimate:
    """Share of items whose prediction equals the gold label.

    >>> accuracy(["E", "N", "C"], ["E", "N", "E"], ci=False).value
    0.6666666666666666
    """
    return mean(correct(gold, pred), ci=ci, seed=seed)


def _counts(gold: np.ndarray, pred: np.ndarray, labels: list[str], w: np.ndarray | None):
    """True positives, predicted and gold counts per label; per resample when weights are given."""
    per_label = []
    for label in labels:
        g, p = (gold == label).astype(np.float64), (pred == label).astype(np.float64)
        items = np.stack([g * p, p, g])  # 3 × n
        per_label.append(items.sum(axis=1) if w is None else items @ w.T)  # 3 or 3 × R
    return np.stack(per_label)  # labels × 3 [× R]


def _prf(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision, recall and F1 from per-label counts (0 where undefined, as sklearn's zero_division=0)."""
    tp, predicted, actual = counts[:, 0], counts[:, 1], counts[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(predicted > 0, tp / predicted, 0.0)
        recall = np.where(actual > 0, tp / actual, 0.0)
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    return precision, recall, f1


def per_class(gold, pred, labels: list[str]) -> pd.DataFrame:
    """Precision, recall, F1 and support per label (sklearn definitions, zero_division=0).

    >>> per_class(["FP", "N", "N"], ["FP", "FP", "N"], ["FP", "N"])["f1"].round(3).tolist()
    [0.667, 0.667]
    """
    counts = _counts(np.asarray(gold, dtype=object), np.asarray(pred, dtype=object), labels, None)
    precision, recall, f1 = _prf(counts)
    return pd.DataFrame({"label": labels, "precision": precision, "recall": recall, "f1": f1,
                         "support": counts[:, 2].astype(int)})


def macro_f1(gold, pred, labels: list[str], ci: bool = True, resamples: int = RESAMPLES, seed: int = SEED) -> Estimate:
    """Unweighted mean F1 over `labels` (a perfect classifier scores 1.0).

    >>> macro_f1(["FP", "N"], ["FP", "N"], ["FP", "N"], ci=False).value
    1.0
    """
    gold, pred = np.asarray(gold, dtype=object), np.asarray(pred, dtype=object)
    n = gold.size
    value = float(_prf(_counts(gold, pred, labels, None))[2].mean()) if n else float("nan")
    if not ci or n == 0:
        return Estimate(value, float("nan"), float("nan"), n)
    samples = _prf(_counts(gold, pred, labels, weights(n, resamples, seed)))[2].mean(axis=0)
    return Estimate(value, *interval(samples), n)


def confusion(gold, pred, labels: list[str]) -> pd.DataFrame:
    """Counts with gold labels as rows and predicted labels as columns (unlisted predictions → 'other')."""
    pred = [p if p in labels else "other" for p in pred]
    columns = labels + (["other"] if "other" in pred else [])
    table = pd.crosstab(pd.Categorical(gold, categories=labels), pd.Categorical(pred, categories=columns), dropna=False)
    # plain string labels: categorical axes become Arrow dictionaries that charts and exports mangle
    table.index = pd.Index(table.index.astype(str), name="gold")
    table.columns = pd.Index(table.columns.astype(str), name="predicted")
    return table


def response_bias(gold, pred, labels: list[str]) -> pd.DataFrame:
    """Share of each label among predictions next to its share among gold labels.

    The Syn-(QA)² finding ("always yes / always no") is a predicted share far from the gold share.

    >>> response_bias(["FP", "N"], ["FP", "FP"], ["FP", "N"])["predicted_share"].tolist()
    [1.0, 0.0]
    """
    gold, pred = pd.Series(list(gold), dtype=object), pd.Series(list(pred), dtype=object)
    n = max(len(gold), 1)
    return pd.DataFrame({
        "label": labels,
        "gold_share": [float((gold == label).sum()) / n for label in labels],
        "predicted_share": [float((pred == label).sum()) / n for label in labels],
    })


BIAS_AT_LEAST, BIAS_OVER_GOLD = 0.9, 0.1  # what `dominant_label` flags by default


def dominant_label(bias: pd.DataFrame, at_least: float = BIAS_AT_LEAST, over_gold: float = BIAS_OVER_GOLD) -> dict | None:
    """The label a run gives to at least `at_least` of the items, `over_gold` more often than it is gold
    (a response bias worth flagging), as a row of `response_bias`; None when there is none.

    >>> dominant_label(response_bias(["E", "E", "N", "C"] * 5, ["E"] * 20, ["E", "N", "C"]))
    {'label': 'E', 'gold_share': 0.5, 'predicted_share': 1.0}
    >>> dominant_label(response_bias(["E", "N"], ["E", "N"], ["E", "N"])) is None
    True
    """
    skewed = bias[(bias["predicted_share"] >= at_least) & (bias["predicted_share"] - bias["gold_share"] >= over_gold)]
    return skewed.iloc[0].to_dict() if len(skewed) else None
