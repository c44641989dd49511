"""Time the studio's generation: a template expanded to 100,000 sentences, checked as a user dataset,
and stored in a fresh store (pairs included).

    .venv/bin/python -m benchmarks.bench_studio [--sentences 100000] [--repeat 3]

Prints the median seconds of each step and the ratio of expand + check against the 10 s target
(issue 14; storing is reported beside it, it is the ordinary dataset write).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from backend.studio import templates

TARGET_SECONDS = 10.0


def template(sentences: int) -> str:
    """The shipped example's five conditions over every combination of sentences / 20 names × 4 verbs
    (the -ing form fixed: the sentences need not make sense to be timed)."""
    conditions = templates.example_text().partition("conditions:")[2]
    names = ", ".join(f"Person{i}" for i in range(sentences // 20))
    return (
        f"name: bench\ntrigger: change_of_state\nslots:\n  name: [{names}]\n  doing: [smoking]\n"
        f"  do: [smoke, swim, run, sing]\nconditions:{conditions}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sentences", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    text = template(args.sentences)
    timings = {"expand": [], "check (bundle)": [], "store": []}
    for _ in range(args.repeat):
        started = time.perf_counter()
        made = templates.expand(text, "bench.yaml")
        timings["expand"].append(time.perf_counter() - started)
        started = time.perf_counter()
        bundle = templates.bundle(made, "bench.yaml")
        timings["check (bundle)"].append(time.perf_counter() - started)
        with tempfile.TemporaryDirectory() as tmp:
            from backend.imports import datasets as user_datasets
            from backend.store.access import session

            started = time.perf_counter()
            with session(Path(tmp) / "bench.duckdb", create=True) as con:
                user_datasets.save(con, bundle)
            timings["store"].append(time.perf_counter() - started)
    print(f"{len(made.frame):,} sentences, {len(bundle.pairs):,} pairs (median of {args.repeat})")
    for step, values in timings.items():
        print(f"  {step:16} {statistics.median(values):6.2f} s")
    generation = statistics.median(timings["expand"]) + statistics.median(timings["check (bundle)"])
    print(
        f"generation (expand + check) {generation:.2f} s: ratio {generation / TARGET_SECONDS:.2f} of the "
        f"{TARGET_SECONDS:.0f} s target ({'met' if generation < TARGET_SECONDS else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
