"""The crossed bootstrap of the Gradient page and `evaluate` (metrics.gradient): people's mean certainty per
group with participants and items resampled together, 1,000 draws, against the same draws made with
`Generator.multinomial` one resample at a time (the first implementation).

    PLAB_STORE=data/presupposition_lab.duckdb .venv/bin/python -m benchmarks.bench_gradient [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pandas as pd

from backend.analysis import gradient as view
from backend.metrics import gradient as metrics
from backend.store.access import session


def multinomial_means(ratings: pd.DataFrame, draws: int = metrics.DRAWS, seed: int = metrics.SEED) -> np.ndarray:
    """The baseline: one multinomial per resample for participants and one for items."""
    values = ratings["value"].to_numpy(dtype=float)
    raters, rater_of = np.unique(ratings["rater"].to_numpy(), return_inverse=True)
    items, item_of = np.unique(ratings["item"].to_numpy(), return_inverse=True)
    rng, means = np.random.default_rng(seed), []
    while len(means) < draws:
        weight = rng.multinomial(len(raters), np.full(len(raters), 1 / len(raters)))[rater_of]
        weight = weight * rng.multinomial(len(items), np.full(len(items), 1 / len(items)))[item_of]
        if weight.sum():
            means.append(float(np.average(values, weights=weight)))
    return np.asarray(means)


def timed(fn, groups, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for group in groups:
            fn(group, metrics.DRAWS, metrics.SEED)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with session() as con:
        cases = [("commitmentbank", "verb"), ("commitmentbank", "operator"), ("projective_probability", "predicate")]
        for dataset, by in cases:
            ratings = view.ratings(con, dataset)
            rule = view.spec(con, dataset)
            ratings = ratings if rule.get("split") is None else ratings[ratings["split"] == rule["split"]]
            groups = [g for _, g in ratings.groupby(by)]
            base = timed(multinomial_means, groups, args.repeat)
            new = timed(metrics._resampled_means, groups, args.repeat)
            print(
                f"{dataset:24} per {by:9} {len(groups):3} groups, {len(ratings):6,} ratings: "
                f"multinomial {base:6.2f} s   now {new:6.2f} s   speed-up {base / new:5.1f}x"
            )


if __name__ == "__main__":
    main()
