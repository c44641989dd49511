"""The Map page's server-side render time on a real dataset of more than 10,000 items (issue 15:
< 1 s warm for 10,000 points), beside the Explore page on the same dataset as the baseline.

    PLAB_STORE=data/presupposition_lab.duckdb .venv/bin/python -m benchmarks.bench_map [--dataset imppres] [--method
    umap]

The map must be computed first (`python -m backend map imppres --method umap`; its time is printed
by that command). Times are the server's script thread on one rerun, through app.py
(ui.apptest.render). Cold = first render (queries run, the Parquet map is read); warm = median of
the next renders (cached, as a user sees it when changing the colour or a filter
that was used before).
"""

from __future__ import annotations

import argparse
import logging
import statistics

import pyarrow.parquet as pq
from streamlit.testing.v1 import AppTest

from backend.config import settings
from benchmarks.bench_pages import TARGET
from ui.apptest import render


def timed(page: str, params: dict, repeat: int) -> tuple[float, float, AppTest]:
    cold, at = render(page, params)
    warm = statistics.median(render(page, at=at)[0] for _ in range(repeat))
    return cold, warm, at


def main() -> None:
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="imppres")
    parser.add_argument("--method", default="umap")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    cold, warm, at = timed("pages/map.py", {"dataset": args.dataset, "method": args.method}, args.repeat)
    if at.info and "No " in at.info[0].value:
        raise SystemExit(
            f"no {args.method} map of {args.dataset}: run `python -m backend map {args.dataset} --method {args.method}`"
        )
    maps = sorted(
        (settings().data_dir / "indexes" / "maps").glob(f"{args.dataset}-*-{args.method}.parquet"),
        key=lambda p: p.stat().st_mtime,
    )
    points = pq.read_metadata(maps[-1]).num_rows
    base_cold, base_warm, _ = timed("pages/explore.py", {"dataset": args.dataset}, args.repeat)
    print(f"{args.dataset} ({points:,} points), {args.method}")
    print(f"  Explore (baseline)  cold {base_cold:6.2f} s   warm {base_warm:6.3f} s")
    print(f"  Map                 cold {cold:6.2f} s   warm {warm:6.3f} s   ratio to Explore {warm / base_warm:.2f}")
    print(f"ratio warm/target {warm / TARGET:.2f} ({'met' if warm < TARGET else 'MISSED'})")


if __name__ == "__main__":
    main()
