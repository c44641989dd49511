"""Classification metrics: accuracy, per-class precision/recall/F1, macro-F1, confusion, response bias.

Definitions follow scikit-learn (`sklearn.metrics.precision_recall_fscore_support`, zero_division=0),
which the tests use as the reference. Macro-F1 is the unweighted mean of the per-class F1 over the
given labels, computed the standard way: the official CREPE scorer's guard (which scores a perfect
classifier 0.5) is *not* copied.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from backend.metrics.bootstrap import MIN_N, RESAMPLES, SEED, Estimate, interval, mean, resampled_sums


def correct(gold, pred) -> np.ndarray:
    """1.0 where the prediction equals the gold label, else 0.0 (missing predictions are wrong)."""
    return (np.asarray(gold, dtype=object) == np.asarray(pred, dtype=object)).astype(np.float64)


def accuracy(gold, pred, ci: bool = True, seed: int = SEED, counts=None) -> Estimate:
    """Share of items whose prediction equals the gold label.

    >>> accuracy(["E", "N", "C"], ["E", "N", "E"], ci=False).value
    0.6666666666666666
    """
    return mean(correct(gold, pred), ci=ci, seed=seed, counts=counts)


def _counts(gold: np.ndarray, pred: np.ndarray, labels: list[str], resample: dict | None, counts=None):
    """True positives, predicted and gold counts per label (labels × 3); per bootstrap resample
    (labels × 3 × R) when `resample` gives its resamples and seed. `counts`: items per (gold, pred) row."""
    items = np.concatenate(
        [np.stack([(gold == label) & (pred == label), pred == label, gold == label], axis=1) for label in labels],
        axis=1,
    ).astype(np.float64)  # n × (labels · 3)
    if resample is None:
        total = items.sum(axis=0) if counts is None else np.asarray(counts, dtype=np.float64) @ items
        return total.reshape(len(labels), 3)
    sums = resampled_sums(items, **resample, counts=counts)  # R × (labels · 3)
    return sums.reshape(-1, len(labels), 3).transpose(1, 2, 0)


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
    return pd.DataFrame(
        {"label": labels, "precision": precision, "recall": recall, "f1": f1, "support": counts[:, 2].astype(int)}
    )


def macro_f1(
    gold, pred, labels: list[str], ci: bool = True, resamples: int = RESAMPLES, seed: int = SEED, counts=None
) -> Estimate:
    """Unweighted mean F1 over those of `labels` that occur among the gold labels or the predictions (a perfect
    classifier scores 1.0). A label that is neither gold nor predicted anywhere in the items has no F1 and is not
    averaged in as 0 (as scikit-learn does when not given the labels): a slice whose gold labels are all C is
    scored over C and whatever else was predicted.

    >>> macro_f1(["FP", "N"], ["FP", "N"], ["FP", "N"], ci=False).value
    1.0
    >>> macro_f1(["C", "C"], ["C", "N"], ["E", "N", "C"], ci=False).value  # over C (F1 2/3) and N (0), not E
    0.3333333333333333
    """
    gold, pred = np.asarray(gold, dtype=object), np.asarray(pred, dtype=object)
    n = gold.size if counts is None else int(np.sum(counts))
    value = _present_mean(_counts(gold, pred, labels, None, counts)) if n else float("nan")
    if not ci or n < MIN_N:  # no bootstrap interval from so few items (too few to estimate one)
        return Estimate(value, float("nan"), float("nan"), n)
    samples = _present_mean(_counts(gold, pred, labels, {"resamples": resamples, "seed": seed}, counts))
    return Estimate(value, *interval(samples), n)


def _present_mean(counts: np.ndarray):
    """Mean F1 over the labels predicted or gold at least once (per resample, for labels × 3 × R counts)."""
    present = (counts[:, 1] + counts[:, 2]) > 0
    f1 = np.where(present, _prf(counts)[2], np.nan)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a resample with no label present: NaN, as n = 0
        found = np.nanmean(f1, axis=0)
    return float(found) if np.ndim(found) == 0 else found


def macro_f1_difference(
    gold, pred, baseline, labels: list[str], resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, np.ndarray, int]:
    """Macro-F1 of `pred` minus that of `baseline` on the same items: the observed difference, the difference on
    each bootstrap resample (both scored on the same resampled items: a paired bootstrap) and n.

    >>> observed, samples, n = macro_f1_difference(["E", "N"] * 20, ["E", "N"] * 20, ["E"] * 40, ["E", "N"])
    >>> round(observed, 3), samples.shape, n
    (0.667, (1000,), 40)
    """
    gold, pred, baseline = (np.asarray(x, dtype=object) for x in (gold, pred, baseline))
    observed = _present_mean(_counts(gold, pred, labels, None)) - _present_mean(_counts(gold, baseline, labels, None))
    per_item = np.concatenate(
        [
            np.stack([(gold == label) & (answers == label), answers == label, gold == label], axis=1)
            for answers in (pred, baseline)
            for label in labels
        ],
        axis=1,
    ).astype(np.float64)  # n × (2 · labels · 3): the run's counts, then the baseline's
    sums = resampled_sums(per_item, resamples, seed).reshape(-1, 2, len(labels), 3)  # R × 2 × labels × 3
    run, base = (sums[:, i].transpose(1, 2, 0) for i in (0, 1))  # labels × 3 × R each
    return float(observed), _present_mean(run) - _present_mean(base), int(gold.size)


def guessing_scores(gold, labels: list[str], metric: str, draws: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """The score (`metric`: "accuracy" or "macro-F1") of each of `draws` independent uniform guesses of every item."""
    index = {label: i for i, label in enumerate(labels)}
    gold = np.array([index.get(g, -1) for g in gold], dtype=np.int64)  # a gold label not among `labels`: never hit
    guesses = np.random.default_rng(seed).integers(len(labels), size=(draws, gold.size))
    if metric == "accuracy":
        return (guesses == gold).mean(axis=1)
    counts = np.stack(
        [
            np.stack([((guesses == i) & (gold == i)).sum(1), (guesses == i).sum(1), np.full(draws, (gold == i).sum())])
            for i in range(len(labels))
        ]
    )  # labels × 3 × draws, as _counts gives per resample
    return _present_mean(counts.astype(np.float64))


def guessing_accuracy(gold, labels: list[str]) -> float:
    """The accuracy uniform guessing over `labels` is expected to have on these gold labels, exactly.

    >>> guessing_accuracy(["E", "N", "C", "other"], ["E", "N", "C"])
    0.25
    """
    gold = list(gold)
    return sum(g in labels for g in gold) / len(labels) / len(gold) if gold else float("nan")


def random_guessing(gold, labels: list[str], metric: str, draws: int = RESAMPLES, seed: int = SEED) -> Estimate:
    """What guessing uniformly over `labels` scores on these gold labels (`metric`: "accuracy" or "macro-F1"): the
    mean score over `draws` independent guesses of every item (its expectation, not one seeded draw's luck; for
    accuracy the exact expectation, `guessing_accuracy`), with the 2.5th–97.5th percentiles of those scores as the
    interval.

    >>> est = random_guessing(["E"] * 300 + ["N"] * 300 + ["C"] * 300, ["E", "N", "C"], "accuracy")
    >>> round(est.value, 2), est.low < 0.34 < est.high, est.n
    (0.33, True, 900)
    """
    gold = list(gold)
    scores = guessing_scores(gold, labels, metric, draws, seed)
    value = guessing_accuracy(gold, labels) if metric == "accuracy" else float(np.mean(scores))
    return Estimate(value, *interval(scores), len(gold))


def confusion(gold, pred, labels: list[str], counts=None) -> pd.DataFrame:
    """Counts with gold labels as rows and predicted labels as columns (unlisted predictions → 'other');
    `counts`: items per (gold, pred) row when the rows are kinds."""
    pred = [p if p in labels else "other" for p in pred]
    columns = labels + (["other"] if "other" in pred else [])
    weight = {} if counts is None else {"values": np.asarray(counts), "aggfunc": "sum"}
    table = (
        pd.crosstab(
            pd.Categorical(gold, categories=labels), pd.Categorical(pred, categories=columns), dropna=False, **weight
        )
        .fillna(0)
        .astype(int)
    )
    # plain string labels: categorical axes become Arrow dictionaries that charts and exports mangle
    table.index = pd.Index(table.index.astype(str), name="gold")
    table.columns = pd.Index(table.columns.astype(str), name="predicted")
    return table


def response_bias(gold, pred, labels: list[str], counts=None) -> pd.DataFrame:
    """Share of each label among predictions next to its share among gold labels.

    The Syn-(QA)² finding ("always yes / always no") is a predicted share far from the gold share.

    >>> response_bias(["FP", "N"], ["FP", "FP"], ["FP", "N"])["predicted_share"].tolist()
    [1.0, 0.0]
    """
    gold, pred = pd.Series(list(gold), dtype=object), pd.Series(list(pred), dtype=object)
    weight = pd.Series(np.ones(len(gold)) if counts is None else np.asarray(counts, dtype=float))
    n = max(float(weight.sum()), 1)
    return pd.DataFrame(
        {
            "label": labels,
            "gold_share": [float(weight[gold == label].sum()) / n for label in labels],
            "predicted_share": [float(weight[pred == label].sum()) / n for label in labels],
        }
    )


BIAS_AT_LEAST, BIAS_OVER_GOLD = 0.9, 0.1  # what `dominant_label` flags by default


def dominant_label(
    bias: pd.DataFrame, at_least: float = BIAS_AT_LEAST, over_gold: float = BIAS_OVER_GOLD
) -> dict | None:
    """The label a run gives to at least `at_least` of the items, `over_gold` more often than it is gold
    (a response bias worth flagging), as a row of `response_bias`; None when there is none.

    >>> dominant_label(response_bias(["E", "E", "N", "C"] * 5, ["E"] * 20, ["E", "N", "C"]))
    {'label': 'E', 'gold_share': 0.5, 'predicted_share': 1.0}
    >>> dominant_label(response_bias(["E", "N"], ["E", "N"], ["E", "N"])) is None
    True
    """
    skewed = bias[(bias["predicted_share"] >= at_least) & (bias["predicted_share"] - bias["gold_share"] >= over_gold)]
    return skewed.iloc[0].to_dict() if len(skewed) else None
