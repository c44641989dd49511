"""What the Study and Gradient pages show of a mixed-effects model (`ui.fits` draws it): the models a dataset's
answers support, the columns a formula may name and what each grouping factor is, the default formula, a written
formula checked against the columns, the kept fit of the data as it is now, and starting a fit as a job
(backend.analysis.mixed_model). A page never fits while rendering."""

from __future__ import annotations

from pathlib import Path

import duckdb

from backend.actions import jobs as job_actions
from backend.analysis import mixed_model
from backend.analysis.mixed_model import Model  # noqa: F401 — the page's names
from backend.execution import jobs
from backend.identity.actor import Actor
from backend.metrics import mixed_models
from backend.metrics.mixed_models import Fit
from backend.store.sessions import DATA, reads


@reads(DATA)
def choices(con: duckdb.DuckDBPyConnection, dataset_id: str) -> list[mixed_model.Model] | str:
    """The models the dataset's answers support, or why none can be fitted (in words)."""
    try:
        return mixed_model.choices(con, dataset_id)
    except ValueError as exc:
        return str(exc)


@reads(DATA)
def columns(con: duckdb.DuckDBPyConnection, model: mixed_model.Model) -> dict:
    """What a formula may name: {"default": the maximal formula, "groups": {column: what it is, in words},
    "levels": the condition's levels in sorted order}."""
    rows = mixed_model.frame(con, model)
    return {
        "default": mixed_model.formula(con, model, rows),
        "groups": mixed_model.groups(rows, model),
        "levels": sorted(rows[model.condition].unique()) if model.condition in rows else [],
    }


@reads(DATA)
def formula_problem(con: duckdb.DuckDBPyConnection, model: mixed_model.Model) -> str:
    """Why the model's formula cannot be fitted on its columns (the term and the columns that exist), or ''."""
    try:
        mixed_models.parsed_formula(model.formula, mixed_model.columns(con, model))
    except mixed_models.FormulaError as exc:
        return str(exc)
    return ""


@reads(DATA)
def kept_path(con: duckdb.DuckDBPyConnection, model: mixed_model.Model) -> Path:
    """Where the fit of the data as it is now is kept (it may not exist yet)."""
    return mixed_model.path(model, mixed_model.version(mixed_model.frame(con, model), model), con)


@reads(DATA)
def scale_note(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str:
    return mixed_model.scale_note(con, dataset_id)


def p_text(p: float) -> str:
    return mixed_models.p_text(p)


def load(path: Path) -> Fit | None:
    """The kept fit at `path` (read each time: a job may have just written it), or None."""
    return mixed_model.load(path)


def start(store: Path | str, model: mixed_model.Model, *, actor: Actor) -> str:
    return job_actions.start_model(store, model, actor=actor)


def alive(key: str) -> bool:
    return jobs.alive(key)


def last_line(key: str) -> str:
    return jobs.last_line(key)
