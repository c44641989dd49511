"""Power by simulation for a judgement study, as R's simr does it: from a design (`Plan`) and assumed effects and
variance components (`Assumed`), simulate the study many times at each participant count, analyse each simulated
study, and report the share of studies in which each contrast is significant, with its exact (Clopper–Pearson)
binomial 95% interval.

The generating model: value = intercept + effect[condition] + participant + participant's slope[condition] + item +
residual, every random part normal and independent (slopes uncorrelated with the intercepts and each other, as
`(1 + condition || participant)`), answers clipped to the scale's range when one is given.

Each simulated study is analysed by one of `TESTS`:
- "model" (the default): the analysis's own model and test — `metrics.mixed_models.coefficient_tests`, the REML fit
  of the formula the analysis takes (default `analysis_formula`: the generating model's structure) with its
  convergence checked as every fit is, and each condition's coefficient by its Satterthwaite t test, exactly what
  the lab reports for a real study. A simulated study whose fit did not converge is counted in `failed` and left out
  of the share (simr does the same), so the share is of the studies the analysis could report.
- "f1", the fast approximation (milliseconds a study): a by-participant paired t test (F1) on each participant's
  condition-mean difference, with the list as a between-participant factor (Pollatsek & Well 1995) when items
  rotate through conditions. In a Latin square every list's item set sits in each condition once, so the list
  means' unweighted average is free of item effects and the pooled within-list variance carries none of them: the
  test is exact t for this model. benchmarks/bench_power.py compares its power with the model's on the same
  simulated studies (BENCHMARKS.md). It is a few numpy sums because it runs once per simulated study.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from backend.metrics import mixed_models

ASSIGNMENTS = ("latin", "crossed")
TEST = (
    "by-participant paired t test (F1) on each participant's condition-mean difference from the reference, "
    "with the list as a between-participant factor (Pollatsek & Well 1995)"
)
TESTS = {
    "model": "the analysis's mixed model ({formula}), each contrast by its t test with Satterthwaite's degrees of "
    "freedom, as the lab reports a real study; studies whose fit did not converge left out and counted",
    "f1": "the fast approximation: a " + TEST,
}
COLUMNS = ["participants", "contrast", "sims", "failed", "significant", "power", "low", "high", "test"]
FEWEST = 20  # participant counts start near here, at a multiple of the lists


@dataclass(frozen=True)
class Plan:
    """The part of a study's design that matters for power: its conditions (the first is the reference), how many
    target items, and how items meet conditions: "latin" (each participant sees every item once, in one condition;
    lists rotate the conditions) or "crossed" (every participant sees every item in every condition)."""

    conditions: tuple[str, ...]
    items: int
    assignment: str

    def __post_init__(self) -> None:
        names = tuple(self.conditions)
        if len(names) < 2 or len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"conditions: need at least 2 distinct non-empty names, got {self.conditions!r}")
        if self.assignment not in ASSIGNMENTS:
            raise ValueError(f"assignment: {self.assignment!r} is not one of {', '.join(ASSIGNMENTS)}")
        if isinstance(self.items, bool) or not isinstance(self.items, int) or self.items < 1:
            raise ValueError(f"items: need a positive whole number, got {self.items!r}")
        if self.assignment == "latin" and self.items % len(names):
            raise ValueError(
                f"items: a Latin square needs a multiple of {len(names)} (the conditions), got {self.items}: otherwise "
                "some lists leave conditions out and the item effects no longer cancel (the test's type I error then "
                f"runs far above alpha); simulate the design with a multiple of {len(names)} items"
            )

    @property
    def lists(self) -> int:
        """How many lists participants rotate through: one per condition in a Latin square, one when crossed."""
        return len(self.conditions) if self.assignment == "latin" else 1


@dataclass(frozen=True)
class Assumed:
    """Assumed effects and variance components: the reference condition's mean answer, each other condition's
    difference from it, the SDs of participants' and items' intercepts, of each participant's deviation from each
    condition's effect (0: none) and of the residual, and the scale's (low, high) to clip answers to, if any."""

    intercept: float
    effects: dict[str, float]
    sd_participant: float
    sd_item: float
    sd_slope: float
    sd_residual: float
    scale: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        for field in ("sd_participant", "sd_item", "sd_slope", "sd_residual"):
            value = getattr(self, field)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{field}: need a finite SD of at least 0, got {value!r}")
        if not all(math.isfinite(v) for v in [self.intercept, *self.effects.values()]):
            raise ValueError(f"effects: need finite numbers, got intercept {self.intercept!r} and {self.effects!r}")
        if self.scale is not None and not (len(self.scale) == 2 and self.scale[0] < self.scale[1]):
            raise ValueError(f"scale: need (low, high) with low < high, got {self.scale!r}")


def describe(assumed: Assumed) -> str:
    """The assumptions in words: 'intercept 0.5; effects b +0.05, c +0.1; SDs: participant 0.1, item 0.1, slope
    0.05, residual 0.25; answers kept within 0 to 1'."""
    effects = ", ".join(f"{name} {value:+.3g}" for name, value in assumed.effects.items())
    sds = ", ".join(
        f"{name} {getattr(assumed, 'sd_' + name):.3g}" for name in ("participant", "item", "slope", "residual")
    )
    clipped = f"; answers kept within {assumed.scale[0]:g} to {assumed.scale[1]:g}" if assumed.scale else ""
    return f"intercept {assumed.intercept:.3g}; effects {effects}; SDs: {sds}{clipped}"


