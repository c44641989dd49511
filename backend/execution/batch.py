"""A batch run: plan it, execute it here or on Ray (`executors`), and write each chunk as it completes.

`predict(store, Request(...))` is what `python -m backend predict`, the Studio's jobs, training
recipes and the notebook API call; `runs` holds what a run is (request, plan, runner, rows).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import duckdb
import numpy as np
from tqdm import tqdm

from backend.execution import executors
from backend.execution.runs import Request, plan, run_row
from backend.store.access import StoreRef, opener
from backend.store.writer import append_predictions, finish_run, start_run

log = logging.getLogger(__name__)


def predict(
    store: StoreRef,
    request: Request,
    retrievers: dict | None = None,
    progress: bool = True,
    engine: str = "local",
    address: str | None = None,
    max_cost: float | None = None,
    allowed: Callable[[duckdb.DuckDBPyConnection], object] | None = None,
) -> str:
    """Run (or resume) a batch run and return its id: plan, execute (here, or on Ray with
    `engine="ray"`), write each chunk in one transaction as it completes.

    `allowed(con)`: asked before each chunk is written (the starter's role, read again: `permissions.check`,
    handed down by whoever started the job); what it raises stops the run, 'interrupted', before that chunk.

    `store` is an open connection (held throughout) or a store path: then the store is opened only to
    read the plan and to write each chunk, so the dashboard and other commands use it during the run.
    A fault that stops the run (`RunStopped`: a server down, a budget reached) leaves it 'interrupted'
    with what was done stored, and propagates; the same request resumes it. `max_cost` (USD) bounds
    what this call may spend on an endpoint.
    """
    open_store = opener(store)
    the_plan = plan(store, request)
    executor = executors.executor(
        engine, the_plan, retrievers, address, max_cost
    )  # the model loads with the store closed
    request, run_id = the_plan.request, the_plan.run_id
    with open_store() as con:
        start_run(
            con,
            run_row(
                request, executor.spec, executor.strategy, executor.device, the_plan.origin, engine, executor.prompt
            ),
        )
    todo = the_plan.todo
    log.info("%s: %d examples, %d already done (%s)", run_id, len(the_plan.rows), len(the_plan.done), engine)
    started, status = time.perf_counter(), "interrupted"
    try:
        with tqdm(total=len(todo), desc=run_id, unit="ex", disable=not progress) as bar:
            meter = Meter()
            for predictions, retrievals in executor.map(run_id, the_plan.chunks()):
                with open_store() as con:  # writing: one transaction per chunk, on the driver only
                    if allowed is not None:
                        allowed(con)
                    append_predictions(con, predictions, retrievals)
                bar.update(len(predictions))
                bar.set_postfix(meter.add(predictions, time.perf_counter() - started), refresh=False)
        status = "complete"
    finally:
        executor.close()
        with open_store() as con:
            finish_run(con, run_id, status, time.perf_counter() - started)
    return run_id


class Meter:
    """The progress line of a run: generated tokens/s and cost (cached answers excluded), latency p50/p95,
    parse problems and errors by kind, from the stored rows (so it reads the same whichever engine
    executed them)."""

    def __init__(self):
        self.tokens = self.cost = 0.0
        self.latencies: list[float] = []
        self.problems: dict[str, int] = {}

    def add(self, predictions: list[dict], seconds: float) -> dict:
        for row in predictions:
            text = row.get("text") or {}
            if not text.get("cached"):  # a cached answer was not generated now: it costs no time, tokens or money
                self.tokens += text.get("tokens_out", 0)
                self.cost += text.get("cost", 0.0)
            if row.get("latency_ms") is not None:
                self.latencies.append(row["latency_ms"])
            kind = (row.get("error") or "").split(":", 1)[0] or (
                text.get("parse") if text.get("parse") not in (None, "ok") else ""
            )
            if kind:
                self.problems[kind] = self.problems.get(kind, 0) + 1
        line = (
            {"p50_ms": f"{np.percentile(self.latencies, 50):.0f}", "p95_ms": f"{np.percentile(self.latencies, 95):.0f}"}
            if self.latencies
            else {}
        )
        if self.tokens:
            line |= {"tok/s": f"{self.tokens / max(seconds, 1e-9):.1f}", "cost": f"${self.cost:.4f}"}
        return line | self.problems
