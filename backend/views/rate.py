"""What the Rate page shows and saves: ratings (backend.analysis.ratings), rating tasks handed out with overlap
(backend.analysis.rating_tasks), and judge runs against people (backend.analysis.judging)."""

from __future__ import annotations

from pathlib import Path  # noqa: F401 — the page's names

import duckdb
import pandas as pd

import backend.identity.links as links
from backend.actions import jobs as job_actions
from backend.actions.ratings import (  # noqa: F401 — the page's writes, and the tasks a rater may work on
    assigned,
    create_task,
    make_links,
    next_item,
    revoke_link,
    save,
)
from backend.analysis import judging, rating_tasks, ratings
from backend.analysis.rating_tasks import EVERY_TASK, MAX_GUIDELINE  # noqa: F401 — the page's names
from backend.analysis.ratings import RatingConflict, RatingError  # noqa: F401 — the page's names
from backend.identity.actor import Actor
from backend.metrics.rubrics import RUBRIC  # noqa: F401 — the page's names
from backend.metrics.rubrics import title as plain_title
from backend.store.sessions import AUDIT, DATA, LIVE, reads


@reads(DATA, LIVE)
def agreement(con: duckdb.DuckDBPyConnection, run_id: str, examples: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Per rated criterion: raters, items scored by ≥ 2 raters, rating rows, Krippendorff's alpha with a 95% bootstrap
    interval over items, and the mean pairwise Cohen's kappa with its pair count."""
    return ratings.agreement(con, run_id, examples)


@reads(DATA, LIVE)
def criteria_of(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    """What people rate the run on: its task's criteria, then any other criterion a judge scored on it (so the judge's
    scores can be set against people's)."""
    return ratings.criteria_of(con, run_id)


@reads(DATA, LIVE)
def rateable_runs(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Complete or live model runs (no baselines, no imports) with error-free predictions: writing and QA runs first,
    then by run id; then every other run a rating task hands out (an imported or paper run); `n` predictions to rate
    (error-free), `parsed` of them answers in the expected format, and `rated` examples with user ratings."""
    return ratings.rateable_runs(con)


@reads(DATA, LIVE)
def rater_values(con: duckdb.DuckDBPyConnection, run_id: str, rater_id: str) -> dict[str, dict[str, float]]:
    """example_id → {criterion: value} of one rater's user ratings on the run (to pre-fill the form)."""
    return ratings.rater_values(con, run_id, rater_id)


@reads(DATA, LIVE)
def ratings_frame(con: duckdb.DuckDBPyConnection, run_id: str | None = None) -> pd.DataFrame:
    """User ratings of one run (all runs when None), in a stable order: what the page exports."""
    return ratings.ratings_frame(con, run_id)


@reads(DATA, LIVE)
def summary(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """Per rated criterion: the mean score with a 95% bootstrap interval, over items (each item's scores averaged
    across its raters, so the resampling unit is the item), rating rows and raters."""
    return ratings.summary(con, run_id)


@reads(DATA, LIVE)
def targets(con: duckdb.DuckDBPyConnection, run_id: str, split: str | None = None) -> pd.DataFrame:
    """The run's error-free predictions to rate, by example id, with the example's gold data (a live run has no example
    rows: its input comes from the prediction's `text.input`)."""
    return ratings.targets(con, run_id, split)


@reads(DATA, LIVE)
def agreement_table(con: duckdb.DuckDBPyConnection, judge_run_id: str, run_id: str) -> pd.DataFrame:
    """Per criterion, the judge against the people's consensus and against each rater: n items both scored, alpha,
    kappa and rho with their 95% intervals, and the rated items the judge left unscored."""
    return judging.agreement_table(con, judge_run_id, run_id)


@reads(DATA, LIVE)
def judge_cell_items(
    con: duckdb.DuckDBPyConnection, judge_run_id: str, run_id: str, criterion: str, judge_score: str, people: str
) -> pd.DataFrame:
    """The items of one confusion cell (scores as the table shows them), with the output and the judge's reason."""
    return judging.cell_items(con, judge_run_id, run_id, criterion, judge_score, people)


@reads(DATA, LIVE)
def confusion(con: duckdb.DuckDBPyConnection, judge_run_id: str, run_id: str, criterion: str) -> pd.DataFrame:
    """Items per (judge's score, people's consensus) on one criterion; 'unscored' where the judge's responses could not
    be parsed."""
    return judging.confusion(con, judge_run_id, run_id, criterion)


def judge_models() -> list[str]:
    """The generators a judge run can use here (registered, and loadable or reachable)."""
    return judging.judge_models()


@reads(DATA, LIVE)
def judge_runs(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """The score judges of a run with their counts (judgements, parsed, unparsed, cost) and `overlap`, the outputs it
    scored that people rated on the same criterion: most overlap first, then newest first."""
    return judging.judge_runs(con, run_id)


def judge_jobs(run_id: str) -> list[str]:
    """The score judge runs of the run started as jobs from a page (running or not): a judge started in a terminal is
    not among them, and its stored status is all the page knows of it."""
    return judging.judge_jobs(run_id)


def running_judges(run_id: str) -> list[str]:
    """The score judge runs of the run whose process runs now (started from any page, stored or not yet), newest
    first: their progress is read from the store and their log, not from a page's memory."""
    return judging.running(run_id)


def judge_criteria(rubric: str) -> list[str]:
    """The criteria a judge rubric (name@version) scores; [] for one no longer here."""
    return judging.criteria(rubric)


def criterion_name(criterion: str) -> str:
    """A criterion in plain words (e.g. 'Corrects the false assumption'), for labels."""
    return plain_title(criterion)


def pairwise_rubrics(task: str) -> list[str]:
    """The pairwise judge rubrics (name@version) that compare two runs of `task`."""
    return judging.pairwise_rubrics(task)


def judge_progress(con: duckdb.DuckDBPyConnection, judge_run_id: str) -> dict:
    """A started judge run's status, responses done of total, parsed, errors, cost so far and its last log line."""
    return judging.progress(con, judge_run_id)


@reads(DATA, LIVE)
def ranking(con: duckdb.DuckDBPyConnection, source: str, criterion: str) -> dict:
    """Whether the judge (`source`: judge:<model>:<rubric@version>) ranks runs as people do on one criterion: per run
    judged by it and rated by people, both means over the items both scored, and Kendall's tau-b over the runs; with
    fewer than three runs, `why` says there is no tau."""
    return judging.ranking(con, source, criterion)


def rubrics(task: str) -> list[str]:
    """The judge rubrics (name@version) that score runs of `task`."""
    return judging.rubrics(task)


@reads(DATA, LIVE)
def self_consistency(con: duckdb.DuckDBPyConnection, judge_run_id: str) -> pd.DataFrame:
    """Per criterion of a sampled judge: alpha across its samples (each sample a rater) over the items, with a 95%
    bootstrap interval over items; empty for a judge asked once."""
    return judging.self_consistency(con, judge_run_id)


def start_judge(
    store,
    model: str,
    run: str,
    rubric: str,
    versus: str | None = None,
    limit: int | None = None,
    max_cost: float | None = None,
    *,
    actor: Actor,
) -> str:
    """Start a judge run of `run` (against `versus` with a pairwise rubric) as a background job, as `python -m backend
    judge` would run it; its id. A request that cannot be judged, or a role that may not judge, is refused before
    anything starts (ValueError, Forbidden)."""
    request = judging.JudgeRequest(model=model, run=run, rubric=rubric, versus=versus, limit=limit)
    return job_actions.start_judge(store, request, max_cost, actor=actor)


def verdict(table: pd.DataFrame) -> pd.DataFrame:
    """Per criterion, how far to trust the judge, from its alpha against the people's consensus."""
    return judging.verdict(table)


@reads(DATA, LIVE)
def task_agreement(con: duckdb.DuckDBPyConnection, task_id: str) -> pd.DataFrame:
    """`ratings.agreement` over the task's items (alpha counts the items with two or more raters)."""
    return rating_tasks.agreement(con, task_id)


def blind_item(con: duckdb.DuckDBPyConnection, task_id: str, example_id: str) -> dict:
    """What a rater sees of an item: the input (context, hypothesis) and the output to rate — no gold, no label, no
    score or probability, no one else's rating."""
    return rating_tasks.blind_item(con, task_id, example_id)


def brief(con: duckdb.DuckDBPyConnection, task_id: str) -> dict:
    """What a rater is told of the task: its guideline, criteria and run (no progress of others, no agreement)."""
    return rating_tasks.brief(con, task_id)


def done_by(con: duckdb.DuckDBPyConnection, task_id: str, rater_id: str) -> tuple[int, int]:
    """(items this rater has done, items in the task): a rater's own progress, nobody else's."""
    return rating_tasks.done_by(con, task_id, rater_id)


@reads(DATA, LIVE)
def task_progress(con: duckdb.DuckDBPyConnection, task_id: str) -> dict:
    """Overall (items, complete, with ≥ 2 raters) and per rater (items done)."""
    return rating_tasks.progress(con, task_id)


@reads(DATA, LIVE, AUDIT)
def task_links(con: duckdb.DuckDBPyConnection, task_id: str) -> pd.DataFrame:
    """The task's links: who for, state (live, expired, revoked), until when, made by whom."""
    found = links.listing(con, f"rating-task:{task_id}")
    return found[["link_id", "person", "state", "expires_at", "created_by", "revoked_at"]]


@reads(DATA, LIVE)
def tasks(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    return rating_tasks.tasks(con, run_id)


@reads(DATA, LIVE, AUDIT)
def every_task(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every rating task, whatever its run's source (a model, an import, a paper's run), newest first: its run, items,
    complete (k raters), with two or more raters, k, raters so far, live links, guideline, who made it and when."""
    return rating_tasks.every_task(con)


def handle(store: Path, *names: str) -> str:
    """An opaque, stable handle for what a rater's page names (a task, an item): HMAC-SHA256 of the names keyed with
    the server's link secret, 24 hex digits. It reveals none of the names, and no one without the secret can
    recompute it to test a guess, as they could a plain hash of an id."""
    return links.handle(store, *names)
