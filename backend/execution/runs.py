"""Batch runs: a registered model over a dataset, written to the store with provenance.

`predict(con, Request(...))` creates the run as 'running', writes predictions in chunks (each chunk
one transaction), and marks it 'complete' only at the end; an interrupted run stays 'interrupted'
and is resumed by the same request (same run id), skipping the examples already done. Only
complete runs appear in evaluations. An example that fails is stored with its error and does not
stop the run.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import logging
import subprocess
import time
from dataclasses import asdict, dataclass, replace

import duckdb
import pandas as pd

from backend.config import REPO_ROOT
from backend.datasets.catalogue import describe
from backend.models import detect, loading, nli, prompted, registry
from backend.models.endpoints.spend import Budget
from backend.models.output import Output, RunStopped
from backend.models.prompts import demos, templates
from backend.retrieval.folders import index_root
from backend.store import queries
from backend.store.access import StoreRef, opener
from backend.store.passages import corpus_hash

log = logging.getLogger(__name__)
PACKAGES = ("torch", "transformers", "duckdb", "bm25s", "faiss-cpu", "numpy")
# (model task, run task) → strategy; the run task defaults by dataset. A generator (local or an
# endpoint) does every task by prompt (backend.models.prompted, with a template of backend.models.prompts).
STRATEGIES = {
    ("nli", "nli"): "classifier",
    ("nli", "detect"): "nli-retrieval",
    ("detect", "detect"): "classifier",
    **{("generate", task): "prompted" for task in registry.RUN_TASKS},
}
LABELS = {"nli": list(nli.LABELS), "detect": list(detect.LABELS)}  # the order of Output.probs (runs.config.labels)


@dataclass(frozen=True)
class Request:
    model: str
    dataset: str
    task: str | None = None
    split: str | None = None
    retriever: str | None = None
    k: int = 5
    limit: int | None = None
    chunk: int = 64
    template: str | None = None  # prompted runs: name[@version] (default: the task's zero-shot template)
    shots: int | None = None  # few-shot: demonstrations per item (default: the template's)
    samples: int = 0  # > 0: label distribution over N sampled responses (self-consistency)
    temperature: float | None = None

    def resolved_task(self) -> str:
        if self.task is None:
            raise ValueError("the run's task is not set: pass --task, or let predict() take the dataset's task")
        return self.task

    @property
    def sampling_temperature(self) -> float:
        """The temperature `samples` responses are drawn at (the request's, else the default)."""
        return prompted.SAMPLE_TEMPERATURE if self.temperature is None else self.temperature

    def run_id(self) -> str:
        parts = [self.dataset, self.model, self.resolved_task()]
        if self.template:  # the prompt is part of what a run measures: zero-shot and few-shot are two runs
            parts.append(
                self.template
                + (f"+k{self.shots}" if self.shots else "")
                + (f"+n{self.samples}@t{self.sampling_temperature:g}" if self.samples else "")
            )
        if self.retriever:
            parts.append(f"{self.retriever}@{self.k}")
        parts.append(self.split or "all")
        return "/".join(parts) + (f"/first{self.limit}" if self.limit else "")


def strategy(model: registry.ModelSpec, request: Request) -> str:
    key = (model.task, request.resolved_task())
    if key not in STRATEGIES:
        allowed = sorted({f"{m}→{t}" for m, t in STRATEGIES})
        raise ValueError(
            f"model {model.name} ({model.task}) cannot do task {key[1]!r}; model task → run task allowed: {allowed}"
        )
    if STRATEGIES[key] == "nli-retrieval" and not request.retriever:
        raise ValueError(
            f"{model.name} detects false premises by NLI over retrieved passages: pass --retriever bm25|dense|hybrid"
        )
    if model.is_endpoint and key[1] not in model.tasks:
        raise ValueError(
            f"{model.name} is registered for tasks {list(model.tasks)}, not {key[1]!r} (its `tasks` in the registry)"
        )
    if request.retriever and STRATEGIES[key] != "nli-retrieval" and key[1] != "qa":
        raise ValueError(
            f"a {key[1]} run of {model.name} does not read retrieved passages (only QA and NLI-over-passages "
            "detection do): leave out --retriever, so the run's id does not claim retrieval"
        )
    return STRATEGIES[key]


def with_template(request: Request, model: registry.ModelSpec) -> Request:
    """A prompted request with its template resolved to name@version (and few-shot's k), so the run id
    names the exact prompt; other requests as they are."""
    if strategy(model, request) != "prompted":
        if request.template or request.samples:
            raise ValueError(f"{model.name} is not prompted: --template and --samples are for generators and endpoints")
        return request
    task = request.resolved_task()
    template = templates.get(request.template or templates.default(task, bool(request.retriever)), task)
    if template.strategy == "retrieve-then-read" and not request.retriever:
        raise ValueError(f"template {template.name} reads retrieved passages: pass --retriever bm25|dense|hybrid")
    if request.retriever and template.strategy != "retrieve-then-read":
        raise ValueError(
            f"template {template.name} does not read passages: leave out --retriever, or use a "
            "retrieve-then-read template"
        )
    labels = LABELS.get(task)
    if labels and set(template.verbalisers) != set(labels):
        raise ValueError(
            f"template {template.name}: its verbalisers name {sorted(template.verbalisers)}, the task's labels are "
            f"{labels}"
        )
    shots = (
        (request.shots if request.shots is not None else template.shots) if template.strategy == "few-shot" else None
    )
    return replace(request, template=template.ref, shots=shots)


def provenance() -> dict:
    """Code version (git commit, '-dirty' when changed) and the versions of the packages that matter."""
    try:
        commit = (
            subprocess.run(
                ["git", "describe", "--always", "--dirty"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=5
            ).stdout.strip()
            or "unknown"
        )
    except (OSError, subprocess.SubprocessError):
        commit = "unknown"
    versions = {}
    for name in PACKAGES:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[name] = importlib.metadata.version(name)
    return {"code_version": commit, "packages": versions}


class Runner:
    """The loaded model (and retriever) for one request, turning example rows into Outputs."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection | None,
        request: Request,
        retrievers: dict | None = None,
        passages: dict[str, str] | None = None,
        pool: demos.Pool | None = None,
        max_cost: float | None = None,
    ):
        """`passages` (doc id → text) may be given instead of a store connection to read them from; `pool`
        holds a few-shot run's demonstrations; `max_cost` (USD) stops an endpoint run before passing it."""
        self.spec = registry.spec(request.model)
        self.request = with_template(request, self.spec)
        self.strategy = strategy(self.spec, self.request)
        self.template = templates.get(self.request.template) if self.strategy == "prompted" else None
        if self.request.shots and pool is None:
            raise ValueError(
                f"template {self.template.name} is few-shot: it needs a dataset's items to draw "
                "demonstrations from (a batch run over a dataset)"
            )
        self.pool, self.budget = pool, Budget(max_cost)
        self.decoding = prompted.Decoding(temperature=request.temperature, samples=request.samples)
        self.model = loading.get(request.model)
        self.retriever = (retrievers or {}).get(request.retriever) if request.retriever else None
        if request.retriever and self.retriever is None:
            raise ValueError(f"unknown retriever {request.retriever!r}; build them with `python -m backend index`")
        self.passages = passages if passages is not None else queries.passage_texts(con) if request.retriever else {}

    @property
    def device(self) -> str:
        return str(getattr(self.model, "device", "cpu"))

    def __call__(self, rows, on_text=None) -> list[Output]:
        """Outputs for the rows; `on_text(text so far)` streams a prompted model's answer to one row."""
        task, questions = self.request.resolved_task(), list(rows["input"])
        if self.strategy == "prompted":
            return self._prompted(rows, on_text)
        if task == "nli":
            return nli.run(self.model, list(zip(rows["input"], rows["hypothesis"])))
        if task == "detect":
            if self.strategy == "nli-retrieval":
                return detect.with_nli_retrieval(self.model, self.retriever, self.passages, questions, self.request.k)
            return detect.with_classifier(self.model, questions)
        raise ValueError(f"{self.spec.name} cannot do task {task!r} without a prompt")

    def _prompted(self, rows, on_text=None) -> list[Output]:
        items = rows.to_dict("records")
        shown = (
            [self.pool.draw(item["example_id"], self.request.shots, 0).to_dict("records") for item in items]
            if self.request.shots
            else None
        )
        hits = self.retriever.search_many([item["input"] for item in items], self.request.k) if self.retriever else None
        contexts = [[self.passages[h.doc_id] for h in row] for row in hits] if hits else None
        return prompted.run(
            self.model,
            self.template,
            LABELS.get(self.request.resolved_task(), []),
            items,
            shown,
            contexts,
            hits,
            self.decoding,
            self.budget,
            on_text,
        )

    def prompt_config(self) -> dict:
        """What makes a prompted run's prompts reproducible (template, its text's hash, pool, decoding) and
        which server answered; never a key."""
        if self.template is None:
            return {}
        config = {
            "template": self.template.ref,
            "template_sha256": self.template.sha256,
            "strategy": self.template.strategy,
            "shots": self.request.shots,
            "demo_seed": 0,
            "samples": self.request.samples,
            "temperature": self.request.temperature,
            **(self.pool.describe() if self.pool else {}),
        }
        if self.spec.is_endpoint:
            config["endpoint"] = {
                "base_url": self.spec.base_url,
                "model": self.spec.model,
                "prices_per_million": [self.spec.price_in, self.spec.price_out],
            }
        return config


def output_rows(run_id: str, example_ids, outputs: list[Output], seconds: float) -> tuple[list[dict], list[dict]]:
    latency = 1000 * seconds / max(len(outputs), 1)
    predictions = [
        {
            "run_id": run_id,
            "example_id": e,
            "label": o.label,
            "probs": list(o.probs) if o.probs else None,
            "answer": o.answer,
            "text": o.text or None,
            "latency_ms": o.latency_ms if o.latency_ms is not None else latency,
            "error": o.error,
        }
        for e, o in zip(example_ids, outputs)
    ]
    retrievals = [
        {"run_id": run_id, "example_id": e, "rank": h.rank, "doc_id": h.doc_id, "score": h.score}
        for e, o in zip(example_ids, outputs)
        for h in o.passages
    ]
    return predictions, retrievals


def execute(runner: Runner, run_id: str, chunk) -> tuple[list[dict], list[dict]]:
    """Execution: the rows to store for a chunk of examples — a pure function of the loaded model (and
    retriever and passages) and the chunk, with no store connection, so it runs anywhere (a Ray actor).
    If the chunk fails, its examples are predicted one by one and each error is recorded."""
    started = time.perf_counter()
    try:
        return output_rows(run_id, chunk["example_id"], runner(chunk), time.perf_counter() - started)
    except RunStopped:  # the server is down, the key refused, the budget reached: stop, resume later
        raise
    except Exception as exc:  # noqa: BLE001 — a bad example must not stop the run
        log.warning("chunk failed (%s); retrying its %d examples one by one", exc, len(chunk))
    predictions, retrievals = [], []
    for i in range(len(chunk)):
        one, started = chunk.iloc[i : i + 1], time.perf_counter()
        try:
            p, r = output_rows(run_id, one["example_id"], runner(one), time.perf_counter() - started)
        except RunStopped:
            raise
        except Exception as exc:  # noqa: BLE001
            p, r = (
                [{"run_id": run_id, "example_id": one["example_id"].iloc[0], "error": f"{type(exc).__name__}: {exc}"}],
                [],
            )
        predictions, retrievals = predictions + p, retrievals + r
    return predictions, retrievals


def run_row(
    request: Request,
    spec: registry.ModelSpec,
    strategy_name: str,
    device: str,
    origin: dict | None = None,
    engine: str = "local",
    prompt: dict | None = None,
) -> dict:
    """The runs row; `origin` (queries.origin) records which version of the dataset the run saw and
    `engine` where it executed (local or ray: the run id does not depend on it, so a run resumes on either)."""
    labels = LABELS.get(request.resolved_task())
    return {
        "run_id": request.run_id(),
        "dataset_id": request.dataset,
        "task": request.resolved_task(),
        "model_id": spec.name,
        "model_revision": spec.revision,
        "retriever_id": request.retriever,
        "config": {
            **asdict(request),
            "strategy": strategy_name,
            "labels": labels,
            "quality": spec.quality,
            "trained_on": list(registry.trained_on(spec)),
            "dataset_origin": origin or {},
            "engine": engine,
            "prompt": prompt or {},
        },
        "device": device,
        "seed": 0,
        "source": "batch",
        **provenance(),
    }


def runner_row(runner: Runner, origin: dict | None = None) -> dict:
    """`run_row` for a loaded runner (live answers)."""
    return run_row(runner.request, runner.spec, runner.strategy, runner.device, origin, prompt=runner.prompt_config())


@dataclass
class Plan:
    """Planning: what a run covers and what remains (resume), in chunks; read from the store once."""

    request: Request  # with its task resolved
    rows: pd.DataFrame  # every example the run covers (example_id, input, hypothesis)
    done: set  # example ids already predicted (an earlier, interrupted run of this id)
    origin: dict
    passages: dict  # doc id → text, for a run that retrieves
    index_root: str | None  # the folder of the corpus's saved indexes, for a run that retrieves
    pool: demos.Pool | None = None  # a few-shot run's demonstrations

    @property
    def run_id(self) -> str:
        return self.request.run_id()

    @property
    def todo(self) -> pd.DataFrame:
        return self.rows[~self.rows["example_id"].isin(self.done)]

    def chunks(self) -> list[pd.DataFrame]:
        todo, size = self.todo, self.request.chunk
        return [todo.iloc[start : start + size] for start in range(0, len(todo), size)]


def plan(store: StoreRef, request: Request) -> Plan:
    """Read what the run needs from the store: its examples, those already done, the passages."""
    with opener(store)() as con:
        described = describe(con, request.dataset)
        if request.task is None:  # the dataset's own task
            request = replace(request, task=described.task)
        request = with_template(request, registry.spec(request.model))  # refuses an impossible request early
        only = described.positive if request.resolved_task() == "write" else None  # writing: false-premise items
        rows = queries.run_inputs(con, request.dataset, request.split, only)
        if rows.empty:
            raise ValueError(f"no examples for dataset {request.dataset!r} split {request.split!r}")
        every, rows = rows, rows.head(request.limit) if request.limit else rows
        done = queries.predicted_ids(con, request.run_id())
        was = queries.run_template_sha(con, request.run_id()) if done and request.template else None
        if was and was != templates.get(request.template).sha256:
            raise ValueError(
                f"run {request.run_id()} was made with another text of template {request.template}: "
                "bump the template's version (a new run) rather than resume this one with other prompts"
            )
        root = None
        if request.retriever:
            root = str(index_root("wiki", corpus_hash(con, "wiki")))
        pool = None
        if request.shots:
            train = queries.run_inputs(con, request.dataset, described.train_split) if described.train_split else None
            pool = demos.pool(train, described.train_split, request.split, every)
        return Plan(
            request,
            rows,
            done,
            queries.origin(con, request.dataset),
            queries.passage_texts(con) if request.retriever else {},
            root,
            pool,
        )
