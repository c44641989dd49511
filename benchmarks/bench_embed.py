"""The bundled embedder's CPU batch size (issue 28 item 6): the same passages embedded at several batch
sizes, each against the old default of 64 side by side, with the largest difference between the vectors.

    .venv/bin/python -m benchmarks.bench_embed [--passages 1500] [--store data/presupposition_lab.duckdb]
    .venv/bin/python -m benchmarks.bench_embed --threads [--repeat 3]   # batches side by side, one per core,
                                                                         # against one batch at a time on all cores

Passages are a seeded random sample of the wiki corpus; batches are sorted by length as in `Embedder.encode`.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from backend.models import embed
from backend.models.embed import Embedder
from backend.store.access import session
from backend.store.passages import corpus_passages


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", type=int, default=1500)
    parser.add_argument("--store", default="data/presupposition_lab.duckdb")
    parser.add_argument("--sizes", default="64,32,16,8,4")
    parser.add_argument("--threads", action="store_true", help="side by side (now) against one batch at a time")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with session(args.store) as con:
        _, texts = corpus_passages(con, "wiki")
    chosen = np.random.default_rng(0).choice(len(texts), args.passages, replace=False)
    sample = [texts[i] for i in chosen]
    embedder = Embedder()
    print(f"{len(sample):,} passages on {embedder.device}, {embedder.name}")
    if args.threads:
        side_by_side(embedder, sample, args.repeat)
        return
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


def side_by_side(embedder: Embedder, sample: list[str], repeat: int) -> None:
    """Batches of 8 run one per core (the default) against one at a time on every core, alternately."""
    parallel_from = embed.PARALLEL_BATCHES
    for round_ in range(1, repeat + 1):
        seconds, vectors = {}, {}
        for name, threshold in (("one batch at a time", len(sample) + 1), ("side by side", parallel_from)):
            embed.PARALLEL_BATCHES = threshold
            started = time.perf_counter()
            vectors[name] = embedder.encode(sample)
            seconds[name] = time.perf_counter() - started
        embed.PARALLEL_BATCHES = parallel_from
        one, both = seconds["one batch at a time"], seconds["side by side"]
        print(
            f"round {round_}: one batch at a time {one:6.1f} s, side by side {both:6.1f} s: {one / both:.2f}x  "
            f"max |Δ| {np.abs(vectors['side by side'] - vectors['one batch at a time']).max():.1e}"
        )


if __name__ == "__main__":
    main()
