"""Time every NOPE analysis for all imported runs (+ run groups) with 1,000-resample bootstrap CIs.

    .venv/bin/python -m benchmarks.bench_evaluate [--store PATH] [--repeat 3]

Side by side: the vectorised engine (`backend.views.evaluate.nope_report`: one shared weight matrix,
matrix products) and a naive baseline that loops over resamples in Python for the same Figure 5
and Table 4 estimates. Target: the full report in under 10 s on the 2-core machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from backend.analysis import evaluation as evaluate
from backend.metrics import nope_paper as nope
from backend.metrics.bootstrap import RESAMPLES
from backend.store.connection import connect

TARGET_SECONDS = 10.0


def naive_ci(values: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    samples = [values[rng.integers(0, len(values), len(values))].mean() for _ in range(RESAMPLES)]
    return tuple(np.percentile(samples, [2.5, 97.5]))


def naive_figure5_and_table4(con) -> int:
    """The same per-run/group × subset intervals, one Python loop iteration per resample."""
    items, pairs, scored = evaluate.nope_inputs(con)
    scored = scored.complete()
    names, rows, _ = evaluate.rows_for(scored, groups=True)
    position = {e: i for i, e in enumerate(items.index)}
    subsets = [
        np.flatnonzero(m)
        for m in [
            (items["split"] == s).to_numpy() & (items["trigger_type"] == t).to_numpy()
            for s in ("main", "adv")
            for t in items["trigger_type"].unique()
        ]
    ]
    kinds = np.array(
        [
            nope.projection_subset(a, b)
            for a, b in zip(items.loc[pairs["example_a"], "gold_label"], items.loc[pairs["example_b"], "gold_label"])
        ]
    )
    for kind in nope.SUBSETS:
        chosen = pairs[kinds == kind]
        subsets += [np.array([position[e] for e in chosen[col]]) for col in ("example_a", "example_b")]
    rng = np.random.default_rng(0)
    for row in rows:
        for columns in subsets:
            naive_ci(row[columns], rng)
    return len(rows) * len(subsets)


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    con = connect(args.store, read_only=True)
    runs = evaluate.nope_inputs(con)[2].complete().runs
    imported = int((runs["source"] == "import").sum())
    full = timed(lambda: evaluate.nope_report(con), args.repeat)
    naive = timed(lambda: naive_figure5_and_table4(con), 1)
    print(f"runs: {len(runs)} complete NLI runs ({imported} imported) + groups; {RESAMPLES} resamples per interval")
    print(
        f"vectorised full NOPE report (all analyses): median {full:.2f} s over {args.repeat}; "
        f"target {TARGET_SECONDS:.0f} s; ratio {full / TARGET_SECONDS:.2f} of target"
    )
    print(
        f"naive per-resample loop, Figure 5 + Table 4 intervals only: {naive:.2f} s; "
        f"the vectorised full report is {naive / full:.1f}x faster while doing more"
    )


if __name__ == "__main__":
    main()
