"""Linear mixed models in lme4's formula syntax (issue 62) against R's lme4 and lmerTest as oracles, on an oracle
set fitted once per run in one R process: the prior experiment (Degen & Tonhauser 2021, Exp. 2b) with correlated
by-participant slopes and by-predicate and by-content intercepts; the predicate data (the projection experiment,
20 predicates) in treatment and in sum coding; a simulated Latin-square study with correlated slopes in treatment
and Helmert coding; uncorrelated slopes over a factor (against lme4 on the numeric contrast columns); one singular
fit. Each must match: fixed effects within 1e-4, SEs and variance components within 1e-3 relative, the REML
criterion within 1e-4, Satterthwaite df within 1% and p within 1e-3 (lmerTest), each term's likelihood-ratio test
(lme4's drop1 on the ML refit), pairwise comparisons (lmerTest's contest1D), isSingular. Then what R cannot tell:
convergence told truly, formulas named in errors, p values printed as papers print them, the JSON round trip."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import mixedlm
import numpy as np
import pandas as pd
import pytest

from backend.datasets import projective_probability as pp
from backend.datasets.base import Source
from backend.metrics import mixed_models as mm
from tests.helpers.data import shared

PRIOR = "value ~ prior + (1 + prior | participant) + (1 | predicate) + (1 | content)"
PREDICATE = "value ~ predicate + (1 | participant) + (1 | content)"
LATIN = "value ~ condition + (1 + condition | participant) + (1 | item)"
SEPARATE = "value ~ condition + (1 + condition || participant) + (1 | item)"
ORACLE = Path(__file__).parent / "oracles" / "lme4.R"


def simulated(seed: int = 62, participants: int = 48, items: int = 24, levels=("a", "b", "c", "d")) -> pd.DataFrame:
    """A Latin square: each participant sees every item once, conditions rotating by list; correlated
    by-participant intercepts and slopes, item intercepts, normal noise."""
    rng = np.random.default_rng(seed)
    k = len(levels)
    effects = np.array([0.0, 0.5, -0.8, 0.2])[:k]
    cov = np.array([[0.36, 0.1, -0.05, 0.02], [0.1, 0.16, 0.02, 0], [-0.05, 0.02, 0.09, 0.01], [0.02, 0, 0.01, 0.04]])
    person = rng.multivariate_normal(np.zeros(k), cov[:k, :k], participants)
    item = rng.normal(0, 0.5, items)
    rows = []
    for p in range(participants):
        for i in range(items):
            j = (p + i) % k
            mean = 4 + effects[j] + person[p, 0] + (person[p, j] if j else 0) + item[i]
            rows.append((f"p{p:02d}", f"i{i:02d}", levels[j], f"L{p % k}", mean + rng.normal(0, 1)))
    return pd.DataFrame(rows, columns=["participant", "item", "condition", "list", "value"])


def singular_data() -> pd.DataFrame:
    """Two conditions, participant intercepts only in truth: the slope variance's estimate hits the boundary."""
    frame = simulated(seed=5, participants=30, items=12, levels=("a", "b"))
    rng = np.random.default_rng(1)
    person = {p: rng.normal(0, 0.5) for p in frame["participant"].unique()}
    noise = rng.normal(0, 1, len(frame))
    return frame.assign(value=3 + (frame["condition"] == "b") * 0.4 + frame["participant"].map(person) + noise)


@pytest.fixture(scope="session")
def projective() -> pd.DataFrame:
    return projective_ratings(shared("projective_probability"))


def projective_ratings(folder: Path) -> pd.DataFrame:
    """The projective-probability ratings in `folder` with their facets: split, participant, predicate, content,
    prior (controls left out); benchmarks/bench_mixed_models.py fits the same rows."""
    bundle = pp.load({"projective_probability": Source("projective_probability", folder, "shared")})
    examples = {e["example_id"]: e for e in bundle.examples}
    rows = []
    for rating in bundle.ratings:
        example = examples[rating["example_id"]]
        extra = example["extra"]
        facets = (extra["predicate"], str(extra["content"]), extra.get("prior"))
        rows.append((example["split"], rating["rater_id"], *facets, rating["value"]))
    frame = pd.DataFrame(rows, columns=["split", "participant", "predicate", "content", "prior", "value"])
    return frame[frame["predicate"] != "control"]


