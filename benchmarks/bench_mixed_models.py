"""The lab's mixed-model fits beside lme4's on the same rows (issue 62, item 2: "the fit itself, not the process
start, within 2× of lme4's fit of the same rows"). Two things are timed per case, each side in its own fresh process
(one Python, one Rscript per case), so that nothing but the fits is inside a timing:

1. the REML fit alone: `mixedlm.lmer(formula, data, contrasts=...)` on the rows and contrast matrices
   `backend.metrics.mixed_models.fit` builds, against `lme4::lmer(formula, data)` on those rows (the same factor
   levels and contrasts), timed in R by `proc.time()` around the call only;
2. the whole analysis as the lab reports it: `backend.metrics.mixed_models.fit(...)` (REML fit, its convergence
   check, Satterthwaite t tests, an ML refit per fixed term and the likelihood-ratio test, Holm-corrected pairwise
   comparisons) against what tests/oracles/lme4.R does for the oracle: `lmerTest::lmer` (REML, its Satterthwaite
   `summary`), `REMLcrit`, `isSingular`, `VarCorr`, the ML fit and `anova(reduced, full)` per term (both by
   `lme4::lmer`, R's cheaper way, which also checks each fit's convergence), `contest1D` for each pair of the
   factor's levels and `p.adjust(..., "holm")`.

In each process the first fit is timed alone and reported as "first fit in a process" (it pays any one-time cost of
a first call), then --repeats timed fits, of which the median is the figure; the whole analysis likewise, after the
REML fits (so its "first" is the first whole analysis, not the first fit). Wall seconds are the table; CPU
seconds (numpy's BLAS may use every core, R's reference BLAS uses one) are printed after it. Each pair's REML
criterion (and the first term's χ² for the whole analysis) is printed from both sides to show they fitted the same
model to the same optimum. Cases: the oracle set of tests/test_mixed_models.py (the prior experiment with and
without by-participant slopes, the predicate data in treatment coding, the simulated Latin square), and the Latin
square with reference level b, where lme4 stops on a boundary short of the optimum mixedlm finds.
--blas-threads N runs the Python side with OPENBLAS_NUM_THREADS=N (default: unset, as the lab runs it); on 2 cores
shared with other work, numpy's two BLAS threads can make a fit several times slower than one thread.

    .venv/bin/python -m benchmarks.bench_mixed_models [--repeats 5] [--blas-threads 1] [--cases prior latin ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mixedlm
import pandas as pd

from backend.config import settings
from backend.metrics import mixed_models as mm
from tests.test_mixed_models import LATIN, PREDICATE, PRIOR, projective_ratings, simulated

PRIOR_INTERCEPTS = "value ~ prior + (1 | participant) + (1 | predicate) + (1 | content)"
# name → (data, formula, reference); coding is treatment throughout
CASES = {
    "prior": ("prior", PRIOR, {"prior": "low"}),
    "prior, intercepts": ("prior", PRIOR_INTERCEPTS, {"prior": "low"}),
    "predicate": ("predicate", PREDICATE, {}),
    "latin": ("latin", LATIN, {"condition": "a"}),
    "latin, reference b": ("latin", LATIN, {"condition": "b"}),
}

R_SCRIPT = r"""
# One case: args data.csv formula factor levels(|) names(|) repeats out.csv
suppressMessages({library(lme4); library(lmerTest)})
args <- commandArgs(trailingOnly = TRUE)
f <- as.formula(args[2]); factor <- args[3]; response <- all.vars(f)[1]
d <- read.csv(args[1], colClasses = "character")  # every column a factor but the response, as the lab reads them
for (column in setdiff(names(d), response)) d[[column]] <- factor(d[[column]])
d[[response]] <- as.numeric(d[[response]])
levels <- strsplit(args[4], "|", fixed = TRUE)[[1]]; names <- strsplit(args[5], "|", fixed = TRUE)[[1]]
repeats <- as.integer(args[6]); k <- length(levels)
d[[factor]] <- factor(as.character(d[[factor]]), levels = levels)
C <- contr.treatment(k); colnames(C) <- sub(paste0("^", factor), "", names)
contrasts(d[[factor]]) <- C
columns <- paste0(factor, colnames(C))
whole <- function() {
  m <- lmerTest::lmer(f, data = d, REML = TRUE)
  s <- coef(summary(m)); crit <- REMLcrit(m); singular <- isSingular(m); vc <- as.data.frame(VarCorr(m))
  full <- lme4::lmer(f, data = d, REML = FALSE)
  chi2 <- NULL
  for (term in drop.scope(terms(nobars(f)))) {
    reduced <- update(full, as.formula(paste(". ~ . -", term)))
    chi2 <- c(chi2, anova(reduced, full)$Chisq[2])
  }
  p <- NULL
  for (a in 1:(k - 1)) for (b in (a + 1):k) {
    L <- setNames(rep(0, length(fixef(m))), names(fixef(m))); L[columns] <- C[a, ] - C[b, ]
    p <- c(p, contest1D(m, L)[["Pr(>|t|)"]])
  }
  holm <- p.adjust(p, "holm")
  c(crit, chi2[1])
}
timed <- function(what, call) {
  t0 <- proc.time(); value <- call(); t <- proc.time() - t0
  data.frame(what = what, wall = t[["elapsed"]], cpu = t[["user.self"]] + t[["sys.self"]],
             reml = value[1], chi2 = if (length(value) > 1) value[2] else NA)
}
reml <- function() REMLcrit(lme4::lmer(f, data = d))
out <- timed("first fit", reml)
for (i in seq_len(repeats)) out <- rbind(out, timed("fit", reml))
out <- rbind(out, timed("first whole", whole))
for (i in seq_len(repeats)) out <- rbind(out, timed("whole", whole))
write.csv(out, args[7], row.names = FALSE)
"""


def side_by_side(table: list[dict], measure: str, labels: list[str], rows: bool = False) -> pd.DataFrame:
    """Per case, the fit and the whole analysis by `measure` (wall | cpu) on each side with their ratios, under
    `labels` (Python fit, R fit, Python whole, R whole)."""
    out = []
    for t in table:
        row = {"case": t["case"]} | ({"rows": t["rows"]} if rows else {})
        for part, (mine, theirs), ratio in (("fit", labels[:2], "ratio"), ("whole", labels[2:], "ratio ")):
            py, r = t["py"][f"{part} {measure}"], t["r"][f"{part} {measure}"]
            row |= {mine: py, theirs: r, ratio: py / r}
        out.append(row)
    return pd.DataFrame(out)


def projective() -> pd.DataFrame:
    """The projective-probability ratings with their facets, as tests/test_mixed_models.py's `projective` fixture."""
    folder = settings().shared_datasets / "projective_probability"
    if not folder.is_dir():
        raise SystemExit(f"{folder} is missing: the prior and predicate cases need ../shared/datasets")
    return projective_ratings(folder)


