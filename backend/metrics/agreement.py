"""Agreement between raters (people, or a judge and people) on a criterion's integer scale.

- Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"): ordinal for
  scales of three or more points, nominal for binary ones. Over many raters with missing scores it is
  the `krippendorff` package's; for two score vectors it is computed here from their coincidence
  matrix (the same formula, vectorised over bootstrap resamples), and checked against the package in
  tests/test_judges.py.
- Cohen's kappa (Cohen 1960; quadratic weights for ordinal scales after Cohen 1968, "Weighted kappa"):
  from the two raters' contingency table, checked against `sklearn.metrics.cohen_kappa_score`.
- Spearman's rho (`scipy.stats.spearmanr` for the estimate; Pearson's r of average ranks per resample).
- Kendall's tau-b (`scipy.stats.kendalltau`) between two rankings of runs.
Intervals are 95% percentile bootstraps over items (`bootstrap.weights`: seed 0, 1,000 resamples).
Each is NaN where undefined: fewer than two items, or no variation in the scores.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from itertools import combinations

import krippendorff
import numpy as np
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from backend.metrics import bootstrap

NAN = float("nan")


def level(domain: np.ndarray) -> str:
    """'nominal' for a binary scale, 'ordinal' for a longer one."""
    return "nominal" if len(domain) == 2 else "ordinal"


def alpha(matrix: np.ndarray, domain: np.ndarray, scale: str) -> float:
    """Krippendorff's alpha of a raters × items matrix (NaN = not rated); NaN without variation.

    >>> round(alpha(np.array([[0, 1, 2, 3], [0, 1, 2, 2.0]]), np.arange(4), "ordinal"), 3)
    0.91
    """
    if matrix.shape[1] == 0 or np.unique(matrix[np.isfinite(matrix)]).size < 2:
        return NAN
    return float(krippendorff.alpha(reliability_data=matrix, value_domain=domain, level_of_measurement=scale))


def pairwise_kappas(matrix: np.ndarray, domain: np.ndarray, ordinal: bool) -> list[float]:
    """Cohen's kappa of every rater pair (rows) sharing ≥ 2 items (undefined pairs left out)."""
    kappas = []
    for a, b in combinations(matrix, 2):
        shared = np.isfinite(a) & np.isfinite(b)
        x, y = a[shared].astype(int), b[shared].astype(int)
        if shared.sum() >= 2 and np.unique(np.concatenate([x, y])).size >= 2:
            kappas.append(float(cohen_kappa_score(x, y, labels=domain, weights="quadratic" if ordinal else None)))
    return kappas


