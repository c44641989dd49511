"""Linear mixed models for graded judgements (issue 55, item 2): `response ~ condition + (1 + slopes || participant)
+ (1 | item)`, the model reviewers of rating studies expect (Degen & Tonhauser fit it with lme4), fitted with
statsmodels' `MixedLM` and checked against lme4 in tests/test_mixed_models.py.

statsmodels fits crossed random effects as variance components of one all-encompassing group: every rating is in
group 1, the group's own intercept is left out (`re_formula="0"`), and participant intercepts, item intercepts
and each by-participant slope are variance components (`vc_formula`). Variance components are independent of each
other, so the slopes are uncorrelated with the intercepts: lme4's `||` model, which is what the oracle fits.
The condition is coded into numeric contrast columns here (treatment or sum coding); the same columns are the fixed
effects and the slopes. `Fit.formula` is the lme4 formula of that model: the fixed part names the factor (R fits it
with the same contrasts, named by level, so lme4's terms read `condition<level>` as here) and the slopes name the
numeric columns `c_<level>` (lme4's `||` splits only numeric terms into uncorrelated ones).

Fitting details, chosen so that the estimates equal lme4's well inside the tolerances the tests check (fixed
effects and SEs within 1e-3, variance components within 1e-2): REML with L-BFGS on statsmodels' square-root
parameterisation (BFGS, then CG if it does not converge), from moment estimates of the variance components
(`_start`); the likelihood-ratio test refits with ML with and without the condition factor, each ML fit starting
from the REML fit's variance components. statsmodels' warnings are recorded and
turned into `converged` and notes instead of being printed: its "on the boundary" warning fires whenever a
variance is under 0.01 in the response's units (every fit of a 0-1 slider), so singularity is judged as lme4's
`isSingular` does instead (a component's SD relative to the residual SD under 1e-4).
"""

from __future__ import annotations

import math
import re
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import statsmodels
from scipy import stats
from statsmodels.regression.mixed_linear_model import MixedLM, MixedLMParams
from statsmodels.tools.sm_exceptions import ConvergenceWarning

FIXED_COLUMNS = ["term", "estimate", "se", "low", "high", "z", "p_wald", "chi2", "df", "p_lrt"]
VARIANCE_COLUMNS = ["group", "term", "variance", "sd"]
INTERCEPT = "(Intercept)"
MIN_LEVELS = 3  # participants and items a variance component needs at least: fewer, no model
SINGULAR = 1e-4  # lme4's isSingular tolerance on the relative SDs (theta)
METHODS = ["lbfgs", "bfgs", "cg"]  # statsmodels' optimisers, tried in turn until one converges
UNCORRELATED = (
    "slopes are uncorrelated with the intercepts (statsmodels' variance components): the same model as lme4's `||`"
)
P_VALUES = (
    "p_wald is a Wald z test: anti-conservative with few participants or items; "
    "p_lrt is a likelihood-ratio test of the whole condition factor (ML fits with and without it, as lme4's "
    "anova(m0, m1) gives), shown on each of its rows"
)