def cases(projective: pd.DataFrame) -> dict[str, dict]:
    """The oracle set: name → frame, formula, coding, reference, and the formula R fits (the same but for `||`)."""
    prior = projective[projective["split"] == "fact"].drop(columns="split")
    predicate = projective[projective["split"] == "no-fact"].drop(columns=["split", "prior"])
    latin = simulated()
    numeric = latin.assign(**{f"c_{lv}": (latin["condition"] == lv).astype(float) for lv in "bcd"})
    return {
        "prior": {"frame": prior, "formula": PRIOR, "coding": "treatment", "reference": {"prior": "low"}},
        "predicate treatment": {"frame": predicate, "formula": PREDICATE, "coding": "treatment", "reference": {}},
        "predicate sum": {"frame": predicate, "formula": PREDICATE, "coding": "sum", "reference": {}},
        "latin treatment": {"frame": latin, "formula": LATIN, "coding": "treatment", "reference": {"condition": "a"}},
        "latin helmert": {"frame": latin, "formula": LATIN, "coding": "helmert", "reference": {}},
        "uncorrelated": {"frame": numeric, "formula": SEPARATE, "coding": "treatment", "reference": {},
                             "r_formula": "value ~ condition + (1 + c_b + c_c + c_d || participant) + (1 | item)"},
        "singular": {"frame": singular_data(), "formula": LATIN, "coding": "treatment", "reference": {}},
    }  # fmt: skip


def lme4_available() -> None:
    """Skip unless Rscript runs and loads lme4 and lmerTest."""
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript is not installed: the oracle checks need R with lme4 and lmerTest (r-cran-lmertest)")
    probe = subprocess.run(["Rscript", "-e", "library(lme4); library(lmerTest)"], capture_output=True, text=True)
    if probe.returncode:
        pytest.skip(f"R's lme4 or lmerTest does not load ({probe.stderr.strip()[-200:]}): see scripts/test.sh")


