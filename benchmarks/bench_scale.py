"""The store at 10 million predictions (issue 16): Explore's slices (< 100 ms), the Overview's
leaderboard (< 1 s), `evaluate` of NOPE's paper runs (< 10 s) and the Overview page (< 1 s, rendered
through app.py as the server does), on a copy of the store grown with synthetic NOPE runs.

    .venv/bin/python -m benchmarks.bench_scale [--rows 10000000] [--repeat 3]

The same functions are timed on the store as it is (baseline) and on the grown copy; the ratio is
grown / target. The leaderboard's first call scores every run it has not cached (`run_metrics`: the
synthetic runs, once, as a batch run's completion would); later calls read the cache and check
each run's fingerprint.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from backend.analysis import evaluation as evaluate
from backend.analysis import leaderboard as overview
from backend.config import settings
from backend.store.connection import connect
from benchmarks.bench_evaluate import timed as seconds
from benchmarks.bench_explore import grow, time_slices

PAPER = "nope/RoBERTa-large/mnli-snli-anli-fever/{}"


def page_seconds(store: Path, page: str, repeat: int) -> tuple[float, float]:
    """A page's server-side render through app.py on `store` (ui.apptest.render): (cold: query caches
    cleared, median; warm: cached, median). A first render, not timed, pays the process's imports."""
    import logging
    import os
    import statistics

    import streamlit as st

    from ui.apptest import render

    logging.getLogger("streamlit").setLevel(logging.ERROR)
    os.environ["PLAB_STORE"] = str(store)
    st.cache_data.clear()
    _, at = render(page)

    def cold():
        st.cache_data.clear()
        return render(page, at=at)[0]

    colds = [cold() for _ in range(repeat)]
    return statistics.median(colds), statistics.median(render(page, at=at)[0] for _ in range(repeat))


def pages(con, repeat: int) -> tuple[float, float, float]:
    """(leaderboard first call: scores every run not cached yet; leaderboard after; evaluate)."""
    first = seconds(lambda: overview.headline(con), 1)
    board = seconds(lambda: overview.headline(con), repeat)
    runs = [PAPER.format(i) for i in range(5)]
    report = seconds(lambda: evaluate.evaluate(con, "nope", runs), repeat)
    return first, board, report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", default=str(settings().store_path))
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "bench.duckdb"
        shutil.copyfile(args.store, copy)  # the original is only read; the copy keeps the leaderboard's cache
        con = connect(copy)
        have = con.execute("SELECT count(*) FROM predictions").fetchall()[0][0]
        base_first, base_board, base_report = pages(con, args.repeat)
        con.close()
        base_cold, base_warm = page_seconds(copy, "pages/overview.py", args.repeat)
        started = time.perf_counter()
        runs, total = grow(copy, args.rows)
        print(
            f"store: {have:,} predictions; copy grown by {runs:,} synthetic NOPE runs to {total:,} "
            f"({time.perf_counter() - started:.0f} s)"
        )
        con = connect(copy)
        worst = time_slices(con, args.repeat)
        first, board, report = pages(con, args.repeat)
        con.close()
        cold, warm = page_seconds(copy, "pages/overview.py", args.repeat)
    print(f"{'':<42} {'as is':>8} {'grown':>8} {'target':>7} {'ratio':>6}")
    print(f"{'Overview leaderboard, new runs scored':<42} {base_first:>7.2f}s {first:>7.2f}s {'—':>7} {'':>6}")
    print(f"{'Overview leaderboard (headline)':<42} {base_board:>7.2f}s {board:>7.2f}s {'1 s':>7} {board:>6.2f}")
    print(f"{'evaluate nope (5 paper runs)':<42} {base_report:>7.2f}s {report:>7.2f}s {'10 s':>7} {report / 10:>6.2f}")
    print(
        f"{'Overview page, cold (query caches cleared)':<42} {base_cold:>7.2f}s {cold:>7.2f}s {'1 s':>7} {cold:>6.2f}"
    )
    print(f"{'Overview page, warm':<42} {base_warm:>7.2f}s {warm:>7.2f}s {'1 s':>7} {warm:>6.2f}")
    print(f"Explore slices: worst ratio {worst:.2f} of 100 ms")


if __name__ == "__main__":
    main()