@dataclass(frozen=True, eq=False)
class Fit:
    """A fitted model: the lme4 formula, the contrast coding, fixed effects (`FIXED_COLUMNS`), variance components
    (`VARIANCE_COLUMNS`: group participant | item | Residual, term "(Intercept)", a slope's contrast column, or ""
    for the residual), counts, REML convergence and lme4's singularity, notes, the seconds it took and the versions
    of the libraries that fitted it. Two fits are equal when their `as_dict()` are."""

    formula: str
    coding: str
    reference: str
    fixed: pd.DataFrame
    variance: pd.DataFrame
    n: int
    participants: int
    items: int
    method: str
    converged: bool
    singular: bool
    notes: tuple[str, ...]
    seconds: float
    versions: dict = field(default_factory=dict)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fit) and self.as_dict() == other.as_dict()

    __hash__ = None  # mutable DataFrames inside: not hashable

    def as_dict(self) -> dict:
        """Every field, JSON-serialisable: the DataFrames as lists of records, NaN as None."""
        return {
            "formula": self.formula,
            "coding": self.coding,
            "reference": self.reference,
            "fixed": _records(self.fixed, FIXED_COLUMNS),
            "variance": _records(self.variance, VARIANCE_COLUMNS),
            "n": self.n,
            "participants": self.participants,
            "items": self.items,
            "method": self.method,
            "converged": self.converged,
            "singular": self.singular,
            "notes": list(self.notes),
            "seconds": self.seconds,
            "versions": dict(self.versions),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Fit:
        """The Fit `as_dict` wrote (after a trip through JSON too)."""
        return cls(
            formula=d["formula"],
            coding=d["coding"],
            reference=d["reference"],
            fixed=_frame(d["fixed"], FIXED_COLUMNS, text=["term"]),
            variance=_frame(d["variance"], VARIANCE_COLUMNS, text=["group", "term"]),
            n=int(d["n"]),
            participants=int(d["participants"]),
            items=int(d["items"]),
            method=d["method"],
            converged=bool(d["converged"]),
            singular=bool(d["singular"]),
            notes=tuple(d["notes"]),
            seconds=float(d["seconds"]),
            versions=dict(d["versions"]),
        )

    def summary(self) -> str:
        """A paragraph for a methods section: the model, coding, counts, each fixed effect with its estimate, SE,
        95% Wald CI and both p values (naming the tests), the variance components and the fit's notes."""
        lines = [
            f"Linear mixed model fitted by {self.method} (statsmodels MixedLM {self.versions.get('statsmodels', '')}"
            f", checked against lme4): `{self.formula}`, {self.coding}; "
            f"{self.n:,} ratings from {self.participants:,} participants on {self.items:,} items.",
            "",
            "Fixed effects (estimate, SE, 95% Wald CI; p from a Wald z test and from a likelihood-ratio test):",
        ]
        for row in self.fixed.itertuples(index=False):
            lrt = f"; LRT χ²({row.df:g}) = {row.chi2:.2f}, p {_p(row.p_lrt)}" if not math.isnan(row.p_lrt) else ""
            lines.append(
                f"- {row.term}: {row.estimate:.4g} (SE {row.se:.3g}, 95% CI [{row.low:.4g}, {row.high:.4g}]); "
                f"Wald z = {row.z:.2f}, p {_p(row.p_wald)}{lrt}"
            )
        lines += ["", "Variance components (variance, SD):"]
        for row in self.variance.itertuples(index=False):
            lines.append(f"- {row.group}{' ' + row.term if row.term else ''}: {row.variance:.4g} (SD {row.sd:.4g})")
        state = "converged" if self.converged else "did not converge"
        state += "; singular fit (a variance component is estimated as zero)" if self.singular else ""
        lines += ["", f"The fit {state}."]
        lines += [f"Note: {note}." for note in self.notes]
        return "\n".join(lines)


def fit(
    frame: pd.DataFrame,
    *,
    response: str = "value",
    condition: str = "condition",
    participant: str = "participant",
    item: str = "item",
    slopes: bool = True,
    reference: str | None = None,
    coding: str = "treatment",
) -> Fit:
    """`response ~ condition + (1 + slopes || participant) + (1 | item)` by REML, with a likelihood-ratio test of
    the condition. By-participant slopes for the condition only where the design supports them (every participant
    saw at least 2 conditions, and there are more ratings than by-participant effects, lme4's own check); when the
    fit with slopes does not converge, intercepts only, with a note. coding "treatment": each condition against
    `reference` (default the first in sorted order); "sum": each condition against the grand mean of the condition
    means, `reference` (default the last in sorted order, as R's contr.sum) the level left out. Rows missing any of
    the four columns are left out with a note.

    Raises ValueError naming the column when a column is missing or the response is not numeric, and when there are
    fewer than 2 conditions or fewer than MIN_LEVELS participants or items."""
    start = time.perf_counter()
    data, dropped = _checked(frame, response, condition, participant, item)
    levels = sorted(data[condition].unique(), key=str)
    if len(levels) < 2:
        raise ValueError(f"column {condition!r} has {len(levels)} condition(s) {levels}: a model needs at least 2")
    for column, role in ((participant, "participants"), (item, "items")):
        if data[column].nunique() < MIN_LEVELS:
            raise ValueError(
                f"column {column!r} has {data[column].nunique()} {role}: a mixed model needs at least {MIN_LEVELS}"
            )
    reference, words, terms, columns, contrasts = _contrasts(data[condition], levels, reference, coding, condition)
    design = pd.DataFrame(contrasts, index=data.index).assign(
        _y=data[response].to_numpy(float),
        _participant=data[participant].astype(str).to_numpy(),
        _item=data[item].astype(str).to_numpy(),
        _all=1,
    )
    notes = [f"{dropped:,} rows with a missing value left out"] if dropped else []
    supported, why = _slopes_supported(data, condition, participant, len(levels))
    if slopes and not supported:
        notes.append(f"no by-participant slopes: {why}")
    with_slopes = slopes and supported
    guess = _start(design, list(contrasts))
    reml, caught = _fitted(design, list(contrasts), with_slopes, reml=True, start=guess)
    if with_slopes and not reml.converged:
        notes.append("the fit with by-participant slopes did not converge: intercepts only")
        with_slopes = False
        reml, caught = _fitted(design, list(contrasts), False, reml=True, start=guess)
    notes += caught
    start_values = dict(zip(reml.model.exog_vc.names, reml.params_object.vcomp, strict=True))
    full, caught_full = _fitted(design, list(contrasts), with_slopes, reml=False, start=start_values)
    null, caught_null = _fitted(design, [], with_slopes, reml=False, start=start_values)
    notes += [f"ML fit for the likelihood-ratio test: {note}" for note in dict.fromkeys(caught_full + caught_null)]
    chi2 = max(2 * (full.llf - null.llf), 0.0)
    df = len(levels) - 1
    fixed = pd.DataFrame(
        {
            "term": [INTERCEPT, *terms],
            "estimate": reml.fe_params.to_numpy(),
            "se": reml.bse_fe.to_numpy(),
            "low": reml.conf_int().iloc[: len(terms) + 1, 0].to_numpy(),
            "high": reml.conf_int().iloc[: len(terms) + 1, 1].to_numpy(),
            "z": reml.tvalues.iloc[: len(terms) + 1].to_numpy(),
            "p_wald": reml.pvalues.iloc[: len(terms) + 1].to_numpy(),
            "chi2": [np.nan] + [chi2] * len(terms),
            "df": [np.nan] + [float(df)] * len(terms),
            "p_lrt": [np.nan] + [float(stats.chi2.sf(chi2, df))] * len(terms),
        }
    )
    variance = _variance(reml, columns, with_slopes)
    slope_part = " + ".join(["1", *columns.values()]) + f" || {participant}" if with_slopes else f"1 | {participant}"
    formula = f"{response} ~ {condition} + ({slope_part}) + (1 | {item})"
    if with_slopes:
        notes.append(UNCORRELATED)
    notes.append(P_VALUES)
    theta = np.sqrt(np.clip(reml.vcomp, 0, None) / reml.scale)
    return Fit(
        formula=formula,
        coding=words,
        reference=str(reference),
        fixed=fixed,
        variance=variance,
        n=len(design),
        participants=int(design["_participant"].nunique()),
        items=int(design["_item"].nunique()),
        method="REML",
        converged=bool(reml.converged),
        singular=bool((theta < SINGULAR).any()),
        notes=tuple(notes),
        seconds=round(time.perf_counter() - start, 3),
        versions={"statsmodels": statsmodels.__version__, "numpy": np.__version__, "pandas": pd.__version__},
    )


def _checked(frame: pd.DataFrame, response: str, condition: str, participant: str, item: str):
    """The four columns' rows with no missing value, and how many rows were left out; ValueError naming a missing
    column or a non-numeric response."""
    for column in (response, condition, participant, item):
        if column not in frame.columns:
            raise ValueError(f"column {column!r} is missing: the frame has {list(frame.columns)}")
    data = frame[[response, condition, participant, item]]
    if not pd.api.types.is_numeric_dtype(data[response]) or pd.api.types.is_bool_dtype(data[response]):
        raise ValueError(f"column {response!r} is not numeric ({data[response].dtype}): the response must be")
    kept = data.dropna()
    return kept, len(data) - len(kept)


def _contrasts(values: pd.Series, levels: list, reference, coding: str, condition: str):
    """(reference, the coding in words, lme4's term names, {term: slope column name}, {internal name: numeric
    contrast column}) for treatment or sum coding."""
    if coding not in ("treatment", "sum"):
        raise ValueError(f"coding must be 'treatment' or 'sum', not {coding!r}")
    by_text = {str(level): level for level in levels}
    if reference is None:
        reference = levels[0] if coding == "treatment" else levels[-1]
    elif str(reference) not in by_text:
        raise ValueError(f"reference {reference!r} is not a level of column {condition!r}: {list(by_text)}")
    reference = by_text[str(reference)]
    others = [level for level in levels if level != reference]
    terms = [f"{condition}{level}" for level in others]
    names = ["c_" + re.sub(r"\W+", "_", str(level)) for level in others]
    if len(set(names)) < len(names) or not all(name.isidentifier() for name in names):
        names = [f"c_{j + 1}" for j in range(len(others))]
    contrasts = {}
    for j, level in enumerate(others):
        column = (values == level).astype(float)
        if coding == "sum":
            column[values == reference] = -1.0
        contrasts[f"_c{j}"] = column.to_numpy()
    if coding == "treatment":
        words = f"treatment coding: each condition against the reference {str(reference)!r}"
    else:
        words = (
            f"sum (deviation) coding: each condition against the grand mean of the condition means, "
            f"{str(reference)!r} left out (coded -1 on every contrast); the intercept is the grand mean"
        )
    words += "; numeric contrast columns (the slopes' terms) " + ", ".join(
        f"{name} ({term})" for name, term in zip(names, terms, strict=True)
    )
    return reference, words, terms, dict(zip(terms, names, strict=True)), contrasts


def _slopes_supported(data: pd.DataFrame, condition: str, participant: str, k: int) -> tuple[bool, str]:
    """Whether by-participant slopes can be estimated, and why not: every participant saw at least 2 conditions,
    and there are more ratings than by-participant effects (lme4's nobs > number of random effects check)."""
    seen = data.groupby(participant)[condition].nunique()
    if (seen < 2).any():
        return False, f"{int((seen < 2).sum()):,} participant(s) saw only one condition"
    if len(data) <= len(seen) * k:
        return False, f"{len(data):,} ratings for {len(seen) * k:,} by-participant effects"
    return True, ""


def _start(design: pd.DataFrame, fixed: list[str]) -> dict[str, float]:
    """Start values for the variance components relative to the residual variance, by name as `_fitted` names
    them (item, participant, and each slope as the participant intercept), from moments of the OLS residuals: the
    variance of the participant and item mean residuals less what the residual noise alone gives them.
    Hand-written because statsmodels has no moment estimator for crossed components; its default start (1 for
    each) needs twice the optimiser's steps on a 0-1 slider (12 instead of 6 on the prior experiment), and a step
    costs a second there."""
    x = np.column_stack([np.ones(len(design)), *(design[c].to_numpy() for c in fixed)])
    residual = design["_y"].to_numpy() - x @ np.linalg.lstsq(x, design["_y"].to_numpy(), rcond=None)[0]
    noise = max(float(residual.var()), 1e-12)
    parts = {}
    for group in ("_item", "_participant"):
        by = pd.Series(residual).groupby(design[group].to_numpy())
        parts[group] = max(float(by.mean().var()) - noise / float(by.size().mean()), 0.01 * noise)
    within = max(noise - parts["_item"] - parts["_participant"], 0.1 * noise)
    slopes = {f"slope{c}": parts["_participant"] / within for c in design.columns if c.startswith("_c")}
    return {"item": parts["_item"] / within, "participant": parts["_participant"] / within} | slopes


def _fitted(design: pd.DataFrame, fixed: list[str], slopes: bool, *, reml: bool, start: dict[str, float]):
    """statsmodels' MixedLM fit of `_y` on the `fixed` contrast columns with participant and item intercepts (and a
    participant slope per contrast column) as variance components of one group, from `start` (relative variance
    components by name), and the warnings it gave (as notes; the boundary warning is left out, see the module
    docstring)."""
    slope_columns = [c for c in design.columns if c.startswith("_c")]
    vc = {"participant": "0 + C(_participant)", "item": "0 + C(_item)"}
    if slopes:
        vc |= {f"slope{c}": f"0 + C(_participant):{c}" for c in slope_columns}
    notes = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = MixedLM.from_formula(
            "_y ~ " + " + ".join(["1", *fixed]), design, groups="_all", re_formula="0", vc_formula=vc
        )
        vcomp = np.array([start[name] for name in model.exog_vc.names])
        params = MixedLMParams.from_components(np.zeros(model.k_fe), np.zeros((0, 0)), vcomp=vcomp)
        result = model.fit(reml=reml, method=METHODS, start_params=params)
    for warning in caught:
        text = str(warning.message)
        if issubclass(warning.category, ConvergenceWarning) and "boundary" in text:
            continue
        notes.append(f"statsmodels: {text}")
    return result, list(dict.fromkeys(notes))


def _variance(result, columns: dict[str, str], slopes: bool) -> pd.DataFrame:
    """The variance components (`VARIANCE_COLUMNS`): participant intercept, its slopes, item intercept, residual."""
    by_name = dict(zip(result.model.exog_vc.names, result.vcomp, strict=True))
    rows = [("participant", INTERCEPT, by_name["participant"])]
    if slopes:
        rows += [("participant", name, by_name[f"slope_c{j}"]) for j, name in enumerate(columns.values())]
    rows += [("item", INTERCEPT, by_name["item"]), ("Residual", "", result.scale)]
    frame = pd.DataFrame(rows, columns=["group", "term", "variance"])
    return frame.assign(variance=frame["variance"].astype(float), sd=np.sqrt(frame["variance"].astype(float)))


def _records(frame: pd.DataFrame, columns: list[str]) -> list[dict]:
    """A frame's rows as JSON-ready dicts (NaN as None)."""
    return [
        {c: (None if isinstance(v, float) and math.isnan(v) else v) for c, v in row.items()}
        for row in frame[columns].astype(object).to_dict("records")
    ]


def _frame(records: list[dict], columns: list[str], text: list[str]) -> pd.DataFrame:
    """The frame `_records` wrote: text columns as str, the others as float (None back to NaN)."""
    frame = pd.DataFrame(records, columns=columns)
    return frame.astype({c: float for c in columns if c not in text})


def _p(p: float) -> str:
    """A p value as a methods section writes it."""
    return "< .001" if p < 0.001 else "= " + f"{p:.3f}".lstrip("0")