@pytest.fixture(scope="session")
def oracle_set(projective, tmp_path_factory):
    """Each case fitted here and by R (one Rscript process for all): {name: (Fit, R's rows)}."""
    lme4_available()
    folder = tmp_path_factory.mktemp("lme4")
    found, manifest = {}, []
    for j, (name, case) in enumerate(cases(projective).items()):
        fitted = mm.fit(case["frame"], case["formula"], coding=case["coding"], reference=case["reference"])
        found[name] = fitted
        case["frame"].to_csv(folder / f"{j}.csv", index=False)
        (factor,) = fitted.factors  # one factor per case
        spec = fitted.factors[factor]
        manifest.append({
            "case": name, "data": str(folder / f"{j}.csv"), "formula": case.get("r_formula", case["formula"]),
            "factor": factor, "coding": spec["coding"], "levels": "|".join(spec["levels"]),
            "names": "|".join(spec["names"]), "out": str(folder / f"{j}.out.csv"),
        })  # fmt: skip
    pd.DataFrame(manifest).to_csv(folder / "manifest.csv", index=False)
    done = subprocess.run(["Rscript", str(ORACLE), str(folder / "manifest.csv")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return {row["case"]: (found[row["case"]], pd.read_csv(row["out"], keep_default_na=False, na_values=["NA"]))
            for row in manifest}  # fmt: skip


def r_part(rows: pd.DataFrame, kind: str) -> pd.DataFrame:
    return rows[rows["kind"] == kind].reset_index(drop=True)


@pytest.mark.parametrize(
    "case",
    ["prior", "predicate treatment", "predicate sum", "latin treatment", "latin helmert", "uncorrelated", "singular"],
)
def test_every_fit_of_the_oracle_set_equals_lme4_and_lmertest(oracle_set, case):
    fit, r = oracle_set[case]
    assert fit.converged, fit.checks
    fixed = r_part(r, "fixed").set_index("name")
    ours = fit.fixed.set_index("term")
    assert list(ours.index) == list(fixed.index)
    assert np.allclose(ours["estimate"], fixed["value"], rtol=0, atol=1e-4)
    assert np.allclose(ours["se"], fixed["se"], rtol=1e-3, atol=0)
    assert np.allclose(ours["df"], fixed["df"], rtol=0.01, atol=0), (ours["df"], fixed["df"])
    assert np.allclose(ours["p"], fixed["p"], rtol=0, atol=1e-3)
    other = r_part(r, "scalar").set_index("name")["value"]
    assert abs(fit.reml - other["REMLcrit"]) < 1e-4
    assert fit.singular == bool(other["singular"])
    variance = r_part(r, "variance")
    if case == "uncorrelated":  # R names the numeric contrast columns; the values are the factor's contrasts'
        variance["name"] = variance["name"].str.replace(r"^c_", "condition", regex=True)
    r_variance = variance.set_index(["group", "name"])["value"].sort_index()
    mine = fit.variance.set_index(["group", "term"])["variance"].sort_index()
    assert list(mine.index) == list(r_variance.index)
    assert np.allclose(mine, r_variance, rtol=1e-3, atol=1e-7)
    lrt = r_part(r, "lrt").set_index("name")
    terms = fit.terms.set_index("term")
    assert list(terms.index) == list(lrt.index) and (terms["note"] == "").all()
    assert np.allclose(terms["chi2"], lrt["value"], rtol=1e-3) and (terms["df"] == lrt["df"]).all()
    assert np.allclose(terms["p"], lrt["p"], rtol=0, atol=1e-3)


def test_pairwise_comparisons_equal_lmertest_contrasts_with_holm_s_correction(oracle_set):
    fit, r = oracle_set["latin treatment"]
    pairs = r_part(r, "pair").set_index("name")
    ours = fit.pairwise.set_index("contrast")
    assert len(ours) == 6 and list(ours.index) == list(pairs.index)
    assert np.allclose(ours["estimate"], pairs["value"], atol=1e-4) and np.allclose(ours["se"], pairs["se"], rtol=1e-3)
    assert np.allclose(ours["df"], pairs["df"], rtol=0.01) and np.allclose(ours["p"], pairs["p"], atol=1e-3)
    holm = r_part(r, "holm").set_index("name")["value"]
    assert np.allclose(ours["p_adjusted"], holm, atol=1e-3)
    separate = oracle_set["uncorrelated"][0]  # where lme4 1.1-31 differs, the output says so
    assert any("gives each contrast of condition its own variance, uncorrelated" in n for n in separate.notes)
    # the comparisons do not depend on the coding: Helmert's pairs are treatment's
    helmert = oracle_set["latin helmert"][0].pairwise.set_index("contrast")
    assert np.allclose(helmert["estimate"], ours["estimate"], atol=1e-6)


def test_the_paper_s_model_of_the_prior_experiment(oracle_set):
    """Degen & Tonhauser's prior effect, as lme4 gives it, with one test per term printed once."""
    fit, _ = oracle_set["prior"]
    assert fit.formula == PRIOR and fit.groups == {"participant": 266, "predicate": 20, "content": 20}
    row = fit.fixed.set_index("term").loc["priorhigh"]
    assert round(row["estimate"], 4) == 0.1827 and round(row["se"], 4) == 0.0134
    text = fit.summary({"content": "the 20 contents"})
    assert text.count("χ²(1)") == 1 and "prior: χ²(1) = " in text and "t(264.8) = 13.67, p < .001" in text
    assert "content: 20 levels (the 20 contents)" in text and "nan" not in text.lower()
    assert "mixedlm " + fit.versions["mixedlm"] in text and "Satterthwaite" in text
    assert f"`{PRIOR}`" in text  # the formula as text to copy, not escaped


def test_a_fit_that_does_not_converge_reports_no_estimate_and_offers_simpler_models():
    """The optimiser stopped at 5 iterations (the real optimiser, capped as lme4's maxfun caps it): nothing is
    reported but why and what to try; and the derivative check finds the same fit's gradient far from zero."""
    frame = simulated(participants=16, items=8)
    fit = mm.fit(frame, LATIN, iterations=5)
    assert not fit.converged and "REML fit: the optimiser stopped without converging" in fit.checks[0]
    with pytest.warns(UserWarning, match="failed to converge"):
        stopped = mixedlm.lmer(LATIN, frame, control=mixedlm.lmerControl(maxiter=5))
    ok, found = mm.derivatives_check(stopped, "capped fit")
    assert not ok and "capped fit: max|grad| = " in found[0], found
    assert mm.derivatives_check(mixedlm.lmer(LATIN, frame), "full fit")[0]
    assert fit.fixed.empty and fit.terms.empty and fit.pairwise.empty and fit.variance.empty
    text = fit.summary()
    assert "did not converge" in text and "Estimate" not in text and "χ²" not in text
    names = dict(fit.simpler)
    assert names["uncorrelated slopes by participant"] == SEPARATE
    assert names["no slopes by participant"] == "value ~ condition + (1 | participant) + (1 | item)"
    back = mm.Fit.from_dict(json.loads(json.dumps(fit.as_dict(), allow_nan=False)))
    assert back == fit


def test_formula_errors_name_the_term_and_the_columns():
    frame = simulated(participants=6, items=4)
    with pytest.raises(mm.FormulaError, match=r"term 'cond': no column 'cond'; the columns are participant, item"):
        mm.fit(frame, "value ~ cond + (1 | participant)")
    with pytest.raises(mm.FormulaError, match=r"term '1 \| person': no column 'person'"):
        mm.fit(frame, "value ~ condition + (1 | person)")
    with pytest.raises(mm.FormulaError, match="not lme4's syntax"):
        mm.fit(frame, "value ~ condition + (1 | participant")
    with pytest.raises(mm.FormulaError, match="no random-effects term"):
        mm.fit(frame, "value ~ condition")
    with pytest.raises(mm.FormulaError, match="response 'condition' is not numeric"):
        mm.fit(frame, "condition ~ 1 + (1 | participant)")
    with pytest.raises(mm.FormulaError, match="reference 'z' is not a level of 'condition': a, b, c, d"):
        mm.fit(frame, LATIN, reference={"condition": "z"})
    with pytest.raises(mm.FormulaError, match="grouping factor 'list' has 2 levels"):
        mm.fit(frame[frame["list"].isin(["L0", "L1"])], "value ~ condition + (1 | list)")
    with pytest.raises(ValueError, match="coding: expected one of treatment, sum, helmert"):
        mm.fit(frame, LATIN, coding="poly")


def test_the_maximal_structure_the_design_justifies():
    latin = simulated(participants=8, items=8)
    assert mm.maximal(latin, "value", ["condition"], ["participant", "item"]) == (
        "value ~ condition + (1 + condition | participant) + (1 + condition | item)"
    )
    between = latin.assign(condition=latin["participant"].map(lambda p: "x" if p < "p04" else "y"))
    assert mm.maximal(between, "value", ["condition"], ["participant", "item"]) == (
        "value ~ condition + (1 | participant) + (1 + condition | item)"
    )


def test_p_values_print_as_a_paper_prints_them():
    assert [mm.p_text(p) for p in (1e-40, 0.000999, 0.001, 0.04567, 0.099996, 0.5)] == [
        "< .001", "< .001", "= .00100", "= .0457", "= .100", "= .500",
    ]  # fmt: skip


def test_round_trip_through_json(oracle_set):
    fit, _ = oracle_set["latin treatment"]
    back = mm.Fit.from_dict(json.loads(json.dumps(fit.as_dict(), allow_nan=False)))
    assert back == fit and back.summary() == fit.summary()
    for name in ("fixed", "terms", "pairwise", "variance", "correlations"):
        pd.testing.assert_frame_equal(getattr(back, name), getattr(fit, name), check_dtype=False)
