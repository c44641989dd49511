"""Power by simulation (backend.metrics.power, issue 55 item 3): simulated power against designs whose power follows
from the t distribution, the fast test against scipy's and statsmodels' own t tests, and the table's contract
(progress, validation, seeding)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.power import TTestPower

from backend.metrics import mixed_models, power
from backend.metrics.power import (
    Assumed,
    Plan,
    analyse,
    default_counts,
    paired_t_power,
    simulate,
    simulated_study,
)

ITEMS = 24
SD_SLOPE, SD_RESIDUAL = 0.1, 0.25


def assumed(effects: dict[str, float], sd_item: float = 0.3, scale: tuple[float, float] | None = None) -> Assumed:
    return Assumed(0.5, effects, 0.2, sd_item, SD_SLOPE, SD_RESIDUAL, scale)


def sd_difference(plan: Plan) -> float:
    """SD of a participant's condition-mean difference: slope plus the residual averaged over each condition's items."""
    per_condition = ITEMS // plan.lists
    return math.sqrt(SD_SLOPE**2 + 2 * SD_RESIDUAL**2 / per_condition)


def test_paired_t_power_is_statsmodels_ttest_power():
    for n, d in [(10, 0.3), (25, 0.6), (60, 0.2)]:
        expected = TTestPower().power(effect_size=d, nobs=n, alpha=0.05, alternative="two-sided")
        assert paired_t_power(n, d * 2.0, 2.0) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("assignment", ["crossed", "latin"])
def test_simulated_power_contains_the_exact_t_power(assignment):
    """Crossed: item effects cancel within each participant, so the paired t on differences is exact. Latin (large
    item SD): the same t with the list as a factor is exact, df = participants − lists; plain F1 would be
    conservative here and miss."""
    plan = Plan(("a", "b"), ITEMS, assignment)
    effect, counts = 0.08, [10, 20]
    table = simulate(plan, assumed({"b": effect}), counts, sims=3000, seed=3, test="f1")
    for row in table.itertuples():
        n, sd = row.participants, sd_difference(plan)
        if assignment == "crossed":
            exact = paired_t_power(n, effect, sd)
        else:
            df, ncp, critical = n - plan.lists, effect / sd * math.sqrt(n), stats.t.ppf(0.975, n - plan.lists)
            exact = stats.nct.sf(critical, df, ncp) + stats.nct.cdf(-critical, df, ncp)
        assert 0.25 < exact < 0.85
        assert row.low <= exact <= row.high, (n, exact, row.low, row.high)
        assert row.high - row.low < 0.04


def test_power_rises_with_participants_and_a_zero_effect_gives_alpha():
    plan = Plan(("a", "b", "c"), ITEMS, "latin")
    table = simulate(plan, assumed({"b": 0.08, "c": 0.0}), [7, 13, 25], sims=1500, seed=1, test="f1")
    rising = table[table["contrast"] == "b vs a"]
    assert rising["power"].is_monotonic_increasing
    assert rising["high"].iloc[0] < rising["low"].iloc[-1]
    null = table[table["contrast"] == "c vs a"]
    assert ((null["low"] <= 0.05) & (null["high"] >= 0.05)).all(), null
    assert list(table.columns) == power.COLUMNS and (table["failed"] == 0).all()
    assert (table["test"] == power.test_words("f1", "")).all() and (table["sims"] == 1500).all()


def test_simulate_applies_analyse_to_each_simulated_study():
    plan, model = Plan(("a", "b"), 12, "latin"), assumed({"b": 0.1}, scale=(0.0, 1.0))
    table = simulate(plan, model, [9], sims=40, seed=5, alpha=0.1, test="f1")
    rng = np.random.default_rng([5, 9])
    frames = [simulated_study(plan, model, 9, rng) for _ in range(40)]
    assert all(f["value"].between(0, 1).all() and len(f) == 9 * 12 for f in frames)
    assert table["significant"].iloc[0] == sum(analyse(f, "a")["b vs a"] < 0.1 for f in frames)


def test_analyse_crossed_is_scipys_paired_t():
    frame = simulated_study(
        Plan(("x", "y", "z"), 6, "crossed"), assumed({"y": 0.1, "z": -0.05}), 11, np.random.default_rng(2)
    )
    frame["participant"] = "p" + frame["participant"].astype(str)
    means = frame.groupby(["participant", "condition"])["value"].mean().unstack()
    result = analyse(frame.sample(frac=1, random_state=0), "x")
    assert list(result) == ["y vs x", "z vs x"]
    for name in ("y", "z"):
        assert result[f"{name} vs x"] == pytest.approx(stats.ttest_rel(means[name], means["x"]).pvalue, rel=1e-9)


@pytest.mark.parametrize("missing", [0, 3])
def test_analyse_latin_is_the_list_factor_ols(missing):
    """The list is read from which condition each item came in, or from a list column (needed once answers are
    missing); the test is OLS d ~ C(list, Sum)'s intercept."""
    plan = Plan(("a", "b", "c"), 9, "latin")
    frame = simulated_study(plan, assumed({"b": 0.1, "c": 0.2}), 14, np.random.default_rng(4))  # lists of 5, 5, 4
    lists = frame[frame["item"] == 0].set_index("participant")["condition"].rename("list")
    if missing:
        frame = frame.drop(index=[5, 40, 77]).join(lists, on="participant")
    means = frame.groupby(["participant", "condition"])["value"].mean().unstack()
    result = analyse(frame, "a")
    for name in ("b", "c"):
        data = pd.DataFrame({"d": means[name] - means["a"]}).join(lists)
        expected = smf.ols("d ~ C(list, Sum)", data).fit().pvalues["Intercept"]
        assert result[f"{name} vs a"] == pytest.approx(expected, rel=1e-9)


