"""Starting jobs: a batch run, a judge run, a map, a training run, each a process of its own. The start is the act
(checked and audited here); the job is told who started it and asks their role again before each chunk it writes
(`job_check`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from backend.actions.door import door
from backend.analysis import mixed_model, power_analysis
from backend.execution import jobs
from backend.execution.judging import JudgeRequest
from backend.identity.actor import Actor, started_by, starter_env, terminal
from backend.identity.permissions import acting, audited, check
from backend.store.access import StoreRef, opener, session
from backend.store.writer import ACTING_AS


def _act(actor: Actor, action: str):
    """The act `execution.jobs` opens on the job's key: checked and audited, and what its process is told."""

    @contextmanager
    def started(con: duckdb.DuckDBPyConnection, key: str) -> Iterator[dict[str, str]]:
        with acting(con, actor, action, key) as by:
            yield {ACTING_AS: by.id, **starter_env(by)}

    return started


@door("run model")
def start_run(
    store: Path | str, model: str, dataset: str, task: str = "nli", template: str | None = None, *, actor: Actor
) -> str:
    """Start (or resume) a batch run as `actor`; its run id."""
    return jobs.start(store, model, dataset, task, template, act=_act(actor, "run model"))


@door("judge")
def start_judge(store: Path | str, request: JudgeRequest, max_cost: float | None = None, *, actor: Actor) -> str:
    """Start (or resume) a judge run as `actor` once the request can be judged; its id."""
    return jobs.start_judge(store, request, max_cost, act=_act(actor, "judge"))


@door("make map")
def start_map(store: Path | str, dataset: str, method: str, *, actor: Actor) -> str:
    return jobs.start_map(store, dataset, method, act=_act(actor, "make map"))


@door("fit model")
def start_model(store: Path | str, model: mixed_model.Model, *, actor: Actor) -> str:
    """Fit a mixed model (`study model`) as `actor`, in a process of its own; its job key. The fit is kept per data
    version (`analysis.mixed_model.kept` reads it)."""
    args = ["study", "model", model.dataset, "--condition", model.condition, "--coding", model.coding]
    args += ["--formula", model.formula] if model.formula else []
    args += ["--reference", model.reference] if model.reference else []
    args += ["--pilot"] if model.pilot else []
    key = f"model-{model.dataset}-{model.condition}{'-pilot' if model.pilot else ''}"
    return jobs.start_command(store, key, args, act=_act(actor, "fit model"))


@door("run power")
def start_power(store: Path | str, request: power_analysis.Request, *, actor: Actor) -> str:
    """Simulate a power analysis (`study power`) as `actor`, in a process of its own; its key (also its kept
    file's: `analysis.power_analysis.status` reads its progress and its table)."""
    key = request.key()
    return jobs.start_command(store, key, power_analysis.arguments(request), act=_act(actor, "run power"))


@door("train")
def start_training(store: Path | str, task: str, *, actor: Actor) -> str:
    return jobs.start_training(store, task, act=_act(actor, "train"))


# A terminal's batch command → the action it performs: each is audited as the terminal's user (issue 64, item 4: they
# wrote with no audit row), checked before it runs and recorded done or failed when it ends. The same command run as a
# job a page started is not: its start was audited as its starter, who is checked again before each chunk.
BATCH = {
    ("ingest", None): "ingest",
    ("baselines", None): "ingest",
    ("index", None): "ingest",
    ("predict", None): "run model",
    ("rescore", None): "run model",
    ("judge", None): "judge",
    ("map", None): "make map",
    ("train", None): "train",
    ("study", "model"): "fit model",
    ("study", "power"): "run power",
}


def batch_action(command: str, sub: str | None) -> str | None:
    """The action a terminal command performs when it is to be audited as the terminal's (None: it is not a batch
    command, or this process is a job a page started)."""
    if started_by() is not None:
        return None
    return BATCH.get((command, sub)) or BATCH.get((command, None))


def _batch(store: StoreRef, action: str, target: str, detail: str, command: Callable[[], int], *, actor: Actor) -> int:
    """Run a terminal's batch `command` as `actor` (the terminal's user): checked, then audited done (exit status 0)
    or failed (with the status, or the error) when it ends."""
    opened = (lambda: session(store, create=True)) if action == "ingest" else opener(store)  # ingest makes the store
    with audited(opened, actor, action, target, detail=detail):
        status = command()
        if status:
            raise CommandFailed(status)
    return status


BATCH_DOORS = {action: door(action)(_batch) for action in sorted(set(BATCH.values()))}  # one door per action


def run_batch(store: StoreRef, action: str, target: str, detail: str, command: Callable[[], int]) -> int:
    """A terminal's batch command through its action's door, as the terminal's user."""
    return BATCH_DOORS[action](store, action, target, detail, command, actor=terminal())


class CommandFailed(RuntimeError):
    """A terminal command that ended with a non-zero exit `status` (audited as failed)."""

    def __init__(self, status: int):
        super().__init__(f"exit status {status}")
        self.status = status


def job_check(action: str, target: str) -> Callable[[duckdb.DuckDBPyConnection], Actor] | None:
    """What a job started from the dashboard asks before each chunk it writes: its starter's role, read again at
    that moment (a demoted or removed starter stops the job there, refused and audited). None in a terminal's
    own command (the owner's tool)."""
    starter = started_by()
    if starter is None:
        return None
    return lambda con: check(con, starter, action, target)
