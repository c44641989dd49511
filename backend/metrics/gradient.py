"""Gradient projection: people's mean certainty per predicate with a 95% CI from a bootstrap over participants
and items together (the crossed design of Degen & Tonhauser's experiments: each participant rates many items,
each item is rated by many participants), the prior effect (mean with a high-prior fact minus with a low one),
and Spearman's ρ between a model's and people's per-predicate means with a bootstrap CI over predicates.

The crossed bootstrap draws participants and items with replacement, independently, and keeps every rating whose
participant and item were both drawn, as many times as the two were drawn together (Field & Welsh 2007's
"two-way" resampling); a draw that keeps no rating is drawn again.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from backend.metrics.bootstrap import Estimate

DRAWS, SEED = 1000, 0
PRIOR_COLUMNS = [
    "n_high_prior",
    "mean_high_prior",
    "n_low_prior",
    "mean_low_prior",
    "effect",
    "effect_low",
    "effect_high",
]
MIN_EACH = 3  # participants and items a crossed bootstrap needs at least: fewer, no interval


def crossed_mean(ratings: pd.DataFrame, draws: int = DRAWS, seed: int = SEED) -> Estimate:
    """Mean of `value` with a 95% CI over participants (`rater`) and items (`item`) resampled together; no interval
    (NaN: too few to estimate one) with fewer than MIN_EACH participants or items (one participant's answers
    resampled over items give an interval of that person, not of people).

    >>> frame = pd.DataFrame({"rater": ["a", "a", "b", "b"], "item": [1, 2, 1, 2], "value": [0.2, 0.4, 0.6, 0.8]})
    >>> round(crossed_mean(frame).value, 3), crossed_mean(frame).n, bool(np.isnan(crossed_mean(frame).low))
    (0.5, 4, True)
    """
    values = ratings["value"].to_numpy(dtype=float)
    if not len(values):
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    if min(ratings["rater"].nunique(), ratings["item"].nunique()) < MIN_EACH:  # too few to estimate an interval
        return Estimate(float(values.mean()), float("nan"), float("nan"), len(values))
    low, high = np.percentile(_resampled_means(ratings, draws, seed), [2.5, 97.5])
    return Estimate(float(values.mean()), float(low), float(high), len(values))


def _resampled_means(ratings: pd.DataFrame, draws: int, seed: int) -> np.ndarray:
    """`draws` means of crossed resamples: participants and items drawn with replacement, each rating weighted by
    how often its participant times how often its item was drawn (a draw that keeps no rating is drawn again).
    All draws at once: a draws × ratings weight matrix (1,000 × 6,023 for CommitmentBank's negated items)."""
    values = ratings["value"].to_numpy(dtype=float)
    raters, rater_of = np.unique(ratings["rater"].to_numpy(), return_inverse=True)
    items, item_of = np.unique(ratings["item"].to_numpy(), return_inverse=True)
    rng, means = np.random.default_rng(seed), np.empty(0)
    while len(means) < draws:
        weight = _times_drawn(rng, len(raters), draws)[:, rater_of] * _times_drawn(rng, len(items), draws)[:, item_of]
        kept = weight.sum(axis=1)
        means = np.concatenate([means, (weight @ values)[kept > 0] / kept[kept > 0]])
    return means[:draws]


def _times_drawn(rng: np.random.Generator, n: int, draws: int) -> np.ndarray:
    """draws × n: how often each of n units is drawn in each of `draws` resamples of n with replacement (a
    uniform multinomial, counted from integer draws: several times faster than `Generator.multinomial`)."""
    picked = rng.integers(0, n, size=(draws, n)) + n * np.arange(draws)[:, None]
    return np.bincount(picked.ravel(), minlength=draws * n).reshape(draws, n)


def _clean(value: float) -> float:
    """A mean without the float summation's last-digit noise (a run at 0 everywhere is 0.0, not 5.55e-17).

    >>> _clean(5.551115123125783e-17), _clean(-1e-18), _clean(0.123456789)
    (0.0, 0.0, 0.123456789)
    """
    return float(round(value, 12)) + 0.0  # + 0.0 turns -0.0 into 0.0


def per_predicate(ratings: pd.DataFrame, draws: int = DRAWS) -> pd.DataFrame:
    """predicate, n (ratings), participants, items, mean, low, high — highest mean first."""
    rows = []
    for predicate, group in ratings.groupby("predicate", sort=False):
        estimate = crossed_mean(group, draws)
        rows.append(
            {
                "predicate": predicate,
                "n": estimate.n,
                "participants": group["rater"].nunique(),
                "items": group["item"].nunique(),
                "mean": _clean(estimate.value),
                "low": _clean(estimate.low),
                "high": _clean(estimate.high),
            }
        )
    columns = ["predicate", "n", "participants", "items", "mean", "low", "high"]
    return pd.DataFrame(rows, columns=columns).sort_values("mean", ascending=False, ignore_index=True)


def prior_effect(ratings: pd.DataFrame, draws: int = DRAWS, seed: int = SEED) -> pd.DataFrame:
    """Per predicate: the ratings after a high-prior fact (`n_high_prior`) and their mean certainty
    (`mean_high_prior`), the same after a low-prior one (`n_low_prior`, `mean_low_prior`), and their difference
    (`effect`) with its 95% CI (`effect_low`, `effect_high`: as everywhere in the lab, `low` and `high` name interval
    bounds, never a condition), participants and items resampled within each prior.

    >>> frame = pd.DataFrame({"predicate": ["know"] * 4, "prior": ["high", "high", "low", "low"],
    ...                       "rater": ["a", "b", "c", "d"], "item": [1, 2, 3, 4], "value": [0.9, 0.7, 0.3, 0.5]})
    >>> prior_effect(frame, draws=200).loc[0, ["mean_high_prior", "mean_low_prior", "effect"]].round(3).tolist()
    [0.8, 0.4, 0.4]
    """
    rows = []
    for predicate, group in ratings.groupby("predicate", sort=False):
        high, low = group[group["prior"] == "high"], group[group["prior"] == "low"]
        if high.empty or low.empty:
            continue
        differences = _resampled_means(high, draws, seed) - _resampled_means(low, draws, seed + 1)
        lo, hi = np.percentile(differences, [2.5, 97.5])
        mean_high, mean_low = float(high["value"].mean()), float(low["value"].mean())
        rows.append(
            {
                "predicate": predicate,
                "n_high_prior": len(high),
                "mean_high_prior": mean_high,
                "n_low_prior": len(low),
                "mean_low_prior": mean_low,
                "effect": mean_high - mean_low,
                "effect_low": float(lo),
                "effect_high": float(hi),
            }
        )
    columns = ["predicate", *PRIOR_COLUMNS]
    return pd.DataFrame(rows, columns=columns).sort_values("effect", ascending=False, ignore_index=True)


def spearman(model: pd.Series, people: pd.Series, draws: int = DRAWS, seed: int = SEED) -> Estimate:
    """Spearman's ρ between two per-predicate series (aligned on their index), 95% CI over predicates.

    >>> people = pd.Series([0.9, 0.8, 0.5, 0.2], index=list("abcd"))
    >>> [round(spearman(model, people).value, 3) for model in (people * 0.5, -people, people[::-1])]
    [1.0, -1.0, 1.0]
    """
    both = pd.concat([model.rename("model"), people.rename("people")], axis=1, join="inner").dropna()
    n = len(both)
    if n < 3 or both["model"].nunique() < 2:  # too few groups, or a model with one value everywhere: undefined
        return Estimate(float("nan"), float("nan"), float("nan"), n)
    rho = float(stats.spearmanr(both["model"], both["people"]).statistic)
    rng, found = np.random.default_rng(seed), []
    for _ in range(draws):
        sample = both.iloc[rng.integers(0, n, n)]
        if sample["model"].nunique() > 1 and sample["people"].nunique() > 1:
            found.append(stats.spearmanr(sample["model"], sample["people"]).statistic)
    low, high = np.percentile(found, [2.5, 97.5]) if found else (float("nan"), float("nan"))
    return Estimate(rho, float(low), float(high), n)
