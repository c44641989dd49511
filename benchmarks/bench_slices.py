"""Time slice discovery (issue 15: < 2 s for a 10,000-item dataset with 8 facets), against a plain
pandas groupby over the same combinations as the baseline, side by side.

    .venv/bin/python -m benchmarks.bench_slices [--items 10000] [--facets 8] [--repeat 3]

Both search every combination of up to three facets and every value combination with ≥ 30 items;
the lab's search also tests and BH-corrects each. Prints the median seconds, the ratio to the
baseline and to the target.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import numpy as np
import pandas as pd

from backend.views import slices

TARGET_SECONDS = 2.0


def frame(items: int, facets: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    out = pd.DataFrame({f"f{i}": rng.choice([f"v{j}" for j in range(3 + i % 6)], items) for i in range(facets)})
    out["wrong_a"] = rng.random(items) < 0.25
    return out


def baseline(data: pd.DataFrame, support: int) -> int:
    """Group by each combination with pandas and keep the cells with enough items (no tests)."""
    kept = 0
    names = [c for c in data.columns if c != "wrong_a"]
    for k in (1, 2, 3):
        for combo in itertools.combinations(names, k):
            cells = data.groupby(list(combo), observed=True)["wrong_a"].agg(["size", "mean"])
            kept += int((cells["size"] >= support).sum())
    return kept


def median_seconds(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--facets", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    data = frame(args.items, args.facets)
    ours, found = median_seconds(lambda: slices.discover(data, min_support=30), args.repeat)
    base, kept = median_seconds(lambda: baseline(data, 30), args.repeat)
    assert kept == found.tested, (kept, found.tested)  # the same slices
    print(f"{args.items:,} items, {args.facets} facets, depth 3, support 30: {found.tested:,} slices tested")
    print(f"  pandas groupby baseline (no tests)  {base:.3f} s")
    print(f"  slice discovery (tests + BH)        {ours:.3f} s   ratio to baseline {ours / base:.2f}")
    print(
        f"ratio {ours / TARGET_SECONDS:.2f} of the {TARGET_SECONDS:.0f} s target "
        f"({'met' if ours < TARGET_SECONDS else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