def test_progress_is_called_after_every_simulated_study():
    calls = []
    simulate(
        Plan(("a", "b"), 4, "crossed"), assumed({"b": 0.1}), [3, 5, 8], sims=7, progress=lambda *a: calls.append(a),
        test="f1",
    )  # fmt: skip
    assert calls == [(done, 21) for done in range(1, 22)]


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: Plan(("a",), 4, "latin"), "conditions"),
        (lambda: Plan(("a", "a"), 4, "latin"), "conditions"),
        (lambda: Plan(("a", "b"), 0, "crossed"), "items"),
        (lambda: Plan(("a", "b", "c"), 10, "latin"), "items"),
        (lambda: Plan(("a", "b"), 4, "blocked"), "assignment"),
        (lambda: Assumed(0.5, {"b": 0.1}, -1, 0, 0, 1), "sd_participant"),
        (lambda: Assumed(0.5, {"b": 0.1}, 1, 0, 0, math.nan), "sd_residual"),
        (lambda: Assumed(0.5, {"b": 0.1}, 1, 0, 0, 1, (1, 0)), "scale"),
        (lambda: simulate(Plan(("a", "b"), 4, "latin"), assumed({"c": 0.1}), [10]), "effects"),
        (lambda: simulate(Plan(("a", "b"), 4, "latin"), assumed({"b": 0.1}), [2]), "counts"),
        (lambda: simulate(Plan(("a", "b"), 4, "latin"), assumed({"b": 0.1}), [10], sims=0), "sims"),
        (lambda: simulate(Plan(("a", "b"), 4, "latin"), assumed({"b": 0.1}), [10], alpha=1.5), "alpha"),
    ],
)
def test_bad_plans_name_the_field(build, field):
    with pytest.raises(ValueError, match=f"^{field}:"):
        build()


def test_same_seed_same_table():
    plan, model = Plan(("a", "b"), 8, "latin"), assumed({"b": 0.1})
    first = simulate(plan, model, [6, 12], sims=50, seed=7, test="f1")
    pd.testing.assert_frame_equal(first, simulate(plan, model, [6, 12], sims=50, seed=7, test="f1"))
    assert not first.equals(simulate(plan, model, [6, 12], sims=50, seed=8, test="f1"))
    pd.testing.assert_frame_equal(
        first.iloc[1:].reset_index(drop=True), simulate(plan, model, [12], sims=50, seed=7, test="f1")
    )


def test_a_latin_square_needs_a_multiple_of_the_conditions():
    """With 4 items in 5 conditions (the shipped stop-study) each list leaves a condition out and the item effects
    do not cancel: a zero effect came out significant in 42% of 300 simulated studies of 80 participants, so such a
    plan is refused, saying why and what to do."""
    with pytest.raises(ValueError, match="^items: a Latin square needs a multiple of 5 .* with a multiple of 5 items"):
        Plan(("a", "b", "c", "d", "e"), 4, "latin")


def test_the_analysis_s_own_model_gives_the_power_the_fast_test_gives_on_the_same_studies():
    """Issue 62, item 5: each simulated study analysed by the mixed model and its Satterthwaite t test (the lab's
    analysis) — power inside the fast test's CI on the same simulated studies (the same seed draws the same
    studies), and a zero effect significant about alpha of the time; no fit failed here."""
    plan = Plan(("a", "b", "c"), 12, "latin")
    model = assumed({"b": 0.12, "c": 0.0})
    fitted = simulate(plan, model, [18], sims=80, seed=4, test="model").set_index("contrast")
    fast = simulate(plan, model, [18], sims=80, seed=4, test="f1").set_index("contrast")
    assert (fitted["failed"] == 0).all() and fitted["test"].str.contains("value ~ condition").all()
    assert fast.loc["b vs a", "low"] <= fitted.loc["b vs a", "power"] <= fast.loc["b vs a", "high"]
    assert fitted.loc["b vs a", "power"] > 0.3 and fitted.loc["c vs a", "power"] < 0.12


def test_the_model_test_takes_the_analysis_s_formula_and_refuses_one_without_the_condition():
    plan = Plan(("a", "b", "c"), 6, "latin")
    table = simulate(plan, assumed({"b": 0.1, "c": 0.0}), [9], sims=3, test="model",
                     formula="value ~ condition + (1 | participant) + (1 | item) + (1 | list)")  # fmt: skip
    assert table["test"].iloc[0].startswith("the analysis's mixed model (value ~ condition + (1 | participant)")
    with pytest.raises(mixed_models.FormulaError, match="the condition must be a fixed effect"):
        simulate(plan, assumed({"b": 0.1, "c": 0.0}), [9], sims=3, formula="value ~ 1 + (1 | participant)")


def test_the_default_counts_always_run():
    """The page's defaults: multiples of the lists, above them; a 20-condition Latin square starts at 40, not 20
    (which the fast test refuses: it needs a participant more than the lists)."""
    assert default_counts(1) == (20, 40, 60, 80, 100) and default_counts(5) == (20, 40, 60, 80, 100)
    assert default_counts(3) == (21, 42, 63, 84, 105) and default_counts(20) == (40, 60, 80, 100, 120)
    conditions = tuple(f"c{j:02d}" for j in range(20))
    plan = Plan(conditions, 20, "latin")
    effects = dict.fromkeys(conditions[1:], 0.1)
    table = simulate(
        plan, Assumed(0.5, effects, 0.1, 0.1, 0.0, 0.2), list(default_counts(plan.lists)), sims=2, test="f1"
    )
    assert sorted(set(table["participants"])) == [40, 60, 80, 100, 120]
