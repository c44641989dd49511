"""Time a full ingest from scratch (all datasets in ../shared/datasets) into a fresh store.

    .venv/bin/python -m benchmarks.bench_ingest [--repeat 3]

Prints per-dataset seconds and the total against the 30 s target (ratio = total / target).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path

from backend.imports.ingest import ingest

TARGET_SECONDS = 30.0


def once() -> tuple[float, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        results = ingest(store=Path(tmp) / "bench.duckdb")
        total = time.perf_counter() - started
    failed = [r.message for r in results if r.status == "failed"]
    if failed:
        raise SystemExit(f"ingest failed: {failed}")
    return total, {r.dataset: r.seconds for r in results if r.status == "loaded"}


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs = [once() for _ in range(args.repeat)]
    totals = [t for t, _ in runs]
    for name in runs[0][1]:
        print(f"{name:8} {statistics.median(r[1][name] for r in runs):6.2f} s")
    median = statistics.median(totals)
    print(
        f"full ingest: median {median:.2f} s over {args.repeat} runs (min {min(totals):.2f}, max {max(totals):.2f}); "
        f"target {TARGET_SECONDS:.0f} s; ratio {median / TARGET_SECONDS:.2f} of target "
        f"({TARGET_SECONDS / median:.1f}x faster)"
    )


if __name__ == "__main__":
    main()
