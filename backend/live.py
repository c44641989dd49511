"""Live single queries: the batch runner's code path on one input, cached and stored.

Each answer is cached in memory by (model, task, retriever, k, input) and stored as a row of a
live run (`live/<model>/<task>[/<retriever>@<k>]`, status 'live'), so anything asked once can be
found and compared later. Inputs are length-bounded with an error naming the field.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone

import duckdb
import pandas as pd

from backend import registry, runs
from backend.models.output import Output
from backend.store.writer import store_live

MAX_CHARS = {"question": 1000, "premise": 4000, "hypothesis": 1000}
CACHE_SIZE = 512


@dataclass(frozen=True)
class Query:
    model: str
    task: str                 # nli | detect | qa | write
    question: str = ""        # detect, qa, write
    premise: str = ""         # nli
    hypothesis: str = ""      # nli
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

    def request(self) -> runs.Request:
        return runs.Request(model=self.model, dataset="live", task=self.task, retriever=self.retriever, k=self.k)


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


def _runner(con: duckdb.DuckDBPyConnection, request: runs.Request, retrievers: dict | None) -> runs.Runner:
    """The shared runner for a request; built outside the lock so a slow model load blocks no other query."""
    with _LOCK:
        if request in _RUNNERS:
            return _RUNNERS[request]
    built = runs.Runner(con, request, retrievers)  # models are loaded once per process (loading.get)
    with _LOCK:
        return _RUNNERS.setdefault(request, built)


def ask(con: duckdb.DuckDBPyConnection, query: Query, retrievers: dict | None = None, store: bool = True) -> Answer:
    """Answer one query (from the cache when asked before) and store it as a live-run row."""
    query.validate()
    with _LOCK:
        if query in _CACHE:
            _CACHE.move_to_end(query)
            return replace(_CACHE[query], cached=True)
    request = query.request()
    runner = _runner(con, request, retrievers)
    rows = pd.DataFrame([{"example_id": query.example_id(), "input": query.premise or query.question,
                          "hypothesis": query.hypothesis or None}])
    started = time.perf_counter()
    output = runner(rows)[0]
    latency = 1000 * (time.perf_counter() - started)
    run_id = "live/" + request.run_id().removeprefix("live/").removesuffix("/all")
    answer = Answer(output, latency, str(getattr(runner.model, "device", "cpu")), False, run_id)
    if store:
        _store(con, runner, request, run_id, query, answer)
    with _LOCK:
        _CACHE[query] = answer
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return answer


def _store(con, runner: runs.Runner, request: runs.Request, run_id: str, query: Query, answer: Answer) -> None:
    """The answer as this example's row of the live run, in one transaction (retried once if another
    session created the run or answered the same input at the same moment)."""
    row = {**runs.run_row(request, runner), "run_id": run_id, "source": "live"}
    predictions, retrievals = runs.output_rows(run_id, [query.example_id()], [answer.output], answer.latency_ms / 1000)
    asked = datetime.now(timezone.utc).replace(tzinfo=None).isoformat(timespec="seconds")
    predictions[0]["text"] = {**(predictions[0]["text"] or {}), "asked_at": asked,
                              "input": {k: v for k, v in asdict(query).items() if v}}
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
    retriever: str = "none"   # none | optional | required
    available: bool = True
    remedy: str = ""
    quality: str = ""


ENGINES = {  # (model task) → [(run task, label, retriever use)]
    "detect": [("detect", "false-premise detection (question only)", "none")],
    "nli": [("detect", "false-premise detection by NLI over the retrieved passages", "required")],
    "generate": [("detect", "false-premise detection (yes/no from the next-token logits)", "none"),
                 ("qa", "short answer (over the passages when a retriever is chosen)", "optional"),
                 ("write", "presupposition and correction", "none")],
}


def engines(mode: str) -> list[Engine]:
    """What can be asked of a question (`mode` 'question') or a premise/hypothesis pair ('nli'), by model."""
    if mode not in ("question", "nli"):
        raise ValueError(f"mode: {mode!r}; expected 'question' or 'nli'")
    found = []
    for spec in registry.specs().values():
        available, line = registry.status(spec)
        remedy = "" if available else line.split(": ", 1)[-1]
        if mode == "nli":
            options = [("nli", "entailment: E / N / C", "none")] if spec.task == "nli" else []
        else:
            options = ENGINES.get(spec.task, [])
        found += [Engine(spec.name, task, label, use, available, remedy, spec.quality) for task, label, use in options]
    return found


def history(con: duckdb.DuckDBPyConnection, limit: int = 50) -> pd.DataFrame:
    """The latest stored live queries, newest first: when, run, input, label, answer, latency."""
    return con.execute("""
        SELECT p.text->>'$.asked_at' AS asked_at, r.run_id, r.model_id, r.task,
               coalesce(p.text->>'$.input.question', p.text->>'$.input.premise') AS input,
               p.text->>'$.input.hypothesis' AS hypothesis, p.label, p.answer, p.latency_ms, p.error
        FROM predictions p JOIN runs r USING (run_id)
        WHERE r.source = 'live' ORDER BY asked_at DESC NULLS LAST, p.run_id LIMIT $n
    """, {"n": limit}).df()


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()
        _RUNNERS.clear()
