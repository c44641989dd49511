"""Live single queries: the batch runner's code path on one input, cached and stored.

Each answer is cached in memory by (model, task, retriever, k, input) and stored as a row of a
live run (`live/<model>/<task>[/<retriever>@<k>]`, status 'live'), so anything asked once can be
found and compared later. Inputs are length-bounded with an error naming the field.

Questions are answered through one bounded queue per model request (`ModelQueue`): one thread
takes what is waiting (up to BATCH queries from any sessions) and has it answered as one batch, in
the worker process (`backend.execution.live_worker`, for a store given by path: the dashboard) or in that
thread (an open connection: a notebook), with at most $PLAB_LIVE_THREADS torch threads at a lower CPU
priority, so six people asking at once neither run six models side by side nor starve the pages. A
full queue says so at once (QueueFull); a waiting caller is told its place. The store is opened only to load passages
and to store the answer, never while
the model runs, so terminal commands and other pages are not held up by inference.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from functools import partial

import duckdb
import pandas as pd
import torch

from backend.execution import live_worker, runs
from backend.models import availability, registry
from backend.models.output import Output
from backend.store import queries
from backend.store.access import StoreRef, opener
from backend.store.writer import store_live

MAX_CHARS = {"question": 1000, "premise": 4000, "hypothesis": 1000}
CACHE_SIZE = 512
QUEUE_MAX = 32  # questions waiting per model before new ones are turned away
BATCH = 8  # questions from any sessions answered together


class QueueFull(ValueError):
    """Too many questions are waiting for this model; ask again shortly."""


@dataclass(frozen=True)
class Query:
    model: str
    task: str  # nli | detect | qa | write
    question: str = ""  # detect, qa, write
    premise: str = ""  # nli
    hypothesis: str = ""  # nli
    retriever: str | None = None
    k: int = 5

    def validate(self) -> None:
        fields = ("premise", "hypothesis") if self.task == "nli" else ("question",)
        for name in fields:
            value = getattr(self, name).strip()
            if not value:
                raise ValueError(f"{name}: empty; type a {name} (task {self.task} needs {' and '.join(fields)})")
            if len(value) > MAX_CHARS[name]:
                raise ValueError(f"{name}: {len(value):,} characters; at most {MAX_CHARS[name]:,} are allowed")

    def example_id(self) -> str:
        text = json.dumps([self.question, self.premise, self.hypothesis])
        return "live-" + hashlib.sha1(text.encode()).hexdigest()[:16]

    def row(self) -> dict:
        """The query as the runner's input row."""
        return {
            "example_id": self.example_id(),
            "input": self.premise or self.question,
            "hypothesis": self.hypothesis or None,
        }

    def request(self) -> runs.Request:
        """The live run's request; a generator's names its (default) prompt template, so a new template
        version starts a new live run."""
        request = runs.Request(model=self.model, dataset="live", task=self.task, retriever=self.retriever, k=self.k)
        return runs.with_template(request, registry.spec(self.model))


@dataclass(frozen=True)
class Answer:
    output: Output
    latency_ms: float
    device: str
    cached: bool
    run_id: str


_CACHE: OrderedDict[Query, Answer] = OrderedDict()
_RUNNERS: dict[runs.Request, runs.Runner] = {}
_LOCK = threading.Lock()

Compute = Callable[[list[dict]], "tuple[list[Output], dict]"]  # a batch's rows → (outputs, the live run's row)


def _runner(con: duckdb.DuckDBPyConnection, request: runs.Request, retrievers: dict | None) -> runs.Runner:
    """The shared runner for a request; built outside the lock so a slow model load blocks no other query."""
    with _LOCK:
        if request in _RUNNERS:
            return _RUNNERS[request]
    built = runs.Runner(con, request, retrievers)  # models are loaded once per process (loading.get)
    with _LOCK:
        return _RUNNERS.setdefault(request, built)


def _in_thread(runner: runs.Runner) -> Compute:
    """Answer batches in this process, with the torch threads capped."""

    def compute(rows: list[dict]):
        with _threads(live_worker.live_threads()):
            return runner(pd.DataFrame(rows)), runs.runner_row(runner)

    return compute


