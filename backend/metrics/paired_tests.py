"""Two-sided tests of a run against a baseline on the same items, each with the interval that is its own: the
verdict is whether the interval of the difference (run − baseline) excludes 0. For the two exact tests that is
exactly when the p-value is under 5%; for the two resampling tests the p-value is the interval's percentile
counterpart (twice the smaller share of resamples or draws on the other side of 0), so it agrees with the interval
up to the percentile's interpolation.

- `mcnemar`: accuracy against another run's predictions (McNemar 1947, exact binomial form). Of the d items
  where exactly one of the two is right, the run is right on b; b ~ Binomial(d, ½) under no difference. The p-value
  is the central one (twice the smaller tail) and the interval is Clopper–Pearson's for the share b/d, mapped to
  the accuracy difference (2·share − 1)·d/n: conditional on d, and dual to the test.
- `binomial`: accuracy against an expectation (random guessing): the run's correct count against Binomial(n, p0),
  exact, central p-value, the Clopper–Pearson interval of the accuracy minus p0.
- `bootstrap_difference`: any other metric against another run's predictions: a paired bootstrap over items
  (both runs scored on the same resample), percentile interval of the difference; p as `bootstrap.paired_difference`.
- `against_draws`: any metric against the scores of random draws (random guessing's macro-F1): a Monte Carlo test
  of "the run guesses at random", the interval the run's score minus the draws' middle 95%.

scipy's `binomtest` gives the exact p-value by summing the outcomes no likelier than the observed one; that
p-value is not dual to Clopper–Pearson's interval, so the central p-value is computed here from `scipy.stats.binom`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from backend.metrics.bootstrap import SEED, interval

LEVEL = 0.95  # every verdict's level: two-sided, 5%


@dataclass(frozen=True)
class Difference:
    """The run's value minus the baseline's, its interval (NaN when the items cannot tell: none differ), the
    two-sided p-value, the items compared, the test's name and what decided it (e.g. the discordant counts)."""

    difference: float
    low: float
    high: float
    p_value: float
    n: int
    test: str
    counts: str = ""

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def verdict(self) -> int:
        """-1 below, 0 not different, +1 above: the sign of the interval when it excludes 0."""
        if self.low > 0:
            return 1
        if self.high < 0:
            return -1
        return 0


def _central_p(k: int, n: int, p0: float) -> float:
    """Two-sided exact p-value of k successes in n under Binomial(n, p0): twice the smaller tail, at most 1."""
    lower, upper = stats.binom.cdf(k, n, p0), stats.binom.sf(k - 1, n, p0)
    return float(min(1.0, 2 * min(lower, upper)))


def _clopper_pearson(k: int, n: int) -> tuple[float, float]:
    found = stats.binomtest(k, n).proportion_ci(confidence_level=LEVEL, method="exact")
    return float(found.low), float(found.high)


def mcnemar(run_right: np.ndarray, baseline_right: np.ndarray) -> Difference:
    """Exact McNemar test of the run's accuracy against the baseline's on the same items.

    >>> t = mcnemar(np.array([1] * 10 + [0] * 2 + [1] * 8), np.array([0] * 10 + [1] * 2 + [1] * 8))
    >>> round(t.difference, 2), round(t.p_value, 4), t.verdict, t.counts
    (0.4, 0.0386, 1, '10 items only the run got right, 2 only the baseline')
    """
    run, base = np.asarray(run_right, dtype=bool), np.asarray(baseline_right, dtype=bool)
    n = run.size
    only_run, only_base = int(np.sum(run & ~base)), int(np.sum(~run & base))
    discordant = only_run + only_base
    counts = f"{only_run:,} items only the run got right, {only_base:,} only the baseline"
    if discordant == 0:  # the same right answers on every item: no interval to give
        return Difference(0.0, float("nan"), float("nan"), 1.0, n, "exact McNemar", counts)
    low, high = _clopper_pearson(only_run, discordant)
    scale = discordant / n
    return Difference(
        (only_run - only_base) / n,
        (2 * low - 1) * scale,
        (2 * high - 1) * scale,
        _central_p(only_run, discordant, 0.5),
        n,
        "exact McNemar",
        counts,
    )


def binomial(correct: int, n: int, expected: float) -> Difference:
    """Exact binomial test of `correct` of `n` against the expected accuracy `expected`.

    >>> t = binomial(40, 100, 1 / 3); round(t.difference, 3), t.verdict, round(t.p_value, 3)
    (0.067, 0, 0.193)
    """
    if n == 0:
        return Difference(float("nan"), float("nan"), float("nan"), float("nan"), 0, "exact binomial")
    low, high = _clopper_pearson(correct, n)
    return Difference(
        correct / n - expected,
        low - expected,
        high - expected,
        _central_p(correct, n, expected),
        n,
        "exact binomial",
        f"{correct:,} of {n:,} right, {expected:.3f} expected by guessing",
    )


def bootstrap_difference(observed: float, samples: np.ndarray, n: int) -> Difference:
    """Paired bootstrap of a metric's difference run − baseline: `observed` on the items, `samples` on each resample
    (both runs scored on the same resample: `classification.macro_f1_difference`); the p-value is twice the smaller
    share of resampled differences on either side of 0 (the percentile interval's counterpart).

    >>> t = bootstrap_difference(0.1, np.linspace(0.05, 0.15, 1000), 500); t.verdict, t.p_value < 0.01
    (1, True)
    """
    samples = np.asarray(samples, dtype=np.float64)
    low, high = interval(samples, LEVEL)
    finite = samples[np.isfinite(samples)]
    p_value = float(min(1.0, 2 * min(np.sum(finite <= 0), np.sum(finite >= 0)) / max(finite.size, 1)))
    return Difference(
        float(observed), low, high, p_value, n, f"paired bootstrap ({finite.size:,} resamples, seed {SEED})"
    )


def against_draws(value: float, draws: np.ndarray, n: int) -> Difference:
    """Monte Carlo test of `value` against the scores of random draws on the same items (two-sided).

    >>> t = against_draws(0.5, np.linspace(0.2, 0.4, 1000), 90); t.verdict, round(t.p_value, 3)
    (1, 0.0)
    """
    draws = np.asarray(draws, dtype=np.float64)
    low, high = interval(draws, LEVEL)
    tail = min(np.sum(draws >= value), np.sum(draws <= value))
    return Difference(
        value - float(draws.mean()),
        value - high,
        value - low,
        float(min(1.0, 2 * tail / draws.size)),
        n,
        f"Monte Carlo against {draws.size:,} random guesses",
    )