def consensus(scores) -> float:
    """The people's score of an item: the median, and of two middle scores the lower (the stricter).

    >>> consensus([0, 1]), consensus([1, 2, 3]), consensus([3, 0, 3, 2])
    (0.0, 2.0, 2.0)
    """
    ordered = np.sort(np.asarray(scores, dtype=float))
    return float(ordered[(len(ordered) - 1) // 2]) if len(ordered) else NAN


@dataclass(frozen=True)
class Paired:
    """Agreement of two raters' scores on the same n items, each with a 95% bootstrap interval."""

    n: int
    alpha: float
    alpha_low: float
    alpha_high: float
    kappa: float
    kappa_low: float
    kappa_high: float
    rho: float
    rho_low: float
    rho_high: float

    def as_dict(self) -> dict:
        return asdict(self)


def _tables(a: np.ndarray, b: np.ndarray, domain: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Contingency tables (R × K × K) of a against b in each resample (`counts`: R × n draws)."""
    k = len(domain)
    code = np.searchsorted(domain, a) * k + np.searchsorted(domain, b)
    return (counts @ np.eye(k * k)[code]).reshape(-1, k, k)


def _alphas(tables: np.ndarray, domain: np.ndarray, scale: str) -> np.ndarray:
    """Krippendorff's alpha of two raters from their contingency tables (R × K × K): coincidences
    o = C + Cᵀ, marginals n_c, alpha = 1 − (n − 1) Σ o δ² / Σ n_c n_k δ²."""
    coincidences = tables + tables.transpose(0, 2, 1)
    marginals = coincidences.sum(axis=2)  # R × K
    total = marginals.sum(axis=1)  # R: 2n
    k = len(domain)
    if scale == "nominal":
        delta = np.broadcast_to(1.0 - np.eye(k), coincidences.shape)
    else:  # ordinal: (sum of the marginals from c to k, less half of both ends)²
        cumulative = np.cumsum(marginals, axis=1)
        low, high = np.minimum.outer(np.arange(k), np.arange(k)), np.maximum.outer(np.arange(k), np.arange(k))
        between = cumulative[:, high] - cumulative[:, low] + marginals[:, low]
        delta = (between - (marginals[:, :, None] + marginals[:, None, :]) / 2) ** 2
    observed = (coincidences * delta).sum(axis=(1, 2))
    expected = (marginals[:, :, None] * marginals[:, None, :] * delta).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1 - (total - 1) * observed / expected, np.nan)


def _kappas(tables: np.ndarray, domain: np.ndarray, scale: str) -> np.ndarray:
    """Cohen's kappa (quadratic weights when ordinal) of contingency tables (R × K × K)."""
    k = len(domain)
    steps = np.arange(k)
    weights = 1.0 - np.eye(k) if scale == "nominal" else (np.subtract.outer(steps, steps) / max(k - 1, 1)) ** 2
    total = tables.sum(axis=(1, 2))
    expected = tables.sum(axis=2)[:, :, None] * tables.sum(axis=1)[:, None, :] / total[:, None, None]
    disagreement = (weights * expected).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(disagreement > 0, 1 - (weights * tables).sum(axis=(1, 2)) / disagreement, np.nan)


def _rhos(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of the average ranks of each row of x and y (R × n): Spearman's rho per resample."""
    rx, ry = stats.rankdata(x, axis=1), stats.rankdata(y, axis=1)
    rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
    spread = np.sqrt((rx**2).sum(axis=1) * (ry**2).sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(spread > 0, (rx * ry).sum(axis=1) / spread, np.nan)


def paired(a, b, domain, b_values=None) -> Paired:
    """Agreement of scores `a` and `b` (integers of `domain`, same items in the same order): alpha and
    kappa of a against b, and Spearman's rho of a against `b_values` (e.g. the people's mean score;
    default b). Intervals resample the items.

    >>> p = paired([0, 1, 2, 3, 3], [0, 1, 2, 3, 2], np.arange(4))
    >>> p.n, round(p.kappa, 3), round(p.rho, 3)
    (5, 0.918, 0.921)
    """
    a, b, domain = np.asarray(a, dtype=float), np.asarray(b, dtype=float), np.asarray(domain, dtype=float)
    c = b if b_values is None else np.asarray(b_values, dtype=float)
    n = len(a)
    if n < 2:
        return Paired(n, *[NAN] * 9)
    scale = level(domain)
    point = _tables(a, b, domain, np.ones((1, n)))
    resampled = _tables(a, b, domain, bootstrap.weights(n))
    index = np.array([np.repeat(np.arange(n), row.astype(int)) for row in bootstrap.weights(n)])
    rho = float(stats.spearmanr(a, c).statistic) if np.unique(a).size > 1 and np.unique(c).size > 1 else NAN
    return Paired(
        n,
        float(_alphas(point, domain, scale)[0]),
        *bootstrap.interval(_alphas(resampled, domain, scale)),
        float(_kappas(point, domain, scale)[0]),
        *bootstrap.interval(_kappas(resampled, domain, scale)),
        rho,
        *bootstrap.interval(_rhos(a[index], c[index])),
    )


def kendall(x, y) -> tuple[float, float]:
    """Kendall's tau-b between two score lists over the same runs, and its two-sided p; NaN under 3 runs.

    >>> kendall([1, 2, 3], [10, 20, 30])[0], kendall([1, 2, 3], [3, 2, 1])[0]
    (1.0, -1.0)
    """
    if len(x) < 3:
        return NAN, NAN
    result = stats.kendalltau(x, y)
    return float(result.statistic), float(result.pvalue)