def default_counts(lists: int) -> tuple[int, ...]:
    """Five participant counts the simulation takes for a design of `lists` lists: multiples of the lists (each list
    equally filled), the first at least FEWEST and above the lists (the fast test needs a participant more)."""
    step = lists * -(-FEWEST // lists)
    first = step if step > lists else 2 * step
    return tuple(first + step * j for j in range(5))


def analysis_formula(assumed: Assumed) -> str:
    """The model with the generating model's random-effects structure: by-participant slopes (uncorrelated) when
    the assumed slopes vary, participant and item intercepts."""
    slopes = "1 + condition || participant" if assumed.sd_slope > 0 else "1 | participant"
    return f"value ~ condition + ({slopes}) + (1 | item)"


def test_words(test: str, formula: str) -> str:
    """What each simulated study was analysed by, in words."""
    return TESTS[test].format(formula=formula)


def _design(plan: Plan, participants: int) -> tuple[np.ndarray, ...]:
    """One row per answer: participant, item, condition (index into plan.conditions) and list, as int arrays."""
    k = len(plan.conditions)
    person = np.arange(participants)
    if plan.assignment == "crossed":
        p, i, c = (a.ravel() for a in np.meshgrid(person, np.arange(plan.items), np.arange(k), indexing="ij"))
        return p, i, c, np.zeros_like(p)
    p, i = (a.ravel() for a in np.meshgrid(person, np.arange(plan.items), indexing="ij"))
    lists = p % k
    return p, i, (i + lists) % k, lists


def _check(plan: Plan, assumed: Assumed, counts: list[int], sims: int, alpha: float) -> None:
    expected = set(plan.conditions[1:])
    if set(assumed.effects) != expected:
        raise ValueError(
            f"effects: need one per non-reference condition {sorted(expected)}, got {sorted(assumed.effects)}"
        )
    fewest = plan.lists + 1  # at least one participant per list and one degree of freedom within lists
    if not counts or any(isinstance(n, bool) or not isinstance(n, int) or n < fewest for n in counts):
        raise ValueError(f"counts: need whole numbers of at least {fewest} participants, got {counts!r}")
    if isinstance(sims, bool) or not isinstance(sims, int) or sims < 1:
        raise ValueError(f"sims: need a positive whole number, got {sims!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha: need a level between 0 and 1, got {alpha!r}")


def _draw(plan: Plan, assumed: Assumed, design: tuple[np.ndarray, ...], rng: np.random.Generator) -> np.ndarray:
    """One simulated study's answers for the rows of `design`, from the generating model in the module docstring."""
    p, i, c, _ = design
    n, k = int(p.max()) + 1, len(plan.conditions)
    effect = np.array([0.0, *(assumed.effects[name] for name in plan.conditions[1:])])
    slopes = np.hstack([np.zeros((n, 1)), rng.normal(0, assumed.sd_slope, (n, k - 1))])
    value = (
        assumed.intercept
        + effect[c]
        + rng.normal(0, assumed.sd_participant, n)[p]
        + slopes[p, c]
        + rng.normal(0, assumed.sd_item, plan.items)[i]
        + rng.normal(0, assumed.sd_residual, len(p))
    )
    return value if assumed.scale is None else np.clip(value, *assumed.scale)


def simulated_study(plan: Plan, assumed: Assumed, participants: int, rng: np.random.Generator) -> pd.DataFrame:
    """One simulated study: columns participant, item, condition (names), value — the frame `analyse` takes."""
    design = _design(plan, participants)
    value = _draw(plan, assumed, design, rng)
    names = np.asarray(plan.conditions, dtype=object)
    return pd.DataFrame({"participant": design[0], "item": design[1], "condition": names[design[2]], "value": value})


def _p_values(p: np.ndarray, c: np.ndarray, lists: np.ndarray, value: np.ndarray, k: int) -> np.ndarray:
    """Two-sided p of `TEST` for each condition 1..k-1 against condition 0 (NaN where it cannot be computed).

    p, c, lists: 0-based codes per answer (a participant in one list); participants who lack either condition
    are left out of that contrast."""
    n = int(p.max()) + 1
    sums, count = np.zeros((n, k)), np.zeros((n, k))
    np.add.at(sums, (p, c), value)
    np.add.at(count, (p, c), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / count
    list_of = np.zeros(n, dtype=int)
    list_of[p] = lists
    return np.array([_list_t(means[:, j] - means[:, 0], list_of) for j in range(1, k)])


def _list_t(difference: np.ndarray, list_of: np.ndarray) -> float:
    """p of the t test that the unweighted mean of the lists' mean differences is 0, with the pooled
    within-list variance (df = participants − lists): `d ~ C(list, Sum)`'s intercept t test."""
    keep = np.isfinite(difference)
    d, g = difference[keep], np.unique(list_of[keep], return_inverse=True)[1]
    size = np.bincount(g)
    df = len(d) - len(size)
    if df < 1:
        return math.nan
    mean = np.bincount(g, d) / size
    variance = float(np.sum((d - mean[g]) ** 2)) / df
    se = math.sqrt(variance * np.sum(1 / size)) / len(size)
    if se == 0:
        return math.nan
    return float(2 * stats.t.sf(abs(mean.mean()) / se, df))


def analyse(frame: pd.DataFrame, reference: str) -> dict[str, float]:
    """`TEST` on one study (simulated or real): {"b vs a": two-sided p} for each condition b other than the
    reference a. frame: participant, item, condition, value, and optionally list (each participant's list).
    Without a list column a participant's list is the pattern of which condition each item came in (one list for
    a crossed design); with missing answers that pattern splits lists, so pass the study's lists then."""
    conditions = [reference, *sorted(set(frame["condition"]) - {reference})]
    if reference not in set(frame["condition"]) or len(conditions) < 2:
        raise ValueError(f"reference: {reference!r} and at least one other condition must be in the frame")
    c = frame["condition"].map({name: j for j, name in enumerate(conditions)}).to_numpy()
    p = pd.factorize(frame["participant"], sort=True)[0]
    lists = pd.factorize(frame["list"] if "list" in frame else _patterns(frame.assign(condition=c)))[0]
    result = _p_values(p, c, lists, frame["value"].to_numpy(dtype=float), len(conditions))
    return {f"{name} vs {reference}": float(q) for name, q in zip(conditions[1:], result, strict=True)}


def _patterns(frame: pd.DataFrame) -> pd.Series:
    """Per answer, its participant's sorted (item, condition) pairs: the list as the answers show it."""
    pairs = frame.groupby("participant")[["item", "condition"]].apply(
        lambda rows: tuple(sorted(zip(rows["item"], rows["condition"], strict=True)))
    )
    return frame["participant"].map(pairs)


def simulate(
    plan: Plan,
    assumed: Assumed,
    counts: list[int],
    sims: int = 200,
    seed: int = 0,
    alpha: float = 0.05,
    progress: Callable[[int, int], None] | None = None,
    test: str = "model",
    formula: str | None = None,
) -> pd.DataFrame:
    """Power per participant count and contrast: columns participants, contrast ("b vs a"), sims, failed (studies
    whose model did not converge, left out), significant (studies with p < alpha), power (significant / (sims -
    failed)), low, high (Clopper–Pearson 95%), test (in words). Each simulated study is analysed by `test` (`TESTS`;
    "model": by `formula` over the columns participant, item, condition, list, value, default
    `analysis_formula`). Each count draws from its own stream seeded by (seed, count), so a count's rows do not depend
    on which other counts were asked for, and both tests see the same studies. progress(done, total) is called
    after each simulated study."""
    _check(plan, assumed, counts, sims, alpha)
    if test not in TESTS:
        raise ValueError(f"test: expected one of {', '.join(TESTS)}, got {test!r}")
    formula = formula or analysis_formula(assumed)
    if test == "model":
        parsed = mixed_models.parsed_formula(formula, ["participant", "item", "condition", "list", "value"])
        if "condition" not in parsed.fixed_variables:
            raise mixed_models.FormulaError(f"formula {formula!r}: the condition must be a fixed effect, to be tested")
    k, total, done, rows = len(plan.conditions), sims * len(counts), 0, []
    contrasts = [f"{name} vs {plan.conditions[0]}" for name in plan.conditions[1:]]
    words = test_words(test, formula)
    for n in counts:
        design, rng = _design(plan, n), np.random.default_rng([seed, n])
        significant, failed = np.zeros(k - 1, dtype=int), 0
        for _ in range(sims):
            value = _draw(plan, assumed, design, rng)
            if test == "f1":
                found = _p_values(design[0], design[2], design[3], value, k)
            else:
                found = _model_p_values(plan, design, value, formula)
                failed += found is None
            if found is not None:
                significant += found < alpha
            done += 1
            if progress is not None:
                progress(done, total)
        for contrast, hits in zip(contrasts, significant.tolist(), strict=True):
            kept = sims - failed
            low, high = proportion_confint(hits, kept, alpha=0.05, method="beta") if kept else (math.nan, math.nan)
            power = hits / kept if kept else math.nan
            rows.append([n, contrast, sims, failed, hits, power, float(low), float(high), words])
    return pd.DataFrame(rows, columns=COLUMNS)


def _model_p_values(plan: Plan, design: tuple[np.ndarray, ...], value: np.ndarray, formula: str) -> np.ndarray | None:
    """p of each condition's coefficient (against the reference) by the analysis's model; None when its fit did not
    converge."""
    p, i, c, lists = design
    names = np.asarray(plan.conditions, dtype=object)
    frame = pd.DataFrame({
        "participant": np.char.add("p", p.astype(str)), "item": np.char.add("i", i.astype(str)),
        "condition": names[c], "list": np.char.add("L", lists.astype(str)), "value": value,
    })  # fmt: skip
    fixed = mixed_models.coefficient_tests(frame, formula, reference={"condition": plan.conditions[0]})
    if fixed is None:
        return None
    found = fixed.set_index("term")["p"]
    return np.array([found[f"condition{name}"] for name in plan.conditions[1:]])


def paired_t_power(n: int, effect: float, sd_difference: float, alpha: float = 0.05) -> float:
    """Exact power of a two-sided paired t test of n pairs whose differences have mean `effect` and SD
    `sd_difference`: P(|T| > t_crit) for T noncentral t with n − 1 df and noncentrality effect/sd·√n
    (Cohen 1988, ch. 2; statsmodels' TTestPower gives the same).

    >>> round(paired_t_power(20, 0.5, 1.0), 4)
    0.5645
    """
    df, ncp = n - 1, effect / sd_difference * math.sqrt(n)
    critical = stats.t.ppf(1 - alpha / 2, df)
    return float(stats.nct.sf(critical, df, ncp) + stats.nct.cdf(-critical, df, ncp))
