"""Seeded, vectorised bootstrap: percentile 95% intervals and paired comparisons.

Resampling n items R times is a weight matrix W (R × n) of multinomial counts; any additive
statistic over resamples is then W @ x. Ratios (accuracy, precision, F1, ...) are ratios of such
products (Efron & Tibshirani 1993, ch. 13, percentile interval).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np
from scipy import stats

RESAMPLES = 1000
SEED = 0
MIN_N = 10  # fewer items: no bootstrap interval (too few to estimate one); proportions get Wilson's at any n
LARGE_N = 10_000  # above this many items, resample by kind of item (see resampled_sums): no R × n matrix


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its sample size and a 95% bootstrap interval (NaN when not asked)."""

    value: float
    low: float
    high: float
    n: int

    def as_dict(self) -> dict:
        return asdict(self)

    def ci(self, scale: float = 100, digits: int = 1) -> str:
        """'95% CI [55.1, 61.3]', or why there is none: "too few items to estimate an interval (under 10)".

        >>> mean(np.array([0.2, 0.5])).ci(), mean(np.zeros(20)).ci()
        ('too few items to estimate an interval (under 10)', '95% CI [0.0, 16.1]')
        """
        if np.isnan(self.low):
            return f"too few items to estimate an interval (under {MIN_N})" if self.n < MIN_N else "no interval"
        return f"95% CI [{scale * self.low:.{digits}f}, {scale * self.high:.{digits}f}]"

    def __str__(self) -> str:
        if np.isnan(self.low):
            return f"{100 * self.value:.1f} (n={self.n})"
        return f"{100 * self.value:.1f} [{100 * self.low:.1f}, {100 * self.high:.1f}] (n={self.n})"