def frame_of(data: str) -> pd.DataFrame:
    """A case's frame, built as the oracle set builds it."""
    if data == "latin":
        return simulated()
    ratings = projective()
    if data == "prior":
        return ratings[ratings["split"] == "fact"].drop(columns="split")
    return ratings[ratings["split"] == "no-fact"].drop(columns=["split", "prior"])


def prepared(name: str) -> tuple[pd.DataFrame, str, dict, pd.DataFrame, dict, dict]:
    """frame, formula, reference, and the rows, factor specs and contrasts `mm.fit` builds from them."""
    data, formula, reference = CASES[name]
    frame = frame_of(data)
    rows, factors, contrasts, _ = mm._data(frame, mm.parsed_formula(formula, frame.columns), "treatment", reference)
    return frame, formula, reference, rows, factors, contrasts


def clocked(call) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    value = call()
    return time.perf_counter() - wall, time.process_time() - cpu, value


def one_case(name: str, repeats: int) -> list[dict]:
    """This process's timings of one case (run in a fresh process, so its first fit is the process's first)."""
    frame, formula, reference, rows, _, contrasts = prepared(name)
    out = []

    def reml() -> tuple[float, float]:
        return mixedlm.lmer(formula, rows, contrasts=contrasts).REMLcrit(), float("nan")

    def whole() -> tuple[float, float]:
        fit = mm.fit(frame, formula, coding="treatment", reference=reference)
        assert fit.converged, fit.checks
        return fit.reml, float(fit.terms["chi2"].iloc[0])

    for what, call in (
        ("first fit", reml),
        *[("fit", reml)] * repeats,
        ("first whole", whole),
        *[("whole", whole)] * repeats,
    ):
        wall, cpu, (crit, chi2) = clocked(call)
        out.append({"what": what, "wall": wall, "cpu": cpu, "reml": crit, "chi2": chi2})
    return out


def r_case(name: str, repeats: int, folder: Path) -> list[dict]:
    """R's timings of one case, in a fresh Rscript process, on the rows `mm.fit` fits (same levels, same contrasts)."""
    _, formula, _, rows, factors, _ = prepared(name)
    ((factor, spec),) = factors.items()  # one factor per case
    data, out, script = folder / "rows.csv", folder / "out.csv", folder / "case.R"
    rows.to_csv(data, index=False)
    script.write_text(R_SCRIPT)
    args = [formula, factor, "|".join(spec["levels"]), "|".join(spec["names"]), str(repeats), str(out)]
    done = subprocess.run(["Rscript", str(script), str(data), *args], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"R failed on {name}: {done.stderr[-2000:]}")
    return pd.read_csv(out).to_dict("records")


