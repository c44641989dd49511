"""Linear mixed models written in lme4's formula syntax (issue 62), fitted by `mixedlm` (PyPI: lme4's penalised
least squares with a compiled core) and checked against R's lme4 and lmerTest in tests/test_mixed_models.py.

`fit(frame, "value ~ condition + (1 + condition | participant) + (1 | item)")` takes any formula lme4 takes over
the frame's own columns: crossed and nested grouping factors (`(1 | a/b)`), correlated `(1 + x | g)` and
uncorrelated `(1 + x || g)` slopes, interactions. A text column in the fixed part is a factor, coded by `coding`
(treatment, sum or Helmert, with a chosen reference level); R's column names are kept (`condition<level>`).
One difference from lme4 1.1-31, stated in every output that has it: `||` over a factor gives each contrast its own
uncorrelated variance (as afex's `expand_re` does), where lme4 1.1-31 keeps a factor's dummies correlated; the
tests check it against lme4 fitted on the numeric contrast columns.

What a fit reports, each checked against R in the tests:
- each coefficient's t test with Satterthwaite degrees of freedom (lmerTest's `summary`), and a 95% CI on them;
- each fixed term's likelihood-ratio test once, for the term (ML refits with and without it, as lme4's `drop1`),
  respecting marginality (a main effect inside an interaction is not dropped);
- pairwise comparisons between the levels of each factor that is in no interaction (emmeans' `pairs`), with
  Satterthwaite degrees of freedom and Holm's correction by default;
- convergence as lme4's `checkConv` judges it, for the REML fit and for every ML refit behind a likelihood-ratio
  test: the optimiser's own verdict, the largest scaled gradient of the deviance (tolerance 0.002) and a positive
  definite Hessian, over the parameters not on the boundary; singular as lme4's `isSingular` (a relative SD under
  1e-4). A REML fit that fails a check carries no estimates at all (`Fit.converged` False, empty tables, why in
  `checks`, named simpler models in `simpler`); a refit that fails leaves its term's test out, saying so.
Nothing is simplified silently: the model fitted is the model asked.
"""

from __future__ import annotations

import math
import re
import time
import warnings
from dataclasses import dataclass, field
from itertools import combinations

import mixedlm
import numpy as np
import pandas as pd
import scipy
from mixedlm.formula.parser import parse_formula
from mixedlm.formula.terms import Formula, InteractionTerm, RandomTerm, VariableTerm
from mixedlm.inference.ddf import _vcov_derivatives
from scipy import stats
from statsmodels.stats.multitest import multipletests
from threadpoolctl import threadpool_limits

FIXED_COLUMNS = ["term", "estimate", "se", "df", "t", "p", "low", "high"]
TERM_COLUMNS = ["term", "chi2", "df", "p", "note"]
PAIR_COLUMNS = ["factor", "contrast", "estimate", "se", "df", "t", "p", "p_adjusted"]
VARIANCE_COLUMNS = ["group", "term", "variance", "sd"]
CORRELATION_COLUMNS = ["group", "term", "with", "corr"]
INTERCEPT = "(Intercept)"
CODINGS = ("treatment", "sum", "helmert")
CORRECTIONS = ("holm", "bonferroni", "none")
MIN_LEVELS = 3  # levels a grouping factor needs at least: fewer, no variance to estimate
SINGULAR = 1e-4  # lme4's isSingular tolerance on the relative SDs (theta on a boundary)
GRADIENT_TOL = 0.002  # lme4's check.conv.grad tolerance
DELTA = 1e-4  # lme4's deriv12 step
ENGINE = "mixedlm"
TESTS = (
    "each coefficient by a t test with Satterthwaite's degrees of freedom (as lmerTest); each fixed term by a "
    "likelihood-ratio test of ML fits with and without it (as lme4's drop1)"
)


class FormulaError(ValueError):
    """A formula that cannot be fitted on the frame: names the term and what exists."""


