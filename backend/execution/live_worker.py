"""The process that runs live models for the dashboard, apart from the pages.

A model's forward pass (and a generator's token loop) is partly Python, so in the dashboard's own
process it holds the interpreter lock the pages need to render, whatever its thread's priority: with
five people asking, every Explore rerun took 3-5 times as long (BENCHMARKS.md, issue 12). So live
batches run here, in one spawned process at a lower CPU priority ($PLAB_LIVE_NICE, default 10) with
at most $PLAB_LIVE_THREADS torch threads, and the pages keep the dashboard's process to themselves.

The process loads each model (and, for retrieval, the saved indexes) once, opening the store only to
read passages, like any terminal command. It starts on the first live question (a few seconds to
import torch) and stops with the dashboard; if it dies, the question says so and the next one starts
a fresh process. `backend.execution.live` decides when to use it (a store given by path) and keeps the queue.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pandas as pd
import torch

from backend.execution import runs
from backend.models.output import Output
from backend.retrieval.index import load_all
from backend.store.access import session

ENV_PREFIXES = ("PLAB_", "HF_", "TRANSFORMERS_")  # what the process must see as the asking process does

_POOL: ProcessPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
_RUNNERS: dict[tuple, runs.Runner] = {}  # in the worker process


class WorkerStopped(RuntimeError):
    """The live worker process died while answering (out of memory, killed); the next question starts a new one."""


def enabled(store) -> bool:
    """Live answers for a store given by path run in the worker process unless $PLAB_LIVE_WORKER=thread
    (an open connection cannot be handed to another process: those answer in a thread here)."""
    return isinstance(store, (str, Path)) and os.environ.get("PLAB_LIVE_WORKER", "process") != "thread"


def answer(request: runs.Request, store: Path | str, rows: list[dict]) -> tuple[list[Output], dict]:
    """Answer a batch in the worker process: (outputs, the live run's row as `runs.run_row` makes it)."""
    env = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)}
    try:
        return _pool().submit(_answer, request, str(store), env, rows).result()
    except BrokenProcessPool:
        shutdown()
        raise WorkerStopped(
            "the live worker process stopped while answering (out of memory, or killed); ask again: a new one starts"
        ) from None


def pid() -> int | None:
    """The worker process's id, once started (for tests and the benchmark)."""
    with _POOL_LOCK:
        processes = list(getattr(_POOL, "_processes", {}) or {})
    return processes[0] if processes else None


def shutdown() -> None:
    global _POOL
    with _POOL_LOCK:
        pool, _POOL = _POOL, None
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)


def _pool() -> ProcessPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            nice, threads = int(os.environ.get("PLAB_LIVE_NICE", "10")), live_threads()
            _POOL = ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("spawn"), initializer=_start, initargs=(nice, threads)
            )
        return _POOL


def live_threads() -> int:
    """Torch threads for live answers ($PLAB_LIVE_THREADS; default: all cores but one, for the pages)."""
    return max(1, int(os.environ.get("PLAB_LIVE_THREADS", (os.cpu_count() or 2) - 1)))


# ---------------------------------------------------------------- in the worker process


def _start(nice: int, threads: int) -> None:
    try:
        os.nice(nice)
    except OSError:  # not allowed: run at the same priority
        pass
    torch.set_num_threads(threads)


def _answer(request: runs.Request, store: str, env: dict, rows: list[dict]) -> tuple[list[Output], dict]:
    os.environ.update(env)
    key = (request, store, tuple(sorted(env.items())))
    runner = _RUNNERS.get(key)
    if runner is None:
        with session(store) as con:  # only to read passages and load saved indexes, like a terminal command
            retrievers = None
            if request.retriever:
                retrievers = load_all(con)
            runner = _RUNNERS[key] = runs.Runner(con, request, retrievers)
    return runner(pd.DataFrame(rows)), runs.runner_row(runner)
