"""Judge runs: a registered generator (local or an endpoint) scores another run's stored outputs with a
versioned rubric template (`task: judge` in backend/models/prompts/templates/), without re-running it.

`judge(store, JudgeRequest(...))` plans from the store once (the judged run's error-free outputs with
their gold data), asks the judge one prompt per (item, criterion, sample) in chunks, parses each
response strictly (`parsers.judgement`: a score that cannot be read is stored as unparsed, never
guessed) and writes each judgement as its answer comes back (`Arrivals`: every page counts it then). Like a
batch run it is resumable (the same request
skips what was judged), goes through the endpoint's response cache and spend caps, and shows progress.
Each score's source is `judge:<model>:<rubric@version>`.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb
import pandas as pd
from tqdm import tqdm

from backend.execution.runs import provenance
from backend.metrics.rubrics import RUBRIC
from backend.models import loading, prompted, registry
from backend.models.endpoints.spend import Budget
from backend.models.output import Completion, readable
from backend.models.prompts import parsers, templates
from backend.store import judgements as store_judgements
from backend.store import ratings as store_ratings
from backend.store import runs as store_runs
from backend.store.access import StoreRef, opener

log = logging.getLogger(__name__)
_VERDICT_PREFIX = re.compile(
    r"\A\s*(the\s+)?(better\s+)?answer\s+is\s*:?\s*[\"']?", re.IGNORECASE
)  # "The answer is "tie""
MAX_TOKENS = 128  # the score first, then a reason: a sentence or two
GOLD = ("gold_answers", "gold_presuppositions", "gold_corrections")


@dataclass(frozen=True)
class JudgeRequest:
    model: str  # a registered generator
    run: str  # the judged run
    rubric: str  # a judge template: name[@version]
    samples: int = 1  # > 1: that many sampled responses per item and criterion (self-consistency)
    temperature: float | None = None  # default: the model's (0 for endpoints); SAMPLE_TEMPERATURE when sampled
    limit: int | None = None  # the first N outputs (by example id)
    chunk: int = 16
    versus: str | None = None  # a pairwise judge: run B, compared with `run` (run A) in both orders
    max_tokens: int = MAX_TOKENS  # of each response

    @property
    def sampling_temperature(self) -> float | None:
        if self.samples > 1 and self.temperature is None:
            return prompted.SAMPLE_TEMPERATURE
        return self.temperature

    def source(self, rubric_ref: str) -> str:
        return f"judge:{self.model}:{rubric_ref}"

    def judge_run_id(self, rubric_ref: str) -> str:
        """The judged run, then the judge: `<run>//judge:<model>:<rubric@version>[+n<k>@t<T>][/first<N>]`."""
        sampled = f"+n{self.samples}@t{self.sampling_temperature:g}" if self.samples > 1 else ""
        runs = f"{self.run}//vs//{self.versus}" if self.versus else self.run
        return f"{runs}//{self.source(rubric_ref)}{sampled}" + (f"/first{self.limit}" if self.limit else "")


@dataclass
class JudgePlan:
    request: JudgeRequest
    template: templates.Template
    dataset_id: str
    items: pd.DataFrame  # the judged outputs: example_id, input, gold fields, output_text (pairwise: output_b too)
    bounds: dict[str, tuple[float, float]]  # criterion → (low, high)

    @property
    def judge_run_id(self) -> str:
        return self.request.judge_run_id(self.template.ref)

    def every_key(self) -> list[tuple[str, str, int, str]]:
        """Every (example_id, criterion, sample, position) the run judges, item by item; a pairwise judge
        sees each pair in both orders (AB: run A's output first; BA: run B's first)."""
        positions = ("AB", "BA") if self.template.strategy == "pairwise" else ("",)
        return [
            (example_id, criterion, sample, position)
            for example_id in self.items["example_id"]
            for criterion in self.template.criteria
            for sample in range(self.request.samples)
            for position in positions
        ]


def plan(store: StoreRef, request: JudgeRequest) -> JudgePlan:
    """Read the judged run's outputs and the rubric; refuse a request that cannot be judged, saying why."""
    if request.samples < 1:
        raise ValueError(f"samples must be 1 or more, got {request.samples}")
    spec = registry.spec(request.model)
    if spec.task != "generate":
        raise ValueError(f"{request.model} is a {spec.task} model; a judge must be a generator (task generate)")
    template = templates.get(request.rubric, "judge")
    with opener(store)() as con:
        dataset_id, task = store_runs.field(con, request.run, "dataset_id"), store_runs.field(con, request.run, "task")
        if dataset_id is None:
            raise ValueError(f"no run {request.run!r} in the store; `python -m backend status` lists the runs")
        if task not in template.judges:
            raise ValueError(
                f"rubric {template.name} scores {', '.join(template.judges)} runs; {request.run} is a {task} run. "
                f"Judges for {task}: {[t.name for t in templates.for_task('judge') if task in t.judges]}"
            )
        items = _outputs(con, request.run)
        if (template.strategy == "pairwise") != bool(request.versus):
            raise ValueError(
                f"rubric {template.name} is a {template.strategy} judge: "
                + ("name run B with --versus" if request.versus is None else "it scores one run; leave out --versus")
            )
        if request.versus:
            other = store_runs.field(con, request.versus, "dataset_id")
            if other != dataset_id:
                raise ValueError(f"run B {request.versus!r} is not a run on {dataset_id} (it is on {other})")
            b = _outputs(con, request.versus)[["example_id", "output_text"]]
            items = items.merge(b.rename(columns={"output_text": "output_b"}), on="example_id")
        bounds = store_ratings.numeric_bounds(con)
    if items.empty:
        raise ValueError(
            f"run {request.run} has no error-free outputs to judge"
            + (" on the items run B answered" if request.versus else "")
        )
    items = items.head(request.limit) if request.limit else items
    return JudgePlan(request, template, dataset_id, items, {c: bounds[c] for c in template.criteria})