class ModelQueue:
    """One model request's waiting questions and the worker thread that answers them in batches."""

    def __init__(self, name: str, compute: Compute, lower_priority: bool):
        self.name, self.compute, self.lower_priority = name, compute, lower_priority
        self.waiting: queue.Queue = queue.Queue(maxsize=QUEUE_MAX)
        self.pending: list[Future] = []  # submitted and not answered, in order
        self.lock = threading.Lock()
        threading.Thread(target=self._work, daemon=True, name=f"live-{name}").start()

    def submit(self, row: dict) -> Future:
        future: Future = Future()
        with self.lock:
            try:
                self.waiting.put_nowait((row, future))
            except queue.Full:
                raise QueueFull(
                    f"{self.name}: {QUEUE_MAX} questions are waiting for this model; ask again in a minute"
                ) from None
            self.pending.append(future)
        return future

    def ahead(self, future: Future) -> int:
        """Questions submitted before this one and not yet answered."""
        with self.lock:
            return self.pending.index(future) if future in self.pending else 0

    def _work(self) -> None:
        if self.lower_priority:  # the model runs in this thread: lower its priority (the worker process does its own)
            _lower_priority()
        while True:
            batch = [self.waiting.get()]
            while len(batch) < BATCH:
                try:
                    batch.append(self.waiting.get_nowait())
                except queue.Empty:
                    break
            started = time.perf_counter()
            try:
                outputs, row = self.compute([row for row, _ in batch])
                seconds = time.perf_counter() - started
                for (_, future), output in zip(batch, outputs):
                    future.set_result((output, 1000 * seconds, row))
            except Exception as exc:  # noqa: BLE001 - every waiting caller hears why
                for _, future in batch:
                    future.set_exception(exc)
            finally:
                with self.lock:
                    self.pending = [f for f in self.pending if not f.done()]


def _lower_priority() -> None:
    """Run this thread (and, with one torch thread, the model's arithmetic) at a lower CPU priority, so
    the pages' queries and renders go first on a small machine ($PLAB_LIVE_NICE, default 10; Linux
    applies a nice value per thread)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), int(os.environ.get("PLAB_LIVE_NICE", "10")))
    except (AttributeError, OSError, ValueError):  # not Linux, or not allowed: run at normal priority
        pass


_CAP = {"active": 0, "before": 0}
_CAP_LOCK = threading.Lock()


class _threads:
    """Cap torch's intra-op threads while live batches run in this process (process-wide: set by the
    first batch to start, restored by the last to finish)."""

    def __init__(self, n: int):
        self.n = n

    def __enter__(self):
        with _CAP_LOCK:
            if _CAP["active"] == 0:
                _CAP["before"] = torch.get_num_threads()
                torch.set_num_threads(min(self.n, _CAP["before"]))
            _CAP["active"] += 1

    def __exit__(self, *exc):
        with _CAP_LOCK:
            _CAP["active"] -= 1
            if _CAP["active"] == 0:
                torch.set_num_threads(_CAP["before"])


_QUEUES: dict[tuple, ModelQueue] = {}


def _queue(store: StoreRef, request: runs.Request, retrievers: dict | None) -> ModelQueue:
    """The request's queue: answered in the worker process for a store given by path, else in a thread here."""
    if live_worker.enabled(store):
        key = (request, str(store))
        make = lambda: ModelQueue(request.model, partial(live_worker.answer, request, store), False)  # noqa: E731
    else:
        key = (request, "here")
        with _LOCK:
            runner = _RUNNERS.get(request)
        if runner is None and key not in _QUEUES:
            with opener(store)() as con:
                runner = _runner(con, request, retrievers)
        make = lambda: ModelQueue(request.model, _in_thread(runner), True)  # noqa: E731
    with _LOCK:
        if key not in _QUEUES:
            _QUEUES[key] = make()
        return _QUEUES[key]


def ask(
    store: StoreRef,
    query: Query,
    retrievers: dict | None = None,
    save: bool = True,
    waiting: Callable[[int], None] | None = None,
    on_text: Callable[[str], None] | None = None,
    act: Callable[[duckdb.DuckDBPyConnection], AbstractContextManager] | None = None,
) -> Answer:
    """Answer one query (from the cache when asked before) and store it as a live-run row.

    `store` is an open connection or the store's path (then it is opened only to read passages and to
    store the answer, and the model runs in the worker process, `backend.execution.live_worker`; `retrievers`
    are then its own, loaded from the saved indexes). `waiting(n)` is called about every 0.3 s with
    the questions ahead in the queue. `on_text(text so far)` streams an endpoint's answer as it is
    written; an endpoint asked so is answered in this thread (the server does the work: no queue). `act(con)`: the
    act the answer is stored in, handed down by its door (`actions.live.ask`: who asks, checked before any model
    runs and audited with the answer)."""
    query.validate()
    return _ask(store, query, retrievers, save, waiting, on_text, act or (lambda con: nullcontext()))


