"""Six users at once: Explore page loads and Playground questions, alone and beside each other.

    .venv/bin/python -m benchmarks.bench_load [--model smollm2-135m] [--loads 20] [--askers 5]

Everything runs in this process, as in one Streamlit server: Explore renders through AppTest (the
page's real code and queries, on a copy of the store, with a different trigger filter each time so
no cached result is reused), and each asking user calls `live.ask` on the store's path, the code the
Playground's Ask button runs. First alone (Explore loads one after another; questions one after
another), then the same Explore loads while `--askers` users keep asking the model new questions.
Prints p50/p95 of each and the ratio under load / alone. Target (issue 12): Explore p95 under load
≤ 2 × alone.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from backend.config import settings
from backend.execution import live, live_worker

ROOT = Path(__file__).resolve().parent.parent
RUN = "nope/RoBERTa-large/mnli-snli-anli-fever/1"
TRIGGERS = ["clefts", "comparatives", "implicatives", "aspectual", "factives", "numeric", "temporal", "change of state"]
SORTS = ["example_id", "gold_label", "p_a_desc", "p_a_asc", "label_a", "split"]


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1] if len(values) > 1 else values[0]


def explore_load(i: int, views: int) -> float:
    """One Explore load; `views` distinct filter settings are cycled, so later loads of a view may be
    answered from the page's cache (as when users move between a few views)."""
    started = time.perf_counter()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    view = i % views
    at.query_params.update(
        {
            "dataset": "nope",
            "run_a": RUN,
            "trigger_type": TRIGGERS[view % len(TRIGGERS)],
            "sort": SORTS[view % len(SORTS)],
        }
    )
    at = at.switch_page("pages/explore.py").run()
    assert not at.exception, at.exception[0].message
    return time.perf_counter() - started


def ask(store: Path, model: str, n: int) -> float:
    task = "detect" if n % 2 else "qa"
    started = time.perf_counter()
    live.ask(
        store, live.Query(model=model, task=task, question=f"Why did the lab close laboratory number {n} in 1990?")
    )
    return time.perf_counter() - started


def line(what: str, alone: list[float], loaded: list[float]) -> None:
    ratio = p95(loaded) / p95(alone)
    print(
        f"{what:34} alone p50 {statistics.median(alone):6.2f} s  p95 {p95(alone):6.2f} s   "
        f"under load p50 {statistics.median(loaded):6.2f} s  p95 {p95(loaded):6.2f} s   ratio p95 {ratio:5.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", default=str(settings().store_path))
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--loads", type=int, default=20)
    parser.add_argument("--askers", type=int, default=5)
    parser.add_argument(
        "--views", type=int, default=4, help="distinct Explore views cycled (a large number: no cache hits)"
    )
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "bench.duckdb"
        shutil.copyfile(args.store, store)
        os.environ["PLAB_STORE"] = str(store)
        counter = itertools.count()
        ask(store, args.model, next(counter))  # the model is loaded once per server, before anyone measures
        explore_load(0, args.views)
        explore_alone = [explore_load(i, args.views) for i in range(1, args.loads + 1)]
        asks_alone = [ask(store, args.model, next(counter)) for _ in range(args.askers * 2)]
        stop, asked = threading.Event(), []

        def asker():
            while not stop.is_set():
                asked.append(ask(store, args.model, next(counter)))

        users = [threading.Thread(target=asker) for _ in range(args.askers)]
        for user in users:
            user.start()
        time.sleep(2)  # the queue fills
        explore_loaded = [explore_load(i, args.views) for i in range(1, args.loads + 1)]
        stop.set()
        for user in users:
            user.join()
        print(
            f"{args.askers} users asking {args.model} (detect and QA, new questions) beside 1 user loading Explore; "
            f"torch threads for live answers: {live_worker.live_threads()} of {os.cpu_count()} cores"
        )
        line("Explore page load (AppTest)", explore_alone, explore_loaded)
        line(f"Playground question ({args.model})", asks_alone, asked)
        print(
            f"target: Explore p95 under load <= 2 x alone: "
            f"{'met' if p95(explore_loaded) <= 2 * p95(explore_alone) else 'MISSED'}"
        )


if __name__ == "__main__":
    main()