def _outputs(con, run_id: str) -> pd.DataFrame:
    """A run's error-free outputs with their gold data, and what the model wrote as people read it."""
    items = store_ratings.targets(con, run_id)
    parts = ("presupposition", "correction", "answer", "label", "generation")
    task = store_runs.field(con, run_id, "task")
    items["output_text"] = [readable(*row, task=task) for row in zip(*(items[name] for name in parts))]
    return items


def _context(plan: JudgePlan, item: dict, criterion: str, position: str) -> dict:
    low, high = plan.bounds[criterion]
    shown = (item["output_text"], item.get("output_b")) if position != "BA" else (item["output_b"], item["output_text"])
    return {
        "item": {
            "question": item["input"] or "",
            "premise": item["input"] or "",
            "hypothesis": item.get("hypothesis") or "",
            "gold_label": item.get("gold_label") or "",
            **{name: list(item[name]) if item.get(name) is not None else [] for name in GOLD},
        },
        "criterion": {
            "name": criterion,
            "low": int(low),
            "high": int(high),
            "levels": [[score, meaning] for score, meaning in RUBRIC[criterion].items()],
        },
        "output": item["output_text"],
        "output_a": shown[0],
        "output_b": shown[1],
    }


def parse(template: templates.Template, text: str, low: float, high: float) -> parsers.Judged:
    """A response's score: a rubric with verbalisers (a binary judge: yes → 1, no → 0) is read by its first
    word, as a classifier's answer is (`parsers.label`); otherwise a number (`parsers.judgement`)."""
    if not template.verbalisers:
        return parsers.judgement(text, int(low), int(high))
    said = parsers.label(text, template.verbalisers)
    return parsers.Judged(said.status, float(said.label) if said.label is not None else None, _after_first_word(text))


def _after_first_word(text: str) -> str | None:
    """The reason of an answer-first reply ("Yes, because …" → "because …")."""
    rest = text.strip().split(None, 1)
    return (rest[1].lstrip(" ,.:-").strip() or None) if len(rest) > 1 else None


def _verdict(template: templates.Template, text: str, position: str) -> tuple[str | None, parsers.Judged]:
    """A pairwise judge's verdict in run terms (A, B or tie, whichever order the answers were shown in)."""
    stated = _VERDICT_PREFIX.sub("", text, count=1)
    said = parsers.label(stated, template.verbalisers)
    run = {"first": position[0], "second": position[1], "tie": "tie"}.get(said.label)
    return run, parsers.Judged(said.status, None, _after_first_word(stated))


def _row(plan: JudgePlan, key: tuple, prompt: str, done: Completion, now) -> dict:
    example_id, criterion, sample, position = key
    verdict = None
    if done.error:
        parsed = parsers.Judged("error")
    elif position:
        verdict, parsed = _verdict(plan.template, done.text, position)
    else:
        parsed = parse(plan.template, done.text, *plan.bounds[criterion])
    return {
        "judge_run_id": plan.judge_run_id,
        "example_id": example_id,
        "criterion": criterion,
        "sample": sample,
        "position": position,
        "value": parsed.value,
        "verdict": verdict,
        "reason": parsed.reason,
        "parse": parsed.status,
        "response": done.text,
        "prompt": prompt,
        "error": done.error,
        "tokens_in": done.tokens_in,
        "tokens_out": done.tokens_out,
        "cost": done.cost,
        "cached": done.cached,
        "latency_ms": done.latency_ms,
        "judged_at": now,
    }


