"""Fifty participants answering a study at once, with no think time: as 50 threads of one process (one Streamlit
server) and as 50 processes (several servers, or commands beside the dashboard) on one store.

    .venv/bin/python -m benchmarks.bench_study_load [--participants 50] [--items 12]

Each participant opens their signed link and joins; once every participant has joined (a barrier, so process
start-up and imports are not timed) all answer every trial the way the participant page does: one store session per
answer (`backend.store.access.session`, then `actions.studies.answer`). Per answer it records when it asked for the
store, when it entered the session (the wait), when the answer was stored (the hold) and when the session was left
(done: the store closed and handed on). Prints, per mode: answers stored against expected (nothing may be lost), the
latency's (asked to done) p50, p95 and max, the median hold, the service time — the answering phase's wall time per
answer, i.e. how long the store is one answer's, with opening, closing and handing over — and the fair share:
participants × the service time, what an answer waits if every other participant goes once before it; then max
latency / fair share. Targets (issue 56): max latency ≤ 3 × the fair share; median hold per answer ≤ 25 ms.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd

from backend.actions import studies as study_actions
from backend.identity import links
from backend.imports import datasets as user_datasets
from backend.imports.files import read
from backend.store import studies as store_studies
from backend.store.access import session
from backend.studies import collection

CONDITIONS = ("a", "b", "c", "d")
DESIGN = """
name: load-study
dataset: load-items
item: item
condition: variant
assignment: latin
order: {seed: 5}
text: "{input}"
question: "How certain is the speaker that {hypothesis}?"
criterion: certainty
scale: {kind: slider, min: 0, max: 1}
"""


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1] if len(values) > 1 else values[0]


def build(folder: Path, participants: int, items: int) -> tuple[Path, list[str]]:
    """A new store with an item set, the study over it and one link per participant; the store and the tokens."""
    store = folder / "lab.duckdb"
    rows = [
        {"id": f"i{i}-{c}", "premise": f"Speaker {i} says ({c}).", "hypothesis": f"fact {i} holds", "label": "E",
         "item": f"i{i}", "variant": c}
        for i in range(items) for c in CONDITIONS
    ]  # fmt: skip
    options = user_datasets.DatasetOptions(name="load-items", task="nli", columns={"example_id": "id"})
    bundle, _ = user_datasets.check(read(pd.DataFrame(rows), name="items.csv"), options)
    with session(store, create=True) as con:
        user_datasets.save(con, bundle)
        study = collection.create(con, DESIGN)
        made = [
            links.create(con, store, f"p{n:03d}", collection.object_of(study), 1, by="bench")
            for n in range(participants)
        ]
    return store, [m.token for m in made]


def participate(store: Path, token: str, barrier) -> list[tuple[float, float, float, float]]:
    """One participant through their link: join, wait for everyone to have joined, then every trial, one session
    per answer; (asked, entered, answered, done) perf_counter times each (one clock for every process on Linux)."""
    with session(store) as con:
        who = links.opened(con, store, token)
        study_actions.join(con, "load-study", actor=who)
        trials = len(store_studies.participant(con, "load-study", who.id)["trials"])
    barrier.wait()
    timings = []
    for position in range(trials):
        asked = time.perf_counter()
        with session(store) as con:
            entered = time.perf_counter()
            study_actions.answer(con, "load-study", position, 0.5, actor=who, then=False)  # as the page asks
            answered = time.perf_counter()
        timings.append((asked, entered, answered, time.perf_counter()))
    return timings


def _child(store: Path, token: str, barrier, out) -> None:
    out.put(participate(store, token, barrier))


def run(store: Path, tokens: list[str], mode: str) -> list[tuple[float, float, float, float]]:
    timings: list = []
    if mode == "threads":
        results: list = [None for _ in tokens]
        barrier = threading.Barrier(len(tokens))

        def one(n: int) -> None:
            try:
                results[n] = participate(store, tokens[n], barrier)
            except Exception as exc:  # reported below: a lost participant is a failed benchmark
                results[n] = exc
                barrier.abort()

        threads = [threading.Thread(target=one, args=(n,)) for n in range(len(tokens))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for found in results:
            if isinstance(found, Exception):
                raise found
            timings += found
    else:
        context = multiprocessing.get_context("spawn")
        out, barrier = context.Queue(), context.Barrier(len(tokens))
        processes = [context.Process(target=_child, args=(store, token, barrier, out)) for token in tokens]
        for process in processes:
            process.start()
        for _ in processes:
            timings += out.get()
        for process in processes:
            process.join()
    return timings


# Threads of one process share the open store: they enter the session at once and queue inside it, for the
# process's write lock (writer.WRITE_LOCK), so their "hold" is mostly that queue; their service time is the hold.
QUEUED = "; threads queue inside the session for the process's write lock, so this is mostly waiting"


def report(store: Path, timings: list[tuple[float, float, float, float]], participants: int, items: int, mode: str):
    with session(store) as con:
        stored = len(store_studies.responses(con, "load-study"))
    latency = [(done - asked) * 1000 for asked, _, _, done in timings]
    hold = statistics.median((answered - entered) * 1000 for _, entered, answered, _ in timings)
    phase = max(t[3] for t in timings) - min(t[0] for t in timings)
    service = phase * 1000 / len(timings)
    fair = participants * service
    print(
        f"{mode}: {stored:,} answers stored of {participants * items:,} expected in {phase:.1f} s; latency p50 "
        f"{statistics.median(latency):.0f} ms, p95 {p95(latency):.0f} ms, max {max(latency):.0f} ms; median hold "
        f"{hold:.1f} ms (target ≤ 25{QUEUED if mode == 'threads' else ''}); service {service:.1f} ms per answer; "
        f"fair share {fair:.0f} ms; max latency / "
        f"fair share {max(latency) / fair:.2f} (target ≤ 3)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=50)
    parser.add_argument("--items", type=int, default=12, help="target items (a multiple of 4)")
    parser.add_argument("--modes", nargs="+", default=["threads", "processes"], choices=["threads", "processes"])
    args = parser.parse_args()
    for mode in args.modes:
        with tempfile.TemporaryDirectory() as folder:
            store, tokens = build(Path(folder), args.participants, args.items)
            report(store, run(store, tokens, mode), args.participants, args.items, mode)


if __name__ == "__main__":
    main()
