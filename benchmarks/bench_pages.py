"""Server-side render time of every page on the full store (Streamlit AppTest, no browser).

    PLAB_STORE=data/presupposition_lab.duckdb .venv/bin/python -m benchmarks.bench_pages [--repeat 5]

Cold = first render in a fresh process (empty caches: queries run); warm = median of the next
renders (cached query results, as a user sees when moving between pages). Target: < 1 s.
"""
from __future__ import annotations

import argparse
import logging
import re
import statistics
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.0


def pages() -> list[str]:
    return re.findall(r'st\.Page\("(pages/[^"]+\.py)"', (ROOT / "app.py").read_text())


def render(path: str, at: AppTest | None) -> tuple[float, AppTest]:
    started = time.perf_counter()
    if at is None:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page(path).run()
    elapsed = time.perf_counter() - started
    if at.exception:
        raise SystemExit(f"{path}: {at.exception[0].value}")
    return elapsed, at


def main() -> None:
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    at = None
    for path in pages():
        cold, at = render(path, at)
        warm = statistics.median(render(path, at)[0] for _ in range(args.repeat))
        print(f"{path:22} cold {cold:6.2f} s   warm {warm:6.3f} s   ratio warm/target {warm / TARGET:.2f}")


if __name__ == "__main__":
    main()