def execute(model, plan: JudgePlan, keys: list[tuple], budget: Budget, on_row=None) -> list[dict]:
    """The judgements of `keys` (example_id, criterion, sample, position): one request per key, samples drawn
    with their own seed; a pure function of the loaded judge and the plan. `on_row(row)` hears each judgement as
    its answer comes back (a judge run stores and counts it then)."""
    items = plan.items.set_index("example_id", drop=False)
    rows, now = [], datetime.now(UTC).replace(tzinfo=None)
    for sample in sorted({k[2] for k in keys}):
        batch = [k for k in keys if k[2] == sample]
        prompts = [plan.template.render_with(**_context(plan, items.loc[k[0]].to_dict(), k[1], k[3])) for k in batch]
        seed = sample if plan.request.samples > 1 else None
        heard = None if on_row is None else (lambda i, a, b=batch, p=prompts: on_row(_row(plan, b[i], p[i], a, now)))
        answers = model.complete(
            prompts, plan.request.max_tokens, plan.request.sampling_temperature, 0, seed, budget, on_done=heard
        )
        rows += [_row(plan, k, p, a, now) for k, p, a in zip(batch, prompts, answers)]
    return rows


def run_row(plan: JudgePlan, spec: registry.ModelSpec) -> dict:
    request = plan.request
    return {
        "judge_run_id": plan.judge_run_id,
        "run_id": request.run,
        "other_run_id": request.versus,
        "dataset_id": plan.dataset_id,
        "model_id": request.model,
        "rubric": plan.template.ref,
        "rubric_sha256": plan.template.sha256,
        "kind": plan.template.strategy,
        "source": request.source(plan.template.ref),
        "samples": request.samples,
        "config": {
            "criteria": list(plan.template.criteria),
            "temperature": request.sampling_temperature,
            "limit": request.limit,
            "max_tokens": request.max_tokens,
            "quality": spec.quality,
            "endpoint": {"base_url": spec.base_url, "model": spec.model} if spec.is_endpoint else None,
            **provenance(),
        },
    }


class Arrivals:
    """Stores each judgement as its answer comes back, so every page that shows the run's progress counts it then
    (issue 64, item 6), asking `allowed` (the starter's role, read again) before each write. A refusal is kept and
    raised by `rest` once the model's call returns (a model's callback cannot stop its batch), and nothing more is
    written after it."""

    def __init__(self, open_store, allowed):
        self.open_store, self.allowed = open_store, allowed
        self.written: set[tuple] = set()
        self.refused: BaseException | None = None

    def store(self, row: dict) -> None:
        if self.refused is not None:
            return
        try:
            self._write([row])
        except BaseException as exc:  # raised by `rest`, in the run's own flow
            self.refused = exc
            return
        self.written.add(_key(row))

    def rest(self, rows: list[dict]) -> None:
        if self.refused is not None:
            raise self.refused
        left = [row for row in rows if _key(row) not in self.written]
        if left:
            self._write(left)

    def _write(self, rows: list[dict]) -> None:
        with self.open_store() as con:
            if self.allowed is not None:
                self.allowed(con)
            store_judgements.append(con, rows)


def _key(row: dict) -> tuple:
    return tuple(row.get(k) for k in ("example_id", "criterion", "sample", "position"))


def judge(
    store: StoreRef,
    request: JudgeRequest,
    progress: bool = True,
    max_cost: float | None = None,
    allowed: Callable[[duckdb.DuckDBPyConnection], object] | None = None,
) -> str:
    """Run (or resume) a judge run and return its id. The store is open only to plan and to write each
    chunk; a fault that stops the run (server down, budget reached) leaves it 'interrupted' with what was
    judged stored, and the same request resumes it. `allowed(con)` is asked before each chunk is written (the
    starter's role, read again); what it raises stops the run there."""
    open_store = opener(store)
    the_plan = plan(store, request)
    model, spec = loading.get(request.model), registry.spec(request.model)
    with open_store() as con:
        done = store_judgements.start(con, run_row(the_plan, spec))
    todo = [k for k in the_plan.every_key() if k not in done]
    per_item = len(the_plan.every_key()) // max(len(the_plan.items), 1)
    chunks = [todo[i : i + request.chunk * per_item] for i in range(0, len(todo), request.chunk * per_item)]
    budget, started, status = Budget(max_cost), time.perf_counter(), "interrupted"
    log.info("%s: %d judgements, %d already done", the_plan.judge_run_id, len(the_plan.every_key()), len(done))
    try:
        with tqdm(total=len(todo), desc=the_plan.judge_run_id, unit="score", disable=not progress) as bar:
            unparsed = cost = 0
            for keys in chunks:
                kept = Arrivals(open_store, allowed)
                rows = execute(model, the_plan, keys, budget, on_row=kept.store)
                kept.rest(rows)  # any the model did not report one by one; a refusal heard midway is raised here
                unparsed += sum(r["parse"] != "ok" for r in rows)
                cost += sum(r["cost"] for r in rows if not r["cached"])
                bar.update(len(rows))
                bar.set_postfix({"unparsed": unparsed, "cost": f"${cost:.4f}"}, refresh=False)
        status = "complete"
    finally:
        with open_store() as con:
            store_judgements.finish(con, the_plan.judge_run_id, status, time.perf_counter() - started)
    return the_plan.judge_run_id