def python_case(name: str, repeats: int, blas_threads: int | None) -> list[dict]:
    """Python's timings of one case, in a fresh interpreter running `one_case` (its BLAS at `blas_threads` threads;
    None: as the lab runs it, OpenBLAS's default of one thread per core)."""
    command = [sys.executable, "-m", "benchmarks.bench_mixed_models", "--one", name, "--repeats", str(repeats)]
    env = os.environ | ({} if blas_threads is None else {"OPENBLAS_NUM_THREADS": str(blas_threads)})
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(command, capture_output=True, text=True, cwd=root, env=env)
    if done.returncode:
        raise SystemExit(f"Python failed on {name}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summary(records: list[dict]) -> dict:
    """Medians of the repeated fits and whole analyses, the first of each, and the values of the last fit."""
    frame = pd.DataFrame(records)
    out = {}
    for what in ("fit", "whole"):
        repeated, first = frame[frame["what"] == what], frame[frame["what"] == f"first {what}"].iloc[0]
        out |= {f"{what} wall": statistics.median(repeated["wall"]), f"{what} cpu": statistics.median(repeated["cpu"])}
        out |= {f"first {what}": first["wall"], f"{what} reml": repeated["reml"].iloc[-1]}
        out[f"{what} spread"] = f"{repeated['wall'].min():.3f}–{repeated['wall'].max():.3f}"
    out["chi2"] = frame[frame["what"] == "whole"]["chi2"].iloc[-1]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5, help="timed fits per side after the first (median taken)")
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument(
        "--blas-threads", type=int, help="OPENBLAS_NUM_THREADS for the Python side (default: as the lab runs, unset)"
    )
    parser.add_argument("--one", choices=list(CASES), help=argparse.SUPPRESS)  # a worker: one case, JSON out
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_case(args.one, args.repeats)))
        return
    if shutil.which("Rscript") is None:
        raise SystemExit("Rscript is not installed: this benchmark needs R with lme4 and lmerTest")
    versions = subprocess.run(
        ["Rscript", "-e", 'cat(R.version.string, "lme4", format(packageVersion("lme4")), "lmerTest", '
         'format(packageVersion("lmerTest")))'], capture_output=True, text=True,
    ).stdout  # fmt: skip
    threads = "unset" if args.blas_threads is None else args.blas_threads
    print(f"mixedlm {mixedlm.__version__}; {versions}; {os.cpu_count()} CPUs; median of {args.repeats} per side")
    print(f"Python side: OPENBLAS_NUM_THREADS {threads}; load average {os.getloadavg()[0]:.2f} at the start")
    started, table = time.perf_counter(), []
    with tempfile.TemporaryDirectory() as folder:
        for name in args.cases:
            py = summary(python_case(name, args.repeats, args.blas_threads))
            r = summary(r_case(name, args.repeats, Path(folder)))
            table.append({"case": name, "rows": len(prepared(name)[3]), "py": py, "r": r})
            print(f"  {name}: done ({time.perf_counter() - started:.0f} s)", flush=True)
    wall = side_by_side(table, "wall", ["Python REML fit (s)", "lme4 fit (s)", "Python whole analysis (s)",
                                        "R whole analysis (s)"], rows=True)  # fmt: skip
    print("\nWall seconds, median (ratio: Python / R; the target is the REML fit's ratio ≤ 2)")
    print(wall.to_string(index=False, float_format="%.3f"))
    cpu = side_by_side(table, "cpu", ["Python fit CPU", "lme4 fit CPU", "Python whole CPU", "R whole CPU"])
    print("\nCPU seconds (all threads), median")
    print(cpu.to_string(index=False, float_format="%.3f"))
    first = pd.DataFrame([{
        "case": t["case"],
        "Python first REML fit": t["py"]["first fit"], "lme4 first fit": t["r"]["first fit"],
        "Python first whole": t["py"]["first whole"], "R first whole": t["r"]["first whole"],
    } for t in table])  # fmt: skip
    spread = pd.DataFrame([{
        "case": t["case"],
        "Python REML fit": t["py"]["fit spread"], "lme4 fit": t["r"]["fit spread"],
        "Python whole": t["py"]["whole spread"], "R whole": t["r"]["whole spread"],
    } for t in table])  # fmt: skip
    print("\nWall seconds, min–max of the repeats")
    print(spread.to_string(index=False))
    print("\nFirst fit in a process, wall seconds (each case in a fresh process; 'first whole' follows the fits)")
    print(first.to_string(index=False, float_format="%.3f"))
    same = pd.DataFrame([{
        "case": t["case"],
        "REML crit, mixedlm": f"{t['py']['fit reml']:.4f}", "REML crit, lme4": f"{t['r']['fit reml']:.4f}",
        "whole: REML crit, lab": f"{t['py']['whole reml']:.4f}", "lmerTest": f"{t['r']['whole reml']:.4f}",
        "LRT χ², lab": f"{t['py']['chi2']:.4f}", "LRT χ², R": f"{t['r']['chi2']:.4f}",
    } for t in table])  # fmt: skip
    print("\nThe same models: REML criterion of each side's fit, and the LRT χ² of the fixed term")
    print(same.to_string(index=False))
    load = os.getloadavg()[0]
    print(f"\nbenchmark wall time {time.perf_counter() - started:.0f} s; load average {load:.2f} at the end")


if __name__ == "__main__":
    main()
