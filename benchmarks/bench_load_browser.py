"""Six users on a real dashboard: one loads Explore views in Chromium while five ask the Playground.

    .venv/bin/python -m benchmarks.bench_load_browser [--loads 12] [--askers 5] [--askers-in protocol|chromium]

Starts `scripts/run.sh` on a copy of the store. An Explore load is timed in Chromium (Debian's, as in the
tests) from navigation until the table's caption and every chart are drawn, and split into the page
before the server's rerun, the rerun itself (from $PLAB_RERUN_LOG) and the drawing after it. A question is
timed from clicking Ask until it is answered. First alone (Explore loads one after another; questions
one after another in one session), then the Explore loads while five askers keep asking new questions,
each typed into its open Playground. Prints p50/p95, the ratio under load / alone and how many
questions were answered meanwhile. Target (issue 12): Explore p95 under load ≤ 2 × alone.

Where the askers are (`--askers-in`):
- `protocol` (default): five Streamlit sessions speaking the browser's websocket protocol
  (`benchmarks.streamlit_client`): the server does everything it does for five browser tabs, and their
  pages are drawn nowhere, as when the other users' browsers are on their own machines.
- `chromium`: five Chromium tabs on this machine, as in the issue's probe: on 2 cores their drawing
  takes the CPU the viewer's browser and the server need (`--reload`: reload the page for each question).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from urllib.parse import quote

from backend.config import settings
from benchmarks.streamlit_client import Session
from tests.helpers.browser import CHARTS_DRAWN, CHROMIUM, FLAGS, serve

RUN = "nope/RoBERTa-large/mnli-snli-anli-fever/1"
TRIGGERS = ["clefts", "comparatives", "implicatives", "aspectual"]


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1] if len(values) > 1 else values[0]


async def explore(page, base: str, i: int) -> tuple[float, float, float]:
    """One Explore load: (seconds, its start and end as Unix times, to line it up with the server's reruns)."""
    started, wall = time.perf_counter(), time.time()
    await page.goto(
        f"{base}/explore?dataset=nope&run_a={RUN}&trigger_type={TRIGGERS[i % len(TRIGGERS)]}",
        wait_until="domcontentloaded",
    )
    await page.get_by_text("select a row to open it").first.wait_for(timeout=300_000)
    await page.wait_for_function(CHARTS_DRAWN, timeout=300_000)
    seconds = time.perf_counter() - started
    return seconds, wall, wall + seconds


def question(n: int) -> str:
    return f"Why did the lab close laboratory number {n} in 1990?"


async def ask(page, base: str, n: int, reload: bool) -> float:
    """One question in Chromium: reload the Playground with it in the URL (`reload`), or type it into the open page."""
    text = question(n)
    if reload or "playground" not in page.url:
        await page.goto(f"{base}/playground?question={quote(text)}", wait_until="domcontentloaded")
    else:
        await page.get_by_role("textbox", name="Question").fill(text)
    button = page.get_by_role("button", name="Ask")
    await button.wait_for(timeout=300_000)
    started = time.perf_counter()
    await button.click()
    asking = page.get_by_text("Asking the models")
    try:
        await asking.first.wait_for(timeout=20_000)
    except Exception:  # noqa: BLE001 - answered before we looked
        pass
    await asking.first.wait_for(state="detached", timeout=600_000)
    await page.get_by_text("Done").first.wait_for(timeout=600_000)
    return time.perf_counter() - started


async def ask_protocol(tab: Session, n: int) -> float:
    """One question from a session without a browser, typed into its open Playground."""
    if not tab.elements:
        await tab.run()
    started = time.perf_counter()
    await tab.run({tab.widget("text_area", "Question"): question(n), tab.widget("button", "Ask"): True})
    if not any("stored in live/" in text for text in tab.texts()):  # the run id, escaped as text
        raise RuntimeError(f"question {n}: the Playground finished without an answer")
    return time.perf_counter() - started


def reruns(log: Path) -> list[tuple[float, float]]:
    """(start, end) as Unix times of every Explore rerun the server logged."""
    lines = log.read_text().splitlines() if log.exists() else []
    return [
        (float(start), float(end))
        for path, _, start, end in (line.split("\t") for line in lines)
        if path.endswith("/explore")
    ]


def phases(loads: list[tuple[float, float, float]], log: Path) -> dict[str, list[float]]:
    """Each load split in three: from navigation to the server starting its first rerun for it (page,
    scripts and websocket), the server's reruns (first start to last end), and from then until drawn."""
    logged, out = reruns(log), {"page": [], "server": [], "draw": [], "browser": []}
    for seconds, start, end in loads:
        mine = [r for r in logged if start <= r[0] <= end]
        if mine:
            out["page"].append(mine[0][0] - start)
            out["server"].append(mine[-1][1] - mine[0][0])
            out["draw"].append(end - mine[-1][1])
        out["browser"].append(seconds)
    return out


async def run(base: str, loads: int, askers: int, askers_in: str, reload: bool, log: Path) -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as p, AsyncExitStack() as held:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        viewer = await browser.new_page(viewport={"width": 1400, "height": 2000})
        if askers_in == "chromium":
            tabs = [await browser.new_page(viewport={"width": 1400, "height": 2000}) for _ in range(askers)]
            asks = [partial(ask, tab, base, reload=reload) for tab in tabs]
        else:
            tabs = [await held.enter_async_context(Session.open(base, "playground")) for _ in range(askers)]
            asks = [partial(ask_protocol, tab) for tab in tabs]
        await explore(viewer, base, 0)
        await asks[0](0)  # the model loads once per server
        explore_alone = [await explore(viewer, base, i) for i in range(1, loads + 1)]
        asks_alone = [await asks[0](n) for n in range(1, askers + 1)]
        stop, asked, counter = asyncio.Event(), [], iter(range(1000, 100_000))

        async def asker(ask_one):
            while not stop.is_set():
                asked.append(await ask_one(next(counter)))

        users = [asyncio.create_task(asker(ask_one)) for ask_one in asks]
        await asyncio.sleep(5)
        before, started = len(asked), time.perf_counter()
        explore_loaded = [await explore(viewer, base, i) for i in range(1, loads + 1)]
        load = (len(asked) - before, time.perf_counter() - started)  # questions answered while Explore was timed
        stop.set()
        await asyncio.gather(*users)
        await browser.close()
    by, under = phases(explore_alone, log), phases(explore_loaded, log)
    for what, alone, loaded in (
        ("Explore load (browser)", by["browser"], under["browser"]),
        ("  navigation to rerun start", by["page"], under["page"]),
        ("  rerun (server side)", by["server"], under["server"]),
        ("  rerun end to drawn", by["draw"], under["draw"]),
        (f"Playground question ({askers_in})", asks_alone, asked),
    ):
        print(
            f"{what:32} alone p50 {statistics.median(alone):6.2f} s  p95 {p95(alone):6.2f} s   under load "
            f"p50 {statistics.median(loaded):6.2f} s  p95 {p95(loaded):6.2f} s   ratio p95 "
            f"{p95(loaded) / p95(alone):5.2f}"
        )
    print(
        f"questions answered while Explore was timed under load: {load[0]} in {load[1]:.0f} s "
        f"({60 * load[0] / load[1]:.1f} a minute)"
    )
    met = p95(under["browser"]) <= 2 * p95(by["browser"])
    print(f"target: Explore p95 under load <= 2 x alone: {'met' if met else 'MISSED'}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", default=str(settings().store_path))
    parser.add_argument("--loads", type=int, default=12)
    parser.add_argument("--askers", type=int, default=5)
    parser.add_argument(
        "--reload", action="store_true", help="reload the Playground for every question (default: type it)"
    )
    parser.add_argument(
        "--askers-in",
        choices=["protocol", "chromium"],
        default="protocol",
        help="protocol: sessions without a browser, as if the askers' browsers were on other machines; "
        "chromium: tabs on this machine",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "bench.duckdb"
        shutil.copyfile(args.store, store)
        log = (
            Path(folder) / "reruns.tsv"
        )  # the server's side: each rerun's seconds, start and end (ui.resources.page_session)
        for base in serve(
            {"PLAB_STORE": str(store), "PLAB_RERUN_LOG": str(log)}
        ):  # the server inherits this environment (PLAB_LIVE_THREADS)
            asyncio.run(run(base, args.loads, args.askers, args.askers_in, args.reload, log))


if __name__ == "__main__":
    main()
