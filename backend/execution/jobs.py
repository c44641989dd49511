"""Batch runs, judge runs (and embedding maps) started from the dashboard: each is its own `python -m backend
predict` (or `judge`, `map`) process, so the
dashboard's other users are never held up (the run opens the store per chunk, like any terminal
command) and an interrupted run is resumed by starting it again.

A job is recorded as `<data_dir>/jobs/<run id>.json` (pid, command, start time, log file); its
progress comes from the store (the run's status and how many predictions it has stored, against
the examples it will predict) and its log's last lines.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import duckdb

from backend.config import REPO_ROOT
from backend.datasets.catalogue import described
from backend.execution import judging, runs
from backend.models import availability, registry
from backend.models.prompts import templates
from backend.store import judgements as store_judgements
from backend.store import kept as kept_files
from backend.store import queries
from backend.store import runs as store_runs
from backend.store.access import StoreRef, session


def _folder(store: StoreRef = None) -> Path:
    """The job records and logs kept beside `store` (None: the configured store)."""
    return kept_files.folder("jobs", store)


def _file(run_id: str, store: StoreRef = None) -> Path:
    return _folder(store) / (re.sub(r"[^\w.-]+", "_", run_id) + ".json")


# The act that starts a job, handed down by its door (`actions.jobs`): opened on the store and the job's key, it checks
# and audits the starter and yields what the job's process is told of them (environment variables), so this module
# imports nothing of who acts
Act = Callable[[duckdb.DuckDBPyConnection, str], AbstractContextManager[dict[str, str]]]


def _spawn(key: str, store: Path | str, args: list[str], act: Act, **noted) -> None:
    """`python -m backend --store STORE ARGS…` as a process of its own, recorded under `key` (with `noted`), inside
    the act that starts it (refused before anything starts when the starter may not); the process is told who
    started it (`act`'s environment)."""
    with session(store) as con, act(con, key) as told:
        _start(key, store, args, told, noted)


def _start(key: str, store: Path | str, args: list[str], told: dict[str, str], noted: dict) -> None:
    if alive(key, store):
        raise ValueError(f"{key} is already running (process {read(key, store)['pid']})")
    _folder(store).mkdir(parents=True, exist_ok=True)
    log = _file(key, store).with_suffix(".log")
    command = [sys.executable, "-m", "backend", "--store", str(store), *args]
    with log.open("w") as out:
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "TQDM_MININTERVAL": "2", **told},
        )
    _file(key, store).write_text(
        json.dumps(
            {"pid": process.pid, "run_id": key, "command": command, "started": time.time(), "log": str(log), **noted}
        )
    )


def start(
    store: Path | str,
    model: str,
    dataset: str,
    task: str = "nli",
    template: str | None = None,
    *,
    act: Act,
) -> str:
    """Start (or resume) `predict --model M --dataset D --task T [--template X]` in a process of its own;
    the run id (a generator's names its prompt template)."""
    request = runs.with_template(
        runs.Request(model=model, dataset=dataset, task=task, template=template), registry.spec(model)
    )
    _spawn(
        request.run_id(),
        store,
        ["predict", "--model", model, "--dataset", dataset, "--task", task]
        + (["--template", request.template] if request.template else []),
        act,
    )
    return request.run_id()


def start_judge(store: Path | str, request: judging.JudgeRequest, max_cost: float | None = None, *, act: Act) -> str:
    """Start (or resume) `judge --model M --run R --rubric X [--versus B] [--limit N] [--max-cost USD]` in a process
    of its own, once the request is one that can be judged (`judging.plan` says why not, before anything starts);
    the judge run id. Its progress: `judge_progress`."""
    made = judging.plan(store, request)
    args = ["judge", "--model", request.model, "--run", request.run, "--rubric", made.template.ref]
    args += ["--versus", request.versus] if request.versus else []
    args += ["--limit", str(request.limit)] if request.limit else []
    args += ["--max-cost", repr(float(max_cost))] if max_cost is not None else []
    _spawn(made.judge_run_id, store, args, act, total=len(made.every_key()))
    return made.judge_run_id


def _live(status: str, key: str, store: StoreRef = None) -> str:
    """The stored status, as the job's process stands: 'stopped' when it is gone mid-run, 'running' while alive."""
    running = alive(key, store)
    if status == "running" and not running:
        return "stopped"  # the process is gone: start it again to resume
    return "running" if running and status != "complete" else status


def judge_progress(con: duckdb.DuckDBPyConnection, judge_run_id: str) -> dict:
    """status (not started | running | complete | interrupted | stopped), done (responses stored), total, parsed
    (responses read as a score or verdict), errors, cost (USD so far), seconds and the log's last line."""
    job = read(judge_run_id, con) or {}
    stored = store_judgements.progress(con, judge_run_id)
    status = stored["status"] if stored else "not started"
    status = _live(status, judge_run_id, con)
    return {
        "status": status,
        "done": stored["judgements"] if stored else 0,
        "total": int(job.get("total", 0)),
        "parsed": stored["parsed"] if stored else 0,
        "errors": stored["errors"] if stored else 0,
        "cost": stored["cost"] if stored else 0.0,
        "seconds": time.time() - job["started"] if job else 0.0,
        "log": last_line(judge_run_id, con),
    }


