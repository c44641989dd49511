"""The bundled embedder's CPU batch size (issue 28 item 6): the same passages embedded at several batch
sizes, each against the old default of 64 side by side, with the largest difference between the vectors.

    .venv/bin/python -m benchmarks.bench_embed [--passages 1500] [--store data/presupposition_lab.duckdb]

Passages are a seeded random sample of the wiki corpus; batches are sorted by length as in `Embedder.encode`.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from backend.models.embed import Embedder
from backend.store.access import session
from backend.store.passages import corpus_passages


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", type=int, default=1500)
    parser.add_argument("--store", default="data/presupposition_lab.duckdb")
    parser.add_argument("--sizes", default="64,32,16,8,4")
    args = parser.parse_args()
    with session(args.store) as con:
        _, texts = corpus_passages(con, "wiki")
    chosen = np.random.default_rng(0).choice(len(texts), args.passages, replace=False)
    sample = [texts[i] for i in chosen]
    embedder = Embedder()
    print(f"{len(sample):,} passages on {embedder.device}, {embedder.name}")
    baseline, seconds = None, {}
    for size in (int(s) for s in args.sizes.split(",")):
        embedder.batch_size = size
        started = time.perf_counter()
        vectors = embedder.encode(sample)
        seconds[size] = time.perf_counter() - started
        baseline = vectors if baseline is None else baseline
        first = next(iter(seconds))
        print(
            f"batch {size:>3}: {seconds[size]:6.1f} s  {len(sample) / seconds[size]:5.1f} passages/s  "
            f"{seconds[first] / seconds[size]:.2f}x batch {first}  max |Δ| {np.abs(vectors - baseline).max():.1e}"
        )


if __name__ == "__main__":
    main()