@lru_cache(maxsize=16)
def weights(n: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """R × n matrix of how often each item is drawn in each resample (rows sum to n); cached.

    >>> w = weights(5, 3, 0); w.shape, bool((w.sum(axis=1) == 5).all())
    ((3, 5), True)
    """
    draws = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    flat = (draws + n * np.arange(resamples)[:, None]).ravel()  # one bincount for all resamples
    counts = np.bincount(flat, minlength=resamples * n).reshape(resamples, n).astype(np.float64)
    counts.setflags(write=False)
    return counts


def resampled_sums(
    x: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED, counts: np.ndarray | None = None
) -> np.ndarray:
    """Sum of the per-item values `x` (n, or n × d) in each bootstrap resample: R (× d).

    Up to LARGE_N items this is W @ x with the cached weight matrix. Above, items with identical values
    form one kind, and a resample's count of each kind is one multinomial draw over the kinds' shares:
    the same distribution as drawing n items with replacement, without an R × n matrix (a million items
    would need 8 GB). With `counts`, the rows of `x` already are kinds and `counts` how many items each has.

    >>> big = np.r_[np.ones(30_000), np.zeros(10_000)]
    >>> sums = resampled_sums(big) / big.size; round(float(sums.mean()), 2), bool(0.74 < sums.min() < sums.max() < 0.76)
    (0.75, True)
    """
    x = np.asarray(x, dtype=np.float64)
    if counts is not None:
        return _by_kind(x, np.asarray(counts, dtype=np.int64), resamples, seed)
    n = x.shape[0]
    if n <= LARGE_N:
        return weights(n, resamples, seed) @ x
    flat = np.ascontiguousarray(x.reshape(n, -1))
    keys = flat.view(np.dtype((np.void, flat.dtype.itemsize * flat.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    if len(first) > LARGE_N:  # continuous values: about as many kinds as items; draw item indices in chunks
        return _by_index(flat, resamples, seed).reshape((resamples, *x.shape[1:]))
    return _by_kind(flat[first], np.bincount(inverse), resamples, seed).reshape((resamples, *x.shape[1:]))


def _by_index(flat: np.ndarray, resamples: int, seed: int, cells: int = 20_000_000) -> np.ndarray:
    """Resampled sums by drawing item indices, a few resamples at a time (memory stays ~cells × 8 bytes)."""
    n, rng = flat.shape[0], np.random.default_rng(seed)
    step = max(1, cells // n)
    return np.concatenate(
        [
            flat[rng.integers(0, n, size=(min(step, resamples - start), n))].sum(axis=1)
            for start in range(0, resamples, step)
        ]
    )


def _by_kind(kinds: np.ndarray, counts: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Resampled sums when items come in kinds: a multinomial draw of each resample's counts per kind."""
    n = int(counts.sum())
    draws = np.random.default_rng(seed).multinomial(n, counts / n, size=resamples)  # R × kinds
    return draws @ kinds


def interval(samples: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of bootstrap samples, ignoring NaN (undefined) resamples."""
    tail = 100 * (1 - level) / 2
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return float("nan"), float("nan")
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def mean(
    values: np.ndarray, ci: bool = True, resamples: int = RESAMPLES, seed: int = SEED, counts: np.ndarray | None = None
) -> Estimate:
    """Mean of per-item values with a 95% interval; with `counts`, `values` are those of kinds of items and `counts`
    how many items each kind has. A proportion (every value 0 or 1: correctness, a share of items) gets the Wilson
    score interval (scipy's `binomtest`): a bootstrap collapses to [0, 0] or [1, 1] when every item is 0 or 1, at any
    n (0 of 20: [0, 0.161]). Other values get a percentile bootstrap interval from MIN_N items on, and none below
    (too few to estimate: NaN, and `Estimate.ci` says so).

    >>> str(mean(np.array([1, 1, 0, 1.0]), ci=False))
    '75.0 (n=4)'
    >>> mean(np.zeros(20)).high.__round__(3), mean(np.array([])).n, bool(np.isnan(mean(np.array([0.2, 0.5])).low))
    (0.161, 0, True)
    """
    values = np.asarray(values, dtype=np.float64)
    n = values.size if counts is None else int(np.sum(counts))
    if n == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    total = float(values.sum()) if counts is None else float(np.dot(values, counts))
    if not ci:
        return Estimate(total / n, float("nan"), float("nan"), n)
    if np.isin(values, (0.0, 1.0)).all():
        return _wilson(round(total), n)
    if n < MIN_N:
        return Estimate(total / n, float("nan"), float("nan"), n)
    low, high = interval(resampled_sums(values, resamples, seed, counts) / n)
    return Estimate(total / n, low, high, n)


def _wilson(ones: int, n: int) -> Estimate:
    found = stats.binomtest(ones, n).proportion_ci(confidence_level=0.95, method="wilson")
    return Estimate(ones / n, float(found.low), float(found.high), n)


def means(matrix: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED) -> list[Estimate]:
    """`mean` for each row of a (runs × n) matrix over the same items, with one shared resampling (the rows that are
    proportions get their Wilson interval, as `mean` gives it)."""
    matrix = np.asarray(matrix, dtype=np.float64)
    n = matrix.shape[1]
    if n == 0 or n < MIN_N or np.isin(matrix, (0.0, 1.0)).all():
        return [mean(row) for row in matrix]
    samples = resampled_sums(matrix.T, resamples, seed) / n  # R × runs
    return [
        mean(row) if np.isin(row, (0.0, 1.0)).all() else Estimate(float(row.mean()), *interval(samples[:, i]), n)
        for i, row in enumerate(matrix)
    ]


@dataclass(frozen=True)
class Comparison:
    """Difference of a metric between two runs on the same items, with a paired bootstrap p-value."""

    difference: float
    low: float
    high: float
    p_value: float
    n: int


def paired_difference(a: np.ndarray, b: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED) -> Comparison:
    """Paired bootstrap of mean(a) − mean(b) over the same items (Koehn 2004; Berg-Kirkpatrick et al. 2012).

    The two-sided p-value is the share of resampled differences, centred on the observed one,
    at least as far from zero as the observed difference.

    >>> c = paired_difference(np.ones(50), np.zeros(50)); c.difference, c.p_value < 0.01
    (1.0, True)
    """
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    n = diff.size
    observed = float(diff.mean())
    samples = resampled_sums(diff, resamples, seed) / n
    centred = samples - observed
    p_value = float((np.sum(np.abs(centred) >= abs(observed)) + 1) / (resamples + 1))
    return Comparison(observed, *interval(samples), p_value, n)