@dataclass(frozen=True, eq=False)
class Fit:
    """A fitted model. `formula` is the model fitted, exactly as asked; `factors` each factor's coding, reference and
    levels; `fixed` (`FIXED_COLUMNS`), `terms` (`TERM_COLUMNS`: one likelihood-ratio test per fixed term), `pairwise`
    (`PAIR_COLUMNS`), `variance` (`VARIANCE_COLUMNS`) and `correlations` (`CORRELATION_COLUMNS`) are empty when the
    fit did not converge; `groups` counts each grouping factor's levels; `checks` says what each convergence check
    found, `simpler` names simpler models to try when a check failed; `reml` is the REML criterion (lme4's
    REMLcrit). Two fits are equal when their `as_dict()` are."""

    formula: str
    factors: dict
    fixed: pd.DataFrame
    terms: pd.DataFrame
    pairwise: pd.DataFrame
    variance: pd.DataFrame
    correlations: pd.DataFrame
    groups: dict
    n: int
    reml: float
    converged: bool
    singular: bool
    checks: tuple[str, ...]
    simpler: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]
    correction: str
    seconds: float
    versions: dict = field(default_factory=dict)
    method: str = "REML"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fit) and self.as_dict() == other.as_dict()

    __hash__ = None  # mutable DataFrames inside: not hashable

    @property
    def coding(self) -> str:
        """Every factor's coding in words (empty when the fixed part has no factor)."""
        return "; ".join(_coding_words(name, spec) for name, spec in self.factors.items())

    def as_dict(self) -> dict:
        """Every field, JSON-serialisable: the DataFrames as lists of records, NaN as None."""
        return {
            "formula": self.formula,
            "factors": self.factors,
            "fixed": _records(self.fixed, FIXED_COLUMNS),
            "terms": _records(self.terms, TERM_COLUMNS),
            "pairwise": _records(self.pairwise, PAIR_COLUMNS),
            "variance": _records(self.variance, VARIANCE_COLUMNS),
            "correlations": _records(self.correlations, CORRELATION_COLUMNS),
            "groups": self.groups,
            "n": self.n,
            "reml": self.reml,
            "converged": self.converged,
            "singular": self.singular,
            "checks": list(self.checks),
            "simpler": [list(pair) for pair in self.simpler],
            "notes": list(self.notes),
            "correction": self.correction,
            "seconds": self.seconds,
            "versions": dict(self.versions),
            "method": self.method,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Fit:
        """The Fit `as_dict` wrote (after a trip through JSON too)."""
        return cls(
            formula=d["formula"],
            factors=d["factors"],
            fixed=_frame(d["fixed"], FIXED_COLUMNS, text=["term"]),
            terms=_frame(d["terms"], TERM_COLUMNS, text=["term", "note"]),
            pairwise=_frame(d["pairwise"], PAIR_COLUMNS, text=["factor", "contrast"]),
            variance=_frame(d["variance"], VARIANCE_COLUMNS, text=["group", "term"]),
            correlations=_frame(d["correlations"], CORRELATION_COLUMNS, text=["group", "term", "with"]),
            groups={k: int(v) for k, v in d["groups"].items()},
            n=int(d["n"]),
            reml=float(d["reml"]) if d["reml"] is not None else math.nan,
            converged=bool(d["converged"]),
            singular=bool(d["singular"]),
            checks=tuple(d["checks"]),
            simpler=tuple((a, b) for a, b in d["simpler"]),
            notes=tuple(d["notes"]),
            correction=d["correction"],
            seconds=float(d["seconds"]),
            versions=dict(d["versions"]),
            method=d.get("method", "REML"),
        )

    def summary(self, groups: dict[str, str] | None = None) -> str:
        """A methods section's paragraph in Markdown: the model as written, its coding, the counts (`groups`: what
        each grouping factor is, in words), the engine and its version, convergence, then the estimates with their
        tests — or, for a fit that did not converge, why, and the simpler models to choose from, with no number."""
        groups = groups or {}
        levels = "; ".join(
            f"{name}: {_count(n, 'level')}" + (f" ({groups[name]})" if groups.get(name) else "")
            for name, n in self.groups.items()
        )
        lines = [
            f"Linear mixed model `{self.formula}`, fitted by REML with {ENGINE} {self.versions.get(ENGINE, '')} "
            f"(Python; checked against R's lme4 and lmerTest) on {_count(self.n, 'answer')}; grouping factors: "
            f"{levels}." + (f" Coding: {self.coding}." if self.factors else ""),
        ]
        if not self.converged:
            lines += ["", "The fit did not converge, so it has no estimates to report:"]
            lines += [f"- {check}" for check in self.checks]
            if self.simpler:
                lines += ["", "Simpler models to choose from:"]
                lines += [f"- {name}: `{formula}`" for name, formula in self.simpler]
            return "\n".join(lines + [f"Note: {note}." for note in self.notes])
        state = "The fit converged (" + "; ".join(self.checks) + ")."
        if self.singular:
            state += " The fit is singular (as lme4's isSingular): a variance component is estimated at zero."
        lines += [state, "", f"Tests: {TESTS}.", "", "Fixed effects (estimate, SE, 95% CI, t test):"]
        for row in self.fixed.itertuples(index=False):
            lines.append(
                f"- {row.term}: {row.estimate:.4g} (SE {row.se:.3g}, 95% CI [{row.low:.4g}, {row.high:.4g}]), "
                f"t({row.df:.1f}) = {row.t:.2f}, p {p_text(row.p)}"
            )
        if len(self.terms):
            lines += ["", "Likelihood-ratio test of each term:"]
            for row in self.terms.itertuples(index=False):
                if row.note:
                    lines.append(f"- {row.term}: not reported ({row.note})")
                else:
                    lines.append(f"- {row.term}: χ²({row.df:g}) = {row.chi2:.2f}, p {p_text(row.p)}")
        if len(self.pairwise):
            lines += ["", f"Pairwise comparisons (Satterthwaite t tests, {_correction_words(self.correction)}):"]
            for row in self.pairwise.itertuples(index=False):
                lines.append(
                    f"- {row.contrast}: {row.estimate:.4g} (SE {row.se:.3g}), t({row.df:.1f}) = {row.t:.2f}, "
                    f"p {p_text(row.p_adjusted)}"
                )
        lines += ["", "Random effects (variance, SD):"]
        for row in self.variance.itertuples(index=False):
            lines.append(f"- {row.group}{' ' + row.term if row.term else ''}: {row.variance:.4g} (SD {row.sd:.4g})")
        for row in self.correlations.itertuples(index=False):
            lines.append(f"- {row.group}: correlation of {row.term} and {row[2]} {row.corr:.2f}")
        return "\n".join(lines + [""] + [f"Note: {note}." for note in self.notes]).rstrip()


# One BLAS thread: on 2 cores numpy's two OpenBLAS threads never sped a fit and under load made one 6x slower
# (benchmarks/bench_mixed_models.py --blas-threads, BENCHMARKS.md "Issue 62").
@threadpool_limits.wrap(limits=1, user_api="blas")
def fit(
    frame: pd.DataFrame,
    formula: str,
    *,
    coding: str = "treatment",
    reference: dict[str, str] | None = None,
    correction: str = "holm",
    iterations: int | None = None,
) -> Fit:
    """Fit `formula` (lme4's syntax) by REML on `frame`'s own columns, with every test the module docstring lists.
    `coding` applies to every factor in the fixed part; `reference` names a factor's reference level (treatment:
    the level the others are compared with, default the first in sorted order; sum: the level coded -1, default
    the last, as R's contr.sum; Helmert: ignored); `iterations` caps the optimiser's (None: mixedlm's 1,000, as
    lme4's maxfun). Rows missing a value the formula uses are left out with a note.

    Raises FormulaError naming the term and the frame's columns (or the levels) when the formula does not fit the
    frame; ValueError for a coding or correction that does not exist."""
    started = time.perf_counter()
    if correction not in CORRECTIONS:
        raise ValueError(f"correction: expected one of {', '.join(CORRECTIONS)}, got {correction!r}")
    parsed, data, factors, contrasts, notes, control, model = _reml(frame, formula, coding, reference, iterations)
    notes += _caveats(parsed, factors)
    names = _names(factors, model.matrices.fixed_names)
    groups = {str(k): int(v) for k, v in model.ngrps().items()}
    singular = bool(model.isSingular())
    ok, checks = converges(model, "REML fit")
    versions = {ENGINE: mixedlm.__version__, "numpy": np.__version__, "scipy": scipy.__version__}
    common = {
        "formula": text(parsed), "factors": factors, "groups": groups, "n": int(model.matrices.n_obs),
        "singular": singular, "notes": tuple(dict.fromkeys(notes)), "correction": correction, "versions": versions,
    }  # fmt: skip
    if not ok:
        empty = [pd.DataFrame(columns=c) for c in (FIXED_COLUMNS, TERM_COLUMNS, PAIR_COLUMNS)]
        return Fit(
            fixed=empty[0], terms=empty[1], pairwise=empty[2],
            variance=pd.DataFrame(columns=VARIANCE_COLUMNS), correlations=pd.DataFrame(columns=CORRELATION_COLUMNS),
            reml=float(model.REMLcrit()), converged=False, checks=tuple(checks), simpler=tuple(simpler(parsed)),
            seconds=round(time.perf_counter() - started, 3), **common,
        )  # fmt: skip
    satterthwaite = _Satterthwaite(model)
    fixed = _fixed(model, names, satterthwaite)
    terms, term_checks = _term_tests(parsed, data, contrasts, control)
    pairwise = _pairwise(parsed, factors, contrasts, model, satterthwaite, correction)
    variance, correlations = _random(model, factors)
    return Fit(
        fixed=fixed, terms=terms, pairwise=pairwise, variance=variance, correlations=correlations,
        reml=float(model.REMLcrit()), converged=True, checks=tuple(checks + term_checks), simpler=(),
        seconds=round(time.perf_counter() - started, 3), **common,
    )  # fmt: skip


@threadpool_limits.wrap(limits=1, user_api="blas")
def coefficient_tests(
    frame: pd.DataFrame, formula: str, *, coding: str = "treatment", reference: dict[str, str] | None = None
) -> pd.DataFrame | None:
    """What `fit` reports of the coefficients — each one's Satterthwaite t test (`FIXED_COLUMNS`) — on the same REML
    fit with the same convergence check, without the term tests and pairs; None when the fit did not converge. A
    power simulation analyses each simulated study by it."""
    _, _, factors, _, _, _, model = _reml(frame, formula, coding, reference, None)
    if not converges(model, "REML fit")[0]:
        return None
    return _fixed(model, _names(factors, model.matrices.fixed_names), _Satterthwaite(model))


def _reml(frame: pd.DataFrame, formula: str, coding: str, reference: dict[str, str] | None, iterations: int | None):
    """The formula parsed and checked, the rows coded, the optimiser's control and the REML fit."""
    if coding not in CODINGS:
        raise ValueError(f"coding: expected one of {', '.join(CODINGS)}, got {coding!r}")
    parsed = parsed_formula(formula, frame.columns)
    data, factors, contrasts, notes = _data(frame, parsed, coding, reference or {})
    control = mixedlm.lmerControl() if iterations is None else mixedlm.lmerControl(maxiter=iterations)
    model, caught = _lmer(formula, data, contrasts, reml=True, control=control)
    return parsed, data, factors, contrasts, notes + caught, control, model


def parsed_formula(formula: str, columns) -> Formula:
    """The formula parsed, every variable checked against `columns`; FormulaError naming the term otherwise."""
    try:
        parsed = parse_formula(formula)
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise FormulaError(f"formula {formula!r} is not lme4's syntax: {exc}") from None
    columns = [str(c) for c in columns]
    for term in _fixed_terms(parsed):
        missing = [v for v in _variables(term) if v not in columns]
        if missing:
            raise FormulaError(
                f"formula term {_term_text(term)!r}: no column {missing[0]!r}; the columns are {', '.join(columns)}"
            )
    if parsed.response not in columns:
        raise FormulaError(
            f"formula response {parsed.response!r}: no such column; the columns are {', '.join(columns)}"
        )
    for bar in parsed.random:
        for name in [*bar.grouping_factors, *(v for t in bar.expr for v in _variables(t))]:
            if name not in columns:
                raise FormulaError(
                    f"formula term {_bar_text(bar)!r}: no column {name!r}; the columns are {', '.join(columns)}"
                )
    if not parsed.random:
        raise FormulaError(f"formula {formula!r} has no random-effects term such as (1 | participant)")
    return parsed


def text(parsed: Formula) -> str:
    """The formula as lme4 prints it, one space around each operator: text to copy into R."""
    fixed = [_term_text(t) for t in _fixed_terms(parsed)]
    if not parsed.fixed.has_intercept:
        fixed.insert(0, "0")
    return f"{parsed.response} ~ " + " + ".join([*(fixed or ["1"]), *(f"({_bar_text(b)})" for b in parsed.random)])


def maximal(frame: pd.DataFrame, response: str, fixed: list[str], groups: list[str]) -> str:
    """The maximal random-effects structure the design justifies (Barr et al. 2013): for each grouping factor, a
    correlated slope for each fixed-effect variable that varies within that factor's levels (some level of the
    grouping factor meets two of its values), otherwise an intercept."""
    parts = []
    for group in groups:
        slopes = [x for x in fixed if (frame.groupby(group)[x].nunique() > 1).any()]
        parts.append(f"(1 + {' + '.join(slopes)} | {group})" if slopes else f"(1 | {group})")
    return f"{response} ~ {' + '.join(fixed) or '1'} + " + " + ".join(parts)


def simpler(parsed: Formula) -> list[tuple[str, str]]:
    """Named simpler models, each one step down from `parsed`: a correlated term's slopes made uncorrelated, a
    grouping factor's slopes left out, and intercepts only."""
    out = []
    bars = list(parsed.random)
    for j, bar in enumerate(bars):
        if bar.expr and bar.correlated:
            out.append((f"uncorrelated slopes by {_group_text(bar)}", _with(parsed, j, _bar(bar, correlated=False))))
        if bar.expr:
            out.append((f"no slopes by {_group_text(bar)}", _with(parsed, j, _bar(bar, expr=()))))
    if sum(bool(b.expr) for b in bars) > 1:
        only = Formula(parsed.response, parsed.fixed, tuple(_bar(b, expr=()) for b in bars))
        out.append(("intercepts only", text(only)))
    return out


def converges(model, what: str) -> tuple[bool, list[str]]:
    """lme4's checkConv on one fit: the optimiser's verdict, then `derivatives_check`; (converged, what was found in
    words)."""
    if not model.converged:
        return False, [f"{what}: the optimiser stopped without converging ({model.message or 'no message'})"]
    return derivatives_check(model, what)


def derivatives_check(model, what: str) -> tuple[bool, list[str]]:
    """The gradient and Hessian of the deviance over the relative covariance parameters not on the boundary
    (central differences with lme4's step): the Hessian positive definite, and the gradient scaled by it (lme4: the
    smaller of scaled and absolute) within GRADIENT_TOL."""
    theta = np.asarray(model.theta, float)
    lower = np.asarray(model.getME("lower"), float)
    free = np.flatnonzero(~(np.isfinite(lower) & (theta - lower < SINGULAR)))
    if not len(free):
        return True, [f"{what}: every variance on the boundary (singular), nothing left to check"]
    deviance = model.as_function()
    gradient, hessian = _derivatives(deviance, theta, free)
    eigen = np.linalg.eigvalsh(hessian)
    if eigen.min() <= 0:
        return False, [
            f"{what}: the Hessian of the deviance is not positive definite (smallest eigenvalue {eigen.min():.3g}): "
            "the optimum is a saddle or a ridge"
        ]
    scaled = np.linalg.solve(hessian, gradient)
    worst = float(np.max(np.minimum(np.abs(scaled), np.abs(gradient))))
    if worst > GRADIENT_TOL:
        return False, [f"{what}: max|grad| = {worst:.3g} (tolerance {GRADIENT_TOL})"]
    return True, [f"{what}: max|grad| {worst:.1e}, Hessian positive definite"]


def p_text(p: float) -> str:
    """A p value as a paper prints it: '< .001', else '= ' and three significant digits without the leading zero.

    >>> p_text(0.0004), p_text(0.04567), p_text(0.3219), p_text(0.09996), p_text(1.0)
    ('< .001', '= .0457', '= .322', '= .100', '= 1.00')
    """
    if p < 0.001:
        return "< .001"
    shown = f"{p:#.3g}"
    return "= " + (shown[1:] if shown.startswith("0.") else shown)


def _data(frame: pd.DataFrame, parsed: Formula, coding: str, reference: dict[str, str]):
    """The rows the formula uses, factors as ordered categoricals, grouping factors as text; each factor's spec
    {coding, reference, levels, names} and contrast matrix; notes."""
    used = sorted(parsed.all_variables, key=list(frame.columns).index)
    data = frame[used].dropna()
    notes = [f"{_count(len(frame) - len(data), 'row')} with a missing value left out"] if len(data) < len(frame) else []
    response = data[parsed.response]
    if not pd.api.types.is_numeric_dtype(response) or pd.api.types.is_bool_dtype(response):
        raise FormulaError(f"formula response {parsed.response!r} is not numeric ({response.dtype}): it must be")
    data = data.assign(**{parsed.response: response.astype(float)})
    for group in parsed.grouping_factors:
        data[group] = data[group].astype(str)
        if data[group].nunique() < MIN_LEVELS and not _nested_only(parsed, group):
            raise FormulaError(
                f"formula grouping factor {group!r} has {_count(data[group].nunique(), 'level')}: a variance needs "
                f"at least {MIN_LEVELS}"
            )
    unknown = set(reference) - set(parsed.fixed_variables | parsed.random_variables)
    if unknown:
        raise FormulaError(f"reference: {sorted(unknown)[0]!r} is not a variable of the formula")
    factors, contrasts = {}, {}
    for name in used:
        if name == parsed.response or name in parsed.grouping_factors and name not in parsed.fixed_variables:
            continue
        column = data[name]
        if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
            continue
        levels = sorted(column.astype(str).unique())
        if len(levels) < 2:
            raise FormulaError(f"formula variable {name!r} has 1 level ({levels[0]!r}): a factor needs at least 2")
        chosen = reference.get(name)
        if chosen is not None and str(chosen) not in levels:
            raise FormulaError(f"reference {chosen!r} is not a level of {name!r}: {', '.join(levels)}")
        spec, matrix = _coded(name, levels, coding, None if chosen is None else str(chosen))
        data[name] = pd.Categorical(column.astype(str), categories=spec["levels"])
        factors[name], contrasts[name] = spec, matrix
    return data, factors, contrasts, notes


def _coded(name: str, levels: list[str], coding: str, reference: str | None) -> tuple[dict, np.ndarray]:
    """A factor's spec and its contrast matrix (rows: `spec['levels']` in order; columns: `spec['names']`, R's
    column names `<factor><level>`)."""
    k = len(levels)
    if coding == "treatment":
        reference = reference or levels[0]
        order = [reference, *(lv for lv in levels if lv != reference)]
        matrix = np.vstack([np.zeros(k - 1), np.eye(k - 1)])
        named = order[1:]
    elif coding == "sum":
        reference = reference or levels[-1]
        order = [*(lv for lv in levels if lv != reference), reference]
        matrix = np.vstack([np.eye(k - 1), -np.ones(k - 1)])
        named = order[:-1]
    else:
        reference, order = None, levels
        matrix = np.zeros((k, k - 1))
        for j in range(k - 1):  # R's contr.helmert: column j compares level j+2 with the mean of the levels before
            matrix[: j + 1, j] = -1.0
            matrix[j + 1, j] = j + 1.0
        named = order[1:]
    spec = {"coding": coding, "reference": reference, "levels": order, "names": [f"{name}{lv}" for lv in named]}
    return spec, matrix


def _coding_words(name: str, spec: dict) -> str:
    reference = spec["reference"]
    return {
        "treatment": f"{name} in treatment coding, each level against {reference!r}",
        "sum": f"{name} in sum (deviation) coding, each level against the mean of the level means, {reference!r} "
        "coded -1 on every contrast",
        "helmert": f"{name} in Helmert coding, each level against the mean of the levels before it "
        f"({', '.join(spec['levels'])})",
    }[spec["coding"]]


def _caveats(parsed: Formula, factors: dict) -> list[str]:
    """What the output must say of this formula: `||` over a factor (where lme4 1.1-31 differs), and factors in an
    interaction, whose levels are not compared pairwise."""
    notes = []
    for bar in parsed.random:
        split = [v for t in bar.expr for v in _variables(t) if v in factors]
        if not bar.correlated and split:
            notes.append(
                f"({_bar_text(bar)}) gives each contrast of {', '.join(dict.fromkeys(split))} its own variance, "
                "uncorrelated (as afex's expand_re does); lme4 1.1-31, the tests' oracle, keeps a factor's dummies "
                "correlated under ||"
            )
    inside = {v for t in _fixed_terms(parsed) if isinstance(t, InteractionTerm) for v in _variables(t)} & set(factors)
    if inside:
        notes.append(
            f"no pairwise comparisons of {', '.join(sorted(inside))}: in an interaction, a level's mean depends on the "
            "other factor's level (compare within its levels: emmeans' by=)"
        )
    return notes


def _lmer(formula: str, data: pd.DataFrame, contrasts: dict, *, reml: bool, control):
    """mixedlm's fit, and its warnings as notes (its singular and convergence warnings are left out: `Fit.singular`
    and `Fit.checks` say them)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = mixedlm.lmer(formula, data, REML=reml, contrasts=contrasts or None, control=control)
        except (ValueError, np.linalg.LinAlgError) as exc:
            raise FormulaError(f"formula {formula!r} cannot be fitted on these rows: {exc}") from None
    notes = [str(w.message) for w in caught if not re.search("singular|converge", str(w.message), re.IGNORECASE)]
    return model, [f"{ENGINE}: {note}" for note in notes]


def _names(factors: dict, engine_names: list[str]) -> list[str]:
    """R's coefficient names for mixedlm's (`condition.2` → `conditionc`, interactions part by part)."""
    renamed = {f"{name}.{j + 1}": label for name, spec in factors.items() for j, label in enumerate(spec["names"])}
    return [":".join(renamed.get(part, part) for part in term.split(":")) for term in engine_names]


class _Satterthwaite:
    """Satterthwaite's degrees of freedom for any linear combination of the fixed effects, from mixedlm's
    derivatives of the coefficients' covariance by the covariance parameters and those parameters' covariance (the
    ingredients of its per-coefficient df, `mixedlm.inference.ddf`, a private function of the pinned version: the
    tests check every df against lmerTest); for a unit vector it equals mixedlm's own df."""

    def __init__(self, model) -> None:
        self.vcov = np.asarray(model.vcov(), float)
        self.gradients, self.covariance = _vcov_derivatives(model)
        self.residual_df = model.matrices.n_obs - model.matrices.n_fixed

    def __call__(self, contrast: np.ndarray) -> tuple[float, float]:
        """(variance, df) of contrast @ beta."""
        variance = float(contrast @ self.vcov @ contrast)
        if not len(self.gradients) or variance <= 0:
            return variance, float(self.residual_df)
        relative = np.array([contrast @ g @ contrast for g in self.gradients]) / variance
        uncertainty = max(float(relative @ self.covariance @ relative), 0.0)
        return variance, float(np.clip(2.0 / (uncertainty + 2.0 / self.residual_df), 1.0, self.residual_df))


def _fixed(model, names: list[str], satterthwaite: _Satterthwaite) -> pd.DataFrame:
    beta = np.asarray(model.beta, float)
    rows = []
    for j, term in enumerate(names):
        unit = np.zeros(len(beta))
        unit[j] = 1.0
        variance, df = satterthwaite(unit)
        se = math.sqrt(variance)
        half = stats.t.ppf(0.975, df) * se
        t = beta[j] / se
        rows.append((term, beta[j], se, df, t, float(2 * stats.t.sf(abs(t), df)), beta[j] - half, beta[j] + half))
    return pd.DataFrame(rows, columns=FIXED_COLUMNS)


def _term_tests(parsed: Formula, data: pd.DataFrame, contrasts: dict, control) -> tuple[pd.DataFrame, list[str]]:
    """One likelihood-ratio test per fixed term not inside a higher-order one (lme4's drop1 with ML refits), each
    refit checked; a term whose refit did not converge is reported as not tested, with why."""
    full, _ = _lmer(text(parsed), data, contrasts, reml=False, control=control)
    ok, checks = converges(full, "ML fit of the whole model")
    terms = _fixed_terms(parsed)
    rows = []
    for term in terms:
        inside = [
            t for t in terms if t is not term and set(_variables(term)) < set(_variables(t))
        ]  # marginality: a term inside an interaction stays
        if inside:
            continue
        name = _term_text(term)
        if not ok:
            rows.append((name, math.nan, math.nan, math.nan, "the ML fit of the whole model did not converge"))
            continue
        kept = tuple(t for t in parsed.fixed.terms if t is not term)
        reduced_formula = Formula(parsed.response, type(parsed.fixed)(kept, parsed.fixed.has_intercept), parsed.random)
        reduced, _ = _lmer(text(reduced_formula), data, contrasts, reml=False, control=control)
        fine, found = converges(reduced, f"ML fit without {name}")
        checks += found
        if not fine:
            rows.append((name, math.nan, math.nan, math.nan, f"the ML fit without {name} did not converge"))
            continue
        chi2 = max(2 * (full.logLik().value - reduced.logLik().value), 0.0)
        df = full.matrices.n_fixed - reduced.matrices.n_fixed
        rows.append((name, chi2, float(df), float(stats.chi2.sf(chi2, df)), ""))
    return pd.DataFrame(rows, columns=TERM_COLUMNS), checks


def _pairwise(
    parsed: Formula, factors: dict, contrasts: dict, model, satterthwaite: _Satterthwaite, correction: str
) -> pd.DataFrame:
    """Every pair of levels of each factor that is a main effect in no interaction: the difference of their
    estimated marginal means (the other terms cancel), its Satterthwaite t test, and the p values corrected within
    the factor's family of pairs."""
    interacting = {v for t in _fixed_terms(parsed) if isinstance(t, InteractionTerm) for v in _variables(t)}
    names = list(model.matrices.fixed_names)
    beta = np.asarray(model.beta, float)
    frames = []
    for factor, spec in factors.items():
        if factor in interacting or factor not in parsed.fixed_variables:
            continue
        matrix = contrasts[factor]  # rows: spec["levels"], in order
        columns = [names.index(f"{factor}.{j + 1}") for j in range(matrix.shape[1])]
        rows = []
        for a, b in combinations(range(len(spec["levels"])), 2):
            contrast = np.zeros(len(beta))
            contrast[columns] = matrix[a] - matrix[b]
            variance, df = satterthwaite(contrast)
            estimate, se = float(contrast @ beta), math.sqrt(variance)
            t = estimate / se
            label = f"{factor}{spec['levels'][a]} - {factor}{spec['levels'][b]}"
            rows.append((factor, label, estimate, se, df, t, float(2 * stats.t.sf(abs(t), df))))
        found = pd.DataFrame(rows, columns=PAIR_COLUMNS[:-1])
        adjusted = found["p"] if correction == "none" else multipletests(found["p"], method=correction)[1]
        frames.append(found.assign(p_adjusted=adjusted))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=PAIR_COLUMNS)


