"""Server-side render time of every page on the full store (Streamlit AppTest, no browser).

    PLAB_STORE=data/presupposition_lab.duckdb .venv/bin/python -m benchmarks.bench_pages [--repeat 5]

Each time is the server's script thread on one rerun of the page, run through app.py as the server
runs it (ui.apptest.render). Cold = the page's first render in this process (its queries run; the
first page also pays the process's one-time imports); warm = median of the next renders (cached
query results, as a user sees when moving between pages). Target: < 1 s.
"""

from __future__ import annotations

import argparse
import logging
import re
import statistics
from pathlib import Path

from ui.apptest import render

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.0


def pages() -> list[str]:
    return re.findall(r'st\.Page\("(pages/[^"]+\.py)"', (ROOT / "app.py").read_text())


def main() -> None:
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    at = None
    for path in pages():
        cold, at = render(path, at=at)
        warm = statistics.median(render(path, at=at)[0] for _ in range(args.repeat))
        print(f"{path:22} cold {cold:6.2f} s   warm {warm:6.3f} s   ratio warm/target {warm / TARGET:.2f}")


if __name__ == "__main__":
    main()
