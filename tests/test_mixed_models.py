"""Linear mixed models (issue 55, item 2) checked against R's lme4 as an oracle: a simulated Latin-square study
with by-participant slopes (treatment and sum coding) and the projective-probability prior experiment (Degen &
Tonhauser 2021, Exp. 2b), fixed effects and SEs within 1e-3, variance components within 1e-2 (REML), lme4's
isSingular and anova(m0, m1) likelihood-ratio test; the simulated study's effects recovered without R; bad input
named; the JSON round trip."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from backend.datasets import projective_probability as pp
from backend.datasets.base import Source
from backend.metrics import mixed_models as mm
from tests.helpers.data import shared

TRUTH = {"intercept": 4.0, "b": 0.5, "c": -0.8}  # condition means minus the reference a's, on a 7-point-like scale
SDS = {"participant": 0.6, "slope_b": 0.4, "slope_c": 0.3, "item": 0.5, "residual": 1.0}
ORACLE = r"""
suppressMessages(library(lme4))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1], stringsAsFactors = FALSE)
formula <- as.formula(args[2]); reference <- args[3]; coding <- args[4]; out <- args[5]
levels <- sort(unique(d$condition)); others <- setdiff(levels, reference)
d$condition <- factor(d$condition, levels = c(others, reference))
if (coding == "treatment") {
  d$condition <- relevel(d$condition, reference); contrasts(d$condition) <- contr.treatment(length(levels))
} else contrasts(d$condition) <- contr.sum(length(levels))
colnames(contrasts(d$condition)) <- others
m <- lmer(formula, data = d, REML = TRUE)
m1 <- update(m, REML = FALSE); m0 <- update(m1, . ~ . - condition); a <- anova(m0, m1)
vc <- as.data.frame(VarCorr(m))
rows <- rbind(
  data.frame(kind = "fixed", group = "", term = names(fixef(m)), value = unname(fixef(m)),
             se = unname(sqrt(diag(as.matrix(vcov(m)))))),
  data.frame(kind = "variance", group = sub("\\.[0-9]+$", "", vc$grp),
             term = ifelse(is.na(vc$var1), "", vc$var1), value = vc$vcov, se = NA),
  data.frame(kind = c("singular", "chi2", "df", "p_lrt"), group = "", term = "",
             value = c(isSingular(m), a$Chisq[2], a$Df[2], a[["Pr(>Chisq)"]][2]), se = NA))