def _random(model, factors: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The variance components (residual last) and the correlations between a group's random effects."""
    renamed = {f"{name}.{j + 1}": label for name, spec in factors.items() for j, label in enumerate(spec["names"])}
    variances, correlations = [], []
    for group in model.VarCorr().groups.values():
        terms = [renamed.get(t, t) for t in group.term_names]
        cov = np.asarray(group.cov, float)
        for j, term in enumerate(terms):
            variances.append((group.name, term, cov[j, j], math.sqrt(max(cov[j, j], 0.0))))
        for a, b in combinations(range(len(terms)), 2):
            if cov[a, b] != 0 or group.corr is not None and len(terms) > 1 and np.asarray(group.corr)[a, b] != 0:
                sd = math.sqrt(max(cov[a, a] * cov[b, b], 0.0))
                correlations.append((group.name, terms[a], terms[b], cov[a, b] / sd if sd > 0 else math.nan))
    sigma = float(model.sigma)
    variances.append(("Residual", "", sigma**2, sigma))
    return (
        pd.DataFrame(variances, columns=VARIANCE_COLUMNS),
        pd.DataFrame(correlations, columns=CORRELATION_COLUMNS),
    )


def _derivatives(deviance, theta: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and Hessian of `deviance` at `theta` over the parameters `free`, by central differences (lme4's
    deriv12 with its step)."""
    k = len(free)
    base = deviance(theta)

    def at(steps: dict[int, float]) -> float:
        moved = theta.copy()
        for j, step in steps.items():
            moved[free[j]] += step
        return deviance(moved)

    gradient, hessian = np.zeros(k), np.zeros((k, k))
    for i in range(k):
        up, down = at({i: DELTA}), at({i: -DELTA})
        gradient[i] = (up - down) / (2 * DELTA)
        hessian[i, i] = (up - 2 * base + down) / DELTA**2
        for j in range(i):
            value = (
                at({i: DELTA, j: DELTA}) - at({i: DELTA, j: -DELTA}) - at({i: -DELTA, j: DELTA})
                + at({i: -DELTA, j: -DELTA})
            ) / (4 * DELTA**2)  # fmt: skip
            hessian[i, j] = hessian[j, i] = value
    return gradient, hessian


def _fixed_terms(parsed: Formula) -> list:
    return [t for t in parsed.fixed.terms if isinstance(t, VariableTerm | InteractionTerm)]


def _variables(term) -> tuple[str, ...]:
    if isinstance(term, VariableTerm):
        return (term.name,)
    if isinstance(term, InteractionTerm):
        return term.source_variables
    return (getattr(term, "name", str(term)),)


def _term_text(term) -> str:
    return ":".join(_variables(term))


def _group_text(bar: RandomTerm) -> str:
    return "/".join(bar.grouping_factors) if bar.is_nested else bar.grouping_factors[0]


def _bar_text(bar: RandomTerm) -> str:
    parts = (["1"] if bar.has_intercept else ["0"]) + [_term_text(t) for t in bar.expr]
    return f"{' + '.join(parts)} {'|' if bar.correlated or not bar.expr else '||'} {_group_text(bar)}"


def _bar(bar: RandomTerm, **changes) -> RandomTerm:
    intercept = bar.has_intercept or not changes.get("expr", bar.expr)  # no slopes left: the intercept stays
    fields = {"expr": bar.expr, "grouping": bar.grouping, "correlated": bar.correlated, "has_intercept": intercept}
    return RandomTerm(**(fields | {"cov_type": bar.cov_type} | changes))


def _with(parsed: Formula, j: int, bar: RandomTerm) -> str:
    bars = list(parsed.random)
    bars[j] = bar
    return text(Formula(parsed.response, parsed.fixed, tuple(bars)))


def _nested_only(parsed: Formula, group: str) -> bool:
    """Whether `group` is only the outer factor of nested terms (a/b: a's levels may be few)."""
    return all(
        bar.is_nested and bar.grouping_factors[0] == group for bar in parsed.random if group in bar.grouping_factors
    )


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _correction_words(correction: str) -> str:
    return {"holm": "p values corrected by Holm's method within each factor", "bonferroni": "p values corrected by "
            "Bonferroni's method within each factor", "none": "p values not corrected"}[correction]  # fmt: skip


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