def judge_jobs(run_id: str, store: StoreRef = None) -> list[str]:
    """The score judge runs of `run_id` started as jobs here (whether they run still or not), newest first: their
    progress can be followed from the store and the log, whoever's page started them."""
    folder = _folder(store)
    found = [json.loads(path.read_text()) for path in folder.glob("*.json")] if folder.is_dir() else []
    mine = [job for job in found if str(job.get("run_id", "")).startswith(f"{run_id}//judge:")]
    return [job["run_id"] for job in sorted(mine, key=lambda job: -job.get("started", 0))]


def judge_models() -> list[str]:
    """The registered generators that can be loaded or reached here: the models a judge run can use."""
    return sorted(m.name for m in registry.specs().values() if m.task == "generate" and availability.status(m)[0])


def template_choices(model: str, task: str) -> list[str]:
    """The prompt templates a model can be run with on a task ([] for a model that is not prompted);
    few-shot ones draw their demonstrations from the dataset (its training split, else other folds)."""
    if runs.STRATEGIES.get((registry.spec(model).task, task)) != "prompted":
        return []
    return sorted(t.name for t in templates.for_task(task) if t.strategy != "retrieve-then-read")


# What `train` makes for a task when no loadable model does it: the command, the model it registers, its cost
TRAINING = {
    "nli": (["train", "nli"], "minilm-nli", "about 25 minutes on 2 CPU cores"),
    "detect": (["train", "detect", "--dataset", "falseqa"], "minilm-fp-falseqa", "about 3 minutes on 2 CPU cores"),
}


def start_training(store: Path | str, task: str, *, act: Act) -> str:
    """Start `train` for `task` (the bundled MiniLM fine-tuned here, see TRAINING) in a process of its own; its key."""
    if task not in TRAINING:
        raise ValueError(f"task: nothing is trained here for {task!r}; expected one of {', '.join(TRAINING)}")
    key = f"train-{task}"
    _spawn(key, store, TRAINING[task][0], act)
    return key


def start_map(store: Path | str, dataset: str, method: str, *, act: Act) -> str:
    """Start `map DATASET --method M` (embed + reduce, minutes for large sets) in a process of its own; its key."""
    key = f"map-{dataset}-{method}"
    _spawn(key, store, ["map", dataset, "--method", method], act)
    return key


def start_command(store: Path | str, key: str, args: list[str], *, act: Act) -> str:
    """Start `python -m backend ARGS…` (a command that computes from the store and keeps its result itself, such
    as `study model` or `study power`) in a process of its own, recorded under `key`; the key."""
    _spawn(key, store, args, act)
    return key


def last_line(key: str, store: StoreRef = None) -> str:
    """The job's log's last non-empty line (progress bars' carriage returns split lines)."""
    job = read(key, store)
    if not job or not Path(job["log"]).is_file():
        return ""
    lines = [line for line in re.split(r"[\r\n]+", Path(job["log"]).read_text(errors="replace")) if line.strip()]
    return lines[-1][-200:] if lines else ""


def read(run_id: str, store: StoreRef = None) -> dict | None:
    path = _file(run_id, store)
    return json.loads(path.read_text()) if path.is_file() else None


def alive(run_id: str, store: StoreRef = None) -> bool:
    job = read(run_id, store)
    if job is None:
        return False
    try:
        os.kill(job["pid"], 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:  # a finished child not yet reaped is a zombie: not running
        return Path(f"/proc/{job['pid']}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True


def progress(con: duckdb.DuckDBPyConnection, run_id: str, dataset: str) -> dict:
    """status (not started | running | complete | interrupted | stopped), done, parsed (of done: answers, not
    errors or responses that did not parse), total, seconds, eta (seconds left at the rate so far), and the log's
    last line."""
    stored, total = store_runs.status(con, run_id), queries.example_count(con, dataset)
    job = read(run_id, con)
    status, done = (stored["status"], stored["predictions"]) if stored else ("not started", 0)
    parsed = stored["parsed"] if stored else 0
    status = _live(status, run_id, con)
    seconds = time.time() - job["started"] if job else 0.0
    rate = done / seconds if seconds > 0 and done else 0.0
    last = last_line(run_id, con)
    return {
        "status": status,
        "done": int(done),
        "parsed": int(parsed),
        "total": int(total),
        "seconds": seconds,
        "eta": (total - done) / rate if rate and status == "running" else None,
        "log": last,
    }


def choices(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, list[str]]]:
    """Your datasets → (their task, the models that can be loaded here and run on them without a retriever)."""

    ready = [m for m in registry.specs().values() if availability.status(m)[0]]
    return {
        d: (
            description.task,
            [m.name for m in ready if runs.STRATEGIES.get((m.task, description.task)) not in (None, "nli-retrieval")],
        )
        for d, description in described(con).items()
        if description.user
    }
