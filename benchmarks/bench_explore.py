"""Time Explore's slice queries on a store with 1,000,000 prediction rows.

    .venv/bin/python -m benchmarks.bench_explore [--store PATH] [--rows 1000000] [--repeat 5]

Copies the store (the original is only read) into a temporary folder, adds synthetic NOPE runs
with DuckDB `INSERT … SELECT` over `range()` until `predictions` holds --rows rows, reopens the copy
read-only (as the dashboard does) and times `slice_frame` (500-row page) and `slice_summary`
(n, accuracy and macro-F1 with 1,000-resample CIs, confusion) for five typical slices.
Target: every slice query under 100 ms (DESIGN.md); the ratio is median / target.
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from backend.config import settings
from backend.store.connection import connect
from backend.store.examples import Slice
from backend.views import explore

TARGET_MS = 100.0
REAL_RUN, OTHER_RUN, SYNTHETIC = "nope/RoBERTa-large/mnli/1", "nope/BOW/mnli/0", "nope/synthetic/{}"
SLICES = {  # name → slice arguments (filters, run_a, run_b, search, correctness), sort
    "whole dataset, run A": (((), REAL_RUN, None, "", "all"), "example_id"),
    "clefts × negated, runs A and B": (
        ((("trigger_type", ("clefts",)), ("polarity", ("negated",))), REAL_RUN, OTHER_RUN, "", "all"),
        "disagree_first",
    ),
    "search 'street', run A": (((), REAL_RUN, None, "street", "all"), "example_id"),
    "synthetic run A, predicted N, incorrect": (
        ((("label_a", ("N",)),), SYNTHETIC.format(7), None, "", "incorrect"),
        "p_a_desc",
    ),
    "adversarial, gold N|C, split adv": (
        ((("adversarial", (True,)), ("gold_label", ("N", "C")), ("split", ("adv",))), REAL_RUN, None, "", "all"),
        "p_a_asc",
    ),
}


def grow(path: Path, rows: int) -> tuple[int, int]:
    """Add synthetic NOPE runs (random E/N/C probabilities, label = argmax) until `rows` predictions."""
    con = connect(path)
    have = con.execute("SELECT count(*) FROM predictions").fetchall()[0][0]
    items = con.execute("SELECT count(*) FROM examples WHERE dataset_id = 'nope'").fetchall()[0][0]
    runs = max(0, math.ceil((rows - have) / items))
    con.execute("SELECT setseed(0.42)")
    con.execute(
        """
        INSERT INTO runs (run_id, dataset_id, task, model_id, config, source, status, created_at)
        SELECT 'nope/synthetic/' || i, 'nope', 'nli', 'synthetic', '{"labels": ["E", "N", "C"]}', 'batch', 'complete',
        now()
        FROM range($n) t(i)""",
        {"n": runs},
    )
    con.execute(
        """
        INSERT INTO predictions (run_id, example_id, label, probs, example_key)
        WITH raw AS (
            SELECT 'nope/synthetic/' || i AS run_id, e.example_id, e.example_key, [random(), random(), random()] AS r
            FROM range($n) t(i) CROSS JOIN (SELECT example_id, example_key FROM examples WHERE dataset_id = 'nope') e
            ORDER BY i, e.example_id)
        SELECT run_id, example_id, ['E', 'N', 'C'][list_position(r, list_max(r))],
               list_transform(r, lambda x: x / list_sum(r)), example_key
        FROM raw""",
        {"n": runs},
    )
    total = con.execute("SELECT count(*) FROM predictions").fetchall()[0][0]
    con.close()
    return runs, total


def timed_ms(fn, repeat: int) -> tuple[float, float]:
    """Median and first-call milliseconds over `repeat` calls."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times), times[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", default=str(settings().store_path))
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "bench.duckdb"
        shutil.copyfile(args.store, copy)  # read the original, never write it
        started = time.perf_counter()
        runs, total = grow(copy, args.rows)
        print(
            f"store copy: +{runs} synthetic NOPE runs → {total:,} prediction rows "
            f"({time.perf_counter() - started:.1f} s to generate)"
        )
        con = connect(copy, read_only=True)
        worst = time_slices(con, args.repeat)
        con.close()
        print(f"worst ratio {worst:.2f} of the 100 ms target ({'met' if worst <= 1 else 'MISSED'})")


def time_slices(con, repeat: int) -> float:
    """Print each slice's frame and summary times; return the worst ratio to the target."""
    print(
        f"{'slice':<42} {'rows':>6} {'frame ms':>9} {'summary ms':>11} {'ratio':>6}   (median of {repeat}; "
        f"target {TARGET_MS:.0f} ms each; ratio = slowest / target)"
    )
    worst = 0.0
    for name, (slice_args, sort) in SLICES.items():
        where = Slice("nope", *slice_args)
        frame_ms, _ = timed_ms(lambda w=where, s=sort: explore.slice_frame(con, w, sort=s), repeat)
        summary_ms, first = timed_ms(lambda w=where: explore.slice_summary(con, w), repeat)
        n = explore.slice_count(con, where)
        ratio = max(frame_ms, summary_ms) / TARGET_MS
        worst = max(worst, ratio)
        print(
            f"{name:<42} {n:>6,} {frame_ms:>9.1f} {summary_ms:>11.1f} {ratio:>6.2f}   (summary first call {first:.0f} "
            f"ms)"
        )
    return worst


if __name__ == "__main__":
    main()