def _ask(store: StoreRef, query: Query, retrievers, save: bool, waiting, on_text, act) -> Answer:
    with _LOCK:
        if query in _CACHE:
            _CACHE.move_to_end(query)
            return replace(_CACHE[query], cached=True)
    request = query.request()
    if on_text is not None and registry.spec(query.model).is_endpoint:
        output, latency, row = _streamed(store, request, retrievers, query, on_text)
    else:
        model_queue = _queue(store, request, retrievers)
        future = model_queue.submit(query.row())
        while not future.done():
            if waiting is not None:
                waiting(model_queue.ahead(future))
            try:
                future.exception(timeout=0.3)
            except TimeoutError:
                continue
        output, latency, row = future.result()
    run_id = "live/" + request.run_id().removeprefix("live/").removesuffix("/all")
    answer = Answer(output, latency, row["device"], False, run_id)
    if save:
        with opener(store)() as con, act(con):
            _store(con, row, query, answer)
    with _LOCK:
        _CACHE[query] = answer
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return answer


def _streamed(
    store: StoreRef, request: runs.Request, retrievers: dict | None, query: Query, on_text: Callable[[str], None]
) -> tuple[Output, float, dict]:
    """An endpoint's answer to one query, streamed, in this thread: (output, ms, the live run's row)."""
    with _LOCK:
        runner = _RUNNERS.get(request)
    if runner is None:
        with opener(store)() as con:
            runner = _runner(con, request, retrievers)
    started = time.perf_counter()
    [output] = runner(pd.DataFrame([query.row()]), on_text=on_text)
    return output, 1000 * (time.perf_counter() - started), runs.runner_row(runner)


def _store(con, run_row: dict, query: Query, answer: Answer) -> None:
    """The answer as this example's row of the live run, in one transaction (retried once if another
    session created the run or answered the same input at the same moment)."""
    run_id = answer.run_id
    row = {**run_row, "run_id": run_id, "source": "live"}
    predictions, retrievals = runs.output_rows(run_id, [query.example_id()], [answer.output], answer.latency_ms / 1000)
    asked = datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="seconds")
    predictions[0]["text"] = {
        **(predictions[0]["text"] or {}),
        "asked_at": asked,
        "input": {k: v for k, v in asdict(query).items() if v},
    }
    try:
        store_live(con, row, predictions, retrievals)
    except (duckdb.ConstraintException, duckdb.TransactionException):
        store_live(con, row, predictions, retrievals)


@dataclass(frozen=True)
class Engine:
    """One thing the playground can ask: a registered model doing a task, maybe over retrieved passages."""

    model: str
    task: str
    label: str
    retriever: str = "none"  # none | optional | required
    available: bool = True
    remedy: str = ""
    quality: str = ""
    endpoint: bool = False  # an OpenAI-compatible server: its answer is streamed


ENGINES = {  # (model task) → [(run task, label, retriever use)]
    "detect": [("detect", "false-premise detection (question only)", "none")],
    "nli": [("detect", "false-premise detection by NLI over the retrieved passages", "required")],
    "generate": [
        ("detect", "false-premise detection (prompted: yes / no, with P from the first token)", "none"),
        ("qa", "short answer (over the passages when a retriever is chosen)", "optional"),
        ("write", "presupposition and correction", "none"),
    ],
}
PROMPTED_NLI = ("nli", "entailment by prompt: yes / maybe / no → E / N / C", "none")


def engines(mode: str) -> list[Engine]:
    """What can be asked of a question (`mode` 'question') or a premise/hypothesis pair ('nli'), by model."""
    if mode not in ("question", "nli"):
        raise ValueError(f"mode: {mode!r}; expected 'question' or 'nli'")
    found = []
    for spec in registry.specs().values():
        available, line = availability.status(spec)
        remedy = "" if available else line.split(": ", 1)[-1]
        if mode == "nli":
            options = (
                [("nli", "entailment: E / N / C", "none")]
                if spec.task == "nli"
                else [PROMPTED_NLI]
                if spec.task == "generate"
                else []
            )
        else:
            options = ENGINES.get(spec.task, [])
        options = [o for o in options if spec.task != "generate" or o[0] in spec.tasks]  # an endpoint's `tasks`
        found += [
            Engine(spec.name, task, label, use, available, remedy, spec.quality, spec.is_endpoint)
            for task, label, use in options
        ]
    return found


def history(con: duckdb.DuckDBPyConnection, limit: int = 50) -> pd.DataFrame:
    """The latest stored live queries, newest first: when, run, input, label, answer, latency."""
    return queries.live_answers(con, limit)


def clear_cache() -> None:
    """Forget cached answers, loaded runners and queues, and stop the worker process (the queues' threads
    stay, idle)."""
    with _LOCK:
        _CACHE.clear()
        _RUNNERS.clear()
        _QUEUES.clear()
    live_worker.shutdown()
