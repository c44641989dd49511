"""Power by the fast test (backend.metrics.power.TEST) against the full mixed model on the same simulated studies,
with the other candidate fast tests beside them: plain F1 (paired t on participants' condition-mean differences,
lists ignored) and min F′ (Clark 1973, from that F1 and F2 over items). The full model is statsmodels' MixedLM
`value ~ condition + (1 + slope || participant) + (1 | item)` (one group, variance components, REML) with its
Wald z p-value, optionally (--lrt) also the likelihood-ratio test from two ML fits. The design is a realistic
slider study: 24 items, 2 conditions in a Latin square, item SD equal to participant SD, some slope variance,
answers clipped to 0–1; a zero effect at the smallest count shows each test's type I error. The studies are the
ones `simulate` draws (same seed), so the fast test's column equals its table. Full fits run on every core.

    .venv/bin/python -m benchmarks.bench_power [--sims 100] [--counts 16 32 48] [--lrt]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from backend.metrics import power

PLAN = power.Plan(("a", "b"), 24, "latin")
EFFECT = 0.06
ALPHA = 0.05


def assumed(effect: float) -> power.Assumed:
    return power.Assumed(0.5, {"b": effect}, 0.15, 0.15, 0.1, 0.25, (0.0, 1.0))


def plain_f1_and_min_f(frame: pd.DataFrame) -> tuple[float, float]:
    """p of F1 (paired t over participants, lists ignored) and of min F′ = F1·F2/(F1+F2) with Clark's denominator df."""
    by_person = frame.groupby(["participant", "condition"])["value"].mean().unstack()
    by_item = frame.groupby(["item", "condition"])["value"].mean().unstack()
    t1, t2 = stats.ttest_rel(by_person["b"], by_person["a"]), stats.ttest_rel(by_item["b"], by_item["a"])
    f1, f2, df1, df2 = t1.statistic**2, t2.statistic**2, len(by_person) - 1, len(by_item) - 1
    df = (f1 + f2) ** 2 / (f1**2 / df2 + f2**2 / df1)
    return float(t1.pvalue), float(stats.f.sf(f1 * f2 / (f1 + f2), 1, df))


def full_model(frame: pd.DataFrame, lrt: bool) -> tuple[float, float, float, float, bool]:
    """The full mixed model's Wald p (REML), LRT p (ML fits with and without condition; NaN unless asked),
    seconds each took and whether every fit converged."""
    data = frame.assign(one=1, slope=(frame["condition"] == "b").astype(float))
    parts = {"participant": "0 + C(participant)", "slope": "0 + C(participant):slope", "item": "0 + C(item)"}
    start, p_lrt = time.perf_counter(), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = smf.mixedlm("value ~ C(condition)", data, groups="one", vc_formula=parts).fit(reml=True)
        converged, wald_seconds = bool(fit.converged), time.perf_counter() - start
        if lrt:
            full = smf.mixedlm("value ~ C(condition)", data, groups="one", vc_formula=parts).fit(reml=False)
            null = smf.mixedlm("value ~ 1", data, groups="one", vc_formula=parts).fit(reml=False)
            p_lrt = float(stats.chi2.sf(2 * (full.llf - null.llf), 1))
            converged = converged and bool(full.converged and null.converged)
    lrt_seconds = time.perf_counter() - start - wald_seconds
    return float(fit.pvalues["C(condition)[T.b]"]), p_lrt, wald_seconds, lrt_seconds, converged


def _full_model_star(args: tuple[pd.DataFrame, bool]) -> tuple[float, float, float, float, bool]:
    return full_model(*args)


def studies(effect: float, n: int, sims: int, seed: int) -> list[pd.DataFrame]:
    """The studies `power.simulate(..., seed=seed)` analyses at n participants (same stream)."""
    rng = np.random.default_rng([seed, n])
    return [power.simulated_study(PLAN, assumed(effect), n, rng) for _ in range(sims)]


def row(label: str, p: np.ndarray, seconds: float) -> dict:
    hits = int(np.sum(p < ALPHA))
    low, high = proportion_confint(hits, len(p), alpha=0.05, method="beta")
    return {"analysis": label, "power": hits / len(p), "low": low, "high": high, "ms per study": 1000 * seconds}


def compare(effect: float, n: int, sims: int, seed: int, lrt: bool, pool: ProcessPoolExecutor) -> pd.DataFrame:
    """One block of the table: each analysis's power with its CI and time per study, and how often it agrees
    with the full model's Wald decision on the same study."""
    frames = studies(effect, n, sims, seed)
    start = time.perf_counter()
    fast = np.array([power.analyse(f, "a")["b vs a"] for f in frames])
    fast_seconds = (time.perf_counter() - start) / sims
    start = time.perf_counter()
    others = np.array([plain_f1_and_min_f(f) for f in frames])
    other_seconds = (time.perf_counter() - start) / sims
    full = list(pool.map(_full_model_star, [(f, lrt) for f in frames], chunksize=4))
    wald, p_lrt = np.array([r[0] for r in full]), np.array([r[1] for r in full])
    wald_seconds, lrt_seconds = (statistics.median(r[i] for r in full) for i in (2, 3))
    simulate_check(effect, n, sims, seed, fast)
    rows = [row("fast: F1 with list factor", fast, fast_seconds), row("F1, lists ignored", others[:, 0], other_seconds)]
    rows += [row("min F'", others[:, 1], other_seconds), row("mixed model, Wald z (REML fit)", wald, wald_seconds)]
    if lrt:
        rows.append(row("mixed model, LRT (2 ML fits)", p_lrt, lrt_seconds))
    out = pd.DataFrame(rows).assign(participants=n, effect=effect)
    tests = [fast, others[:, 0], others[:, 1], wald, p_lrt][: len(out)]
    out["agrees with Wald"] = [np.mean((p < ALPHA) == (wald < ALPHA)) for p in tests]
    out.attrs["unconverged"] = sum(not r[4] for r in full)
    return out


def simulate_check(effect: float, n: int, sims: int, seed: int, fast: np.ndarray) -> None:
    """simulate()'s count of significant studies at this n must be the fast test's count on these studies."""
    table = power.simulate(PLAN, assumed(effect), [n], sims=sims, seed=seed, alpha=ALPHA)
    assert table["significant"].iloc[0] == int(np.sum(fast < ALPHA)), "simulate() analysed other studies"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sims", type=int, default=100)
    parser.add_argument("--counts", type=int, nargs="+", default=[16, 32, 48])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lrt", action="store_true", help="also the likelihood-ratio test (three fits per study)")
    args = parser.parse_args()
    print(f"design: {PLAN}; assumed: {assumed(EFFECT)}; {args.sims} simulated studies per row, alpha {ALPHA}")
    print(f"fast test: {power.TEST}")
    blocks = [(EFFECT, n) for n in args.counts] + [(0.0, min(args.counts))]
    start = time.perf_counter()
    with ProcessPoolExecutor() as pool:
        for effect, n in blocks:
            block = compare(effect, n, args.sims, args.seed, args.lrt, pool)
            print(f"\n{n} participants, effect {effect} ({block.attrs['unconverged']} full fits not converged)")
            print(block.drop(columns=["participants", "effect"]).to_string(index=False, float_format="%.3f"))
    start_sim = time.perf_counter()
    power.simulate(PLAN, assumed(EFFECT), [16, 24, 32, 40, 48], sims=200)
    print(f"\nsimulate(): 200 sims x 5 counts in {time.perf_counter() - start_sim:.2f} s (one core)")
    print(f"benchmark wall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
