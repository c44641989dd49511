"""The mixed logistic model of a two-way forced choice (issue 63, item 6): whether people choose one member of a pair
more often than the other, beyond what single participants and single items do —

    chose_first ~ 1 + (1 | participant) + (1 | item)

fitted by mixedlm's glmer (Laplace, binomial logit), as lme4's glmer fits it. The intercept is the log-odds of
choosing the first offered condition; its Wald z test asks whether the share differs from one half. Its standard
error is lme4's default (`vcov(use.hessian = TRUE)`): from the finite-difference Hessian of the deviance over the
variance parameters and the fixed effect together (lme4's deriv12), which mixedlm's own vcov (the PIRLS
information, conditional on the variances) does not give. A choice among three or more sentences needs a
multinomial mixed model, which the engine does not offer: `fit` says so instead of fitting something else.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import mixedlm
import numpy as np
import pandas as pd
from scipy import stats
from threadpoolctl import threadpool_limits

FORMULA = "chose_first ~ 1 + (1 | participant) + (1 | item)"
DELTA = 1e-4  # lme4's deriv12 step
GRADIENT_TOL = 2e-3  # lme4's check.conv.grad tolerance (on the scaled gradient)


@dataclass(frozen=True)
class ChoiceFit:
    """The fit: log-odds `estimate` of choosing `first` over `second`, its `se`, `z`, `p`, the share with its 95%
    Wald interval (on the log-odds scale, back-transformed), the variance of each grouping factor, the counts, and
    whether it converged (`problem` says why not; no estimate is shown then)."""

    first: str
    second: str
    n: int
    participants: int
    items: int
    converged: bool
    problem: str = ""
    estimate: float = math.nan
    se: float = math.nan
    z: float = math.nan
    p: float = math.nan
    share: float = math.nan
    low: float = math.nan
    high: float = math.nan
    variance: tuple[tuple[str, float], ...] = ()
    singular: bool = False

    def table(self) -> pd.DataFrame:
        """One row: what each number is, for the page and the archive."""
        return pd.DataFrame(
            [
                {
                    "model": FORMULA,
                    "first": self.first,
                    "second": self.second,
                    "n": self.n,
                    "participants": self.participants,
                    "items": self.items,
                    "log_odds": self.estimate,
                    "se": self.se,
                    "z": self.z,
                    "p": self.p,
                    "share_first": self.share,
                    "low": self.low,
                    "high": self.high,
                    "var_participant": dict(self.variance).get("participant", math.nan),
                    "var_item": dict(self.variance).get("item", math.nan),
                    "singular": self.singular,
                }
            ]
        )

    def text(self) -> str:
        if not self.converged:
            return f"The mixed logistic model `{FORMULA}` did not converge ({self.problem}); no estimate is given."
        return (
            f"Mixed logistic model `{FORMULA}` (glmer, Laplace; {self.n:,} choices of {self.participants:,} "
            f"participants on {self.items:,} items): {self.first} was chosen over {self.second} with log-odds "
            f"{self.estimate:.3f} (SE {self.se:.3f}, z = {self.z:.2f}, p {_p(self.p)}), a share of {self.share:.3f} "
            f"[{self.low:.3f}, {self.high:.3f}]"
            + (" (a singular fit: a variance estimated at zero)." if self.singular else ".")
        )


def _p(p: float) -> str:
    return "< .001" if p < 0.001 else f"= {p:.3f}"


def deriv12(fun, x: np.ndarray, delta: float = DELTA) -> tuple[np.ndarray, np.ndarray]:
    """lme4's deriv12: the central finite-difference gradient and Hessian of `fun` at `x`."""
    n, fx = len(x), fun(x)
    hessian, gradient = np.zeros((n, n)), np.zeros(n)

    def at(steps: dict[int, float]) -> float:
        y = x.copy()
        for i, step in steps.items():
            y[i] += step * delta
        return fun(y)

    for j in range(n):
        up, down = at({j: 1}), at({j: -1})
        hessian[j, j] = (up - 2 * fx + down) / delta**2
        gradient[j] = (up - down) / (2 * delta)
        for i in range(j):
            both = at({i: 1, j: 1}) - at({i: 1, j: -1}) - at({i: -1, j: 1}) + at({i: -1, j: -1})
            hessian[i, j] = hessian[j, i] = both / (4 * delta**2)
    return gradient, hessian


@threadpool_limits.wrap(limits=1, user_api="blas")
def fit(frame: pd.DataFrame, first: str, second: str) -> ChoiceFit:
    """Fit FORMULA to `frame` (participant, item, chose_first 0/1)."""
    counts = {"n": len(frame), "participants": frame["participant"].nunique(), "items": frame["item"].nunique()}
    if counts["participants"] < 2 or counts["items"] < 2 or frame["chose_first"].nunique() < 2:
        why = "it needs 2 or more participants and items, and both members chosen at least once"
        return ChoiceFit(first, second, converged=False, problem=why, **counts)
    data = frame[["participant", "item", "chose_first"]].astype({"participant": str, "item": str, "chose_first": int})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mixedlm.glmer(FORMULA, data, family=mixedlm.families.Binomial())
        devfun = mixedlm.mkGlmerDevfun(mixedlm.glFormula(FORMULA, data, family=model.family), nAGQ=1)
    theta, beta = np.asarray(model.theta, dtype=float), np.asarray(model.beta, dtype=float)
    gradient, hessian = deriv12(devfun, np.r_[theta, beta])
    try:
        inverse = np.linalg.inv(hessian)
        scaled = np.abs(np.linalg.solve(hessian, gradient)).max()  # lme4's scaled gradient: H⁻¹g
    except np.linalg.LinAlgError:
        return ChoiceFit(first, second, converged=False, problem="the Hessian is singular", **counts)
    vcov = (inverse + inverse.T)[len(theta) :, len(theta) :]
    problem = ""
    if not model.converged:
        problem = f"the optimizer stopped: {model.message}"
    elif scaled > GRADIENT_TOL:
        problem = f"the scaled gradient {scaled:.2g} is above lme4's tolerance {GRADIENT_TOL:g}"
    elif not vcov[0, 0] > 0:
        problem = "the Hessian is not positive definite"
    if problem:
        return ChoiceFit(first, second, converged=False, problem=problem, **counts)
    estimate, se = float(beta[0]), float(math.sqrt(vcov[0, 0]))
    z = estimate / se
    variance = tuple((name, float(v["(Intercept)"])) for name, v in model.VarCorr().as_dict().items())
    logistic = stats.logistic.cdf
    return ChoiceFit(
        first,
        second,
        converged=True,
        estimate=estimate,
        se=se,
        z=z,
        p=float(2 * stats.norm.sf(abs(z))),
        share=float(logistic(estimate)),
        low=float(logistic(estimate - stats.norm.ppf(0.975) * se)),
        high=float(logistic(estimate + stats.norm.ppf(0.975) * se)),
        variance=variance,
        singular=bool(model.isSingular()),
        **counts,
    )
