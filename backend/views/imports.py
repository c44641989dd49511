"""Import: what the Import page does with a user's file — read its columns, check it as a run's
predictions or as a dataset against the store (a validation report before anything is written), save,
list and delete the user's runs. `python -m backend import-run / import-dataset / delete-run` call the
same functions of `backend.imports`."""

from __future__ import annotations

import duckdb
import pandas as pd

from backend.actions import datasets as dataset_actions
from backend.actions import runs as run_actions
from backend.analysis import slicing
from backend.datasets import catalogue
from backend.datasets.description import Description
from backend.harnesses import logs
from backend.identity.actor import Actor
from backend.imports import datasets as user_datasets
from backend.imports import predictions
from backend.imports.columns import TASK_ROLES, guess_task
from backend.imports.files import FORMATS, read
from backend.store.bundle import Bundle
from backend.store.sessions import DATA, reads

DATASET_ROLES = tuple(user_datasets.ROLE_GUESSES)  # the columns a dataset file may map
TASKS = {"run": ("nli", "detect", "qa", "write"), "dataset": ("nli", "detect", "qa")}
RunOptions, DatasetOptions, RunPlan = predictions.Options, user_datasets.DatasetOptions, predictions.Plan
BaselinesFailed = user_datasets.BaselinesFailed
FILE_TYPES = sorted({suffix.lstrip(".") for suffix in FORMATS} | {"eval"})  # .eval: an Inspect AI log


def roles(task: str) -> tuple[str, ...]:
    """The columns a predictions file of `task` may map (`TASK_ROLES`)."""
    return TASK_ROLES[task]


def task_for(columns: list[str], description: Description) -> str:
    """The task a predictions file with these columns is for on this dataset (`columns.guess_task`): `question,
    answer` is a QA run, `question,presupposition,correction` a writing run, premise and hypothesis an NLI run,
    a label (or probabilities, logits) the dataset's own task."""
    return guess_task(columns, description)


def dataset_task_for(columns: list[str]) -> str:
    """The task a dataset file with these columns is for (`datasets.guess_task`)."""
    return user_datasets.guess_task(columns)


def file_columns(data: bytes, name: str) -> list[str]:
    """The columns of an uploaded file, as read (a harness log's: as its samples become rows)."""
    return list(logs.read_log(data, name).table.frame.columns)


def check_run(
    con: duckdb.DuckDBPyConnection, data: bytes, name: str, options: RunOptions, datasets: list[str]
) -> tuple[RunPlan, tuple | None]:
    """The file checked as predictions on `options.dataset`, and — when none of its rows matched and no
    column is missing — the dataset among `datasets` its rows match best ((name, rows), or () when none
    does; None when it was not looked for)."""
    log = logs.read_log(data, name)
    plan = logs.plan(con, log, options)
    unmatched = plan.report.matched == 0 and not any(p.kind == "column" for p in plan.report.problems)
    best = (predictions.best_dataset(con, log.table, options, datasets) or ()) if unmatched else None
    return plan, best


def save_run(con: duckdb.DuckDBPyConnection, plan: RunPlan, replace: bool = False, *, actor: Actor) -> str:
    """Store the checked run as `actor` (Forbidden, audited, when their role may not)."""
    return run_actions.save(con, plan, replace, actor=actor)


def delete_run(con: duckdb.DuckDBPyConnection, run_id: str, *, actor: Actor) -> None:
    """Delete one of the user runs (an analyst their own, an owner anyone's)."""
    run_actions.delete(con, run_id, actor=actor)


def check_dataset(data: bytes, name: str, options: DatasetOptions) -> tuple[Bundle, Description]:
    """What the file would store as a dataset (ValueError naming the file, line and field otherwise)."""
    return user_datasets.check(read(data, name), options)


def save_dataset(
    con: duckdb.DuckDBPyConnection, bundle: Bundle, replace: bool = False, *, actor: Actor
) -> dict[str, int]:
    """Store the checked dataset as `actor` (Forbidden, audited, when their role may not)."""
    return dataset_actions.save(con, bundle, replace, actor=actor)


@reads(DATA)
def split_param(con: duckdb.DuckDBPyConnection, dataset_id: str, chosen: tuple = ()) -> dict:
    """Explore's `split` URL parameter for these splits, spelled out ("split=" for every split, pooled) on a dataset
    with several splits, where a link without it means the headline split; {} on a dataset with one."""
    return slicing.split_param(con, dataset_id, chosen)


@reads(DATA)
def described(con: duckdb.DuckDBPyConnection) -> dict[str, Description]:
    """Every loaded dataset that has examples to predict on, with its description."""
    return catalogue.described(con)


@reads(DATA)
def existing_run(con: duckdb.DuckDBPyConnection, run_id: str) -> str | None:
    """The source of the run with this id ('user', 'import', 'batch', …), or None when the id is free."""
    return predictions.existing_run(con, run_id)


@reads(DATA)
def user_runs(con: duckdb.DuckDBPyConnection, dataset_id: str | None = None) -> pd.DataFrame:
    """The user's imported runs with their provenance, newest first."""
    return predictions.user_runs(con, dataset_id)


def dataset_named_by(file_name: str, datasets: list[str]) -> str | None:
    """The dataset a file's name names as a word (`roberta_nope.csv` → nope; the longest when several do)."""
    return predictions.dataset_from_name(file_name, datasets)