write.csv(rows, out, row.names = FALSE)
"""


def simulated(seed: int = 55) -> pd.DataFrame:
    """40 participants × 24 items, conditions a/b/c in a Latin square (each participant sees 8 items per
    condition, each item is seen in every condition), with participant intercepts and slopes and item intercepts."""
    rng = np.random.default_rng(seed)
    participants, items, levels = 40, 24, ["a", "b", "c"]
    p_int = rng.normal(0, SDS["participant"], participants)
    p_b, p_c = rng.normal(0, SDS["slope_b"], participants), rng.normal(0, SDS["slope_c"], participants)
    i_int = rng.normal(0, SDS["item"], items)
    rows = []
    for p in range(participants):
        for i in range(items):
            level = levels[(p + i) % 3]
            mean = TRUTH["intercept"] + p_int[p] + i_int[i]
            mean += (TRUTH["b"] + p_b[p]) * (level == "b") + (TRUTH["c"] + p_c[p]) * (level == "c")
            rows.append((f"p{p}", f"i{i}", level, mean + rng.normal(0, SDS["residual"])))
    return pd.DataFrame(rows, columns=["participant", "item", "condition", "value"])


def lme4_available() -> None:
    """Skip unless Rscript runs and loads lme4."""
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript is not installed: the lme4 oracle checks need R with lme4 (r-cran-lme4)")
    probe = subprocess.run(["Rscript", "-e", "library(lme4)"], capture_output=True, text=True, timeout=60)
    if probe.returncode:
        pytest.skip(f"R's lme4 does not load ({probe.stderr.strip()[-200:]}): the oracle checks need r-cran-lme4")


def oracle(frame: pd.DataFrame, fit: mm.Fit, coding: str, tmp_path: Path) -> pd.DataFrame:
    """lme4's fit of `fit.formula` on `frame` (with the contrast columns its slopes name, computed here from the
    coding): fixed effects and SEs, VarCorr, isSingular, anova(m0, m1)."""
    data = frame.copy()
    for level in sorted(data["condition"].unique()):
        if level != fit.reference:
            column = (data["condition"] == level).astype(float)
            if coding == "sum":
                column[data["condition"] == fit.reference] = -1.0
            data[f"c_{level}"] = column
    data.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "oracle.R").write_text(ORACLE)
    args = [str(tmp_path / "data.csv"), fit.formula, fit.reference, coding, str(tmp_path / "out.csv")]
    done = subprocess.run(["Rscript", str(tmp_path / "oracle.R"), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return pd.read_csv(tmp_path / "out.csv", keep_default_na=False, na_values=["NA"])


def assert_equals_lme4(fit: mm.Fit, lme4: pd.DataFrame) -> None:
    """Fixed effects and SEs within 1e-3, variance components within 1e-2, isSingular, the LRT."""
    fixed = lme4[lme4["kind"] == "fixed"].set_index("term")
    ours = fit.fixed.set_index("term")
    assert list(ours.index) == list(fixed.index)
    assert np.allclose(ours["estimate"], fixed["value"], rtol=0, atol=1e-3)
    assert np.allclose(ours["se"], fixed["se"].astype(float), rtol=0, atol=1e-3)
    variance = lme4[lme4["kind"] == "variance"].set_index(["group", "term"])["value"]
    mine = fit.variance.set_index(["group", "term"])["variance"]
    assert sorted(mine.index) == sorted(variance.index)
    assert np.allclose(mine.sort_index(), variance.sort_index(), rtol=0, atol=1e-2)
    other = lme4[~lme4["kind"].isin(["fixed", "variance"])].set_index("kind")["value"].astype(float)
    assert fit.singular == bool(other["singular"])
    lrt = fit.fixed.iloc[1]
    assert lrt["df"] == other["df"] and abs(lrt["chi2"] - other["chi2"]) < 1e-2 * max(1.0, other["chi2"])
    assert abs(lrt["p_lrt"] - other["p_lrt"]) < 1e-3
    assert fit.converged


@pytest.fixture(scope="module")
def study():
    frame = simulated()
    started = time.perf_counter()
    result = mm.fit(frame, reference="a")
    print(f"\nsimulated study, treatment coding with slopes: {time.perf_counter() - started:.2f} s")
    return frame, result


def test_simulated_study_recovers_the_known_effects(study):
    frame, fit = study
    assert (fit.n, fit.participants, fit.items) == (960, 40, 24) and fit.method == "REML" and fit.converged
    assert fit.formula == "value ~ condition + (1 + c_b + c_c || participant) + (1 | item)"
    assert fit.reference == "a" and "'a'" in fit.coding and mm.UNCORRELATED in fit.notes
    rows = fit.fixed.set_index("term")
    for term, truth in (("(Intercept)", TRUTH["intercept"]), ("conditionb", TRUTH["b"]), ("conditionc", TRUTH["c"])):
        assert abs(rows.loc[term, "estimate"] - truth) < 3 * rows.loc[term, "se"], term
    # the Wald test and CI are statsmodels' normal ones: recompute them from the estimate and SE
    assert np.allclose(rows["z"], rows["estimate"] / rows["se"])
    assert np.allclose(rows["high"] - rows["estimate"], 1.959964 * rows["se"], atol=1e-6)
    assert rows.loc["conditionc", "p_wald"] < 1e-4 and rows.loc["conditionc", "p_lrt"] < 1e-4
    assert rows.loc["conditionb", "p_lrt"] == rows.loc["conditionc", "p_lrt"] and rows.loc["conditionb", "df"] == 2
    sd = fit.variance.set_index(["group", "term"])["sd"]
    assert abs(sd["Residual", ""] - SDS["residual"]) < 0.1 and abs(sd["participant", "(Intercept)"] - 0.6) < 0.25
    assert not fit.singular
    text = fit.summary()
    assert fit.formula in text and "Wald z" in text and "likelihood-ratio" in text and "conditionc" in text


def test_simulated_study_equals_lme4(study, tmp_path):
    lme4_available()
    frame, fit = study
    assert_equals_lme4(fit, oracle(frame, fit, "treatment", tmp_path))


def test_sum_coding_equals_lme4(tmp_path):
    lme4_available()
    frame = simulated(seed=7)
    started = time.perf_counter()
    fit = mm.fit(frame, coding="sum")
    print(f"\nsimulated study, sum coding with slopes: {time.perf_counter() - started:.2f} s")
    assert fit.reference == "c" and "'c' left out" in fit.coding
    assert list(fit.fixed["term"]) == ["(Intercept)", "conditiona", "conditionb"]
    assert_equals_lme4(fit, oracle(frame, fit, "sum", tmp_path))


def test_slopes_are_left_out_with_a_note_where_the_design_does_not_support_them():
    frame = simulated()
    frame = frame[(frame["participant"] != "p0") | (frame["condition"] == "a")]
    fit = mm.fit(frame, reference="a")
    assert fit.formula == "value ~ condition + (1 | participant) + (1 | item)"
    assert any("no by-participant slopes: 1 participant(s) saw only one condition" in note for note in fit.notes)
    assert list(fit.variance["group"]) == ["participant", "item", "Residual"]


@pytest.fixture(scope="module")
def prior():
    """The prior experiment: split fact without the controls, certainty by prior, rater, and predicate/content."""
    root = shared("projective_probability")
    bundle = pp.load({"projective_probability": Source("projective_probability", root, "shared")})
    examples = {e["example_id"]: e for e in bundle.examples}
    rows = []
    for rating in bundle.ratings:
        example = examples[rating["example_id"]]
        extra = example["extra"]
        if example["split"] == "fact" and extra["predicate"] != "control":
            item = f"{extra['predicate']}/{extra['content']}"
            rows.append((rating["rater_id"], item, extra["prior"], rating["value"]))
    return pd.DataFrame(rows, columns=["participant", "item", "condition", "value"])


def test_prior_experiment_equals_lme4(prior, tmp_path):
    assert len(prior) == 5_320 and prior["participant"].nunique() == 266
    # intercepts only: with slopes statsmodels takes about 40 s here (three fits with the LRT), over the budget
    started = time.perf_counter()
    fit = mm.fit(prior, slopes=False, reference="high")
    print(f"\nprior experiment, intercepts only: {time.perf_counter() - started:.2f} s")
    assert fit.formula == "value ~ condition + (1 | participant) + (1 | item)"
    assert (fit.n, fit.participants, fit.items) == (5_320, 266, 400)
    rows = fit.fixed.set_index("term")
    assert rows.loc["conditionlow", "estimate"] < 0  # a low prior lowers certainty (Degen & Tonhauser 2021)
    lme4_available()
    assert_equals_lme4(fit, oracle(prior, fit, "treatment", tmp_path))


def test_bad_input_names_the_column():
    frame = simulated()
    with pytest.raises(ValueError, match="'rating' is missing"):
        mm.fit(frame, response="rating")
    with pytest.raises(ValueError, match="'condition' has 1 condition"):
        mm.fit(frame.assign(condition="a"))
    with pytest.raises(ValueError, match="'participant' has 2 participants"):
        mm.fit(frame[frame["participant"].isin(["p0", "p1"])])
    with pytest.raises(ValueError, match="'value' is not numeric"):
        mm.fit(frame.assign(value="high"))
    with pytest.raises(ValueError, match="reference 'z' is not a level of column 'condition'"):
        mm.fit(frame, reference="z")


def test_round_trip_through_json(study):
    _, fit = study
    back = mm.Fit.from_dict(json.loads(json.dumps(fit.as_dict(), allow_nan=False)))
    assert back == fit and back.as_dict() == fit.as_dict()
    pd.testing.assert_frame_equal(back.fixed, fit.fixed)
    pd.testing.assert_frame_equal(back.variance, fit.variance)
    assert back.summary() == fit.summary() and set(back.versions) >= {"statsmodels", "numpy"}
