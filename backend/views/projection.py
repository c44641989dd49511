"""What the Projection page shows: human projection per trigger × operator cell, a run's, and a template's
(backend.analysis.projection)."""

from __future__ import annotations

import duckdb
import pandas as pd

from backend.analysis import projection
from backend.datasets.description import OPERATORS  # noqa: F401 — the page's names
from backend.models.contamination import FLAG  # noqa: F401 — the page's names
from backend.store.sessions import DATA, reads


@reads(DATA)
def cell_items(
    con: duckdb.DuckDBPyConnection,
    dataset: str,
    trigger: str,
    operator: str,
    model: str | None = None,
    include_contaminated: bool = False,
) -> pd.DataFrame:
    """The items of one cell (human survival per item; the model's share of E when a model is chosen)."""
    return projection.cell_items(con, dataset, trigger, operator, model, include_contaminated)


@reads(DATA)
def analysed(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Per projection dataset that is a study's answers: its analysed participants, and who is left out and why."""
    return projection.analysed(con)


@reads(DATA)
def human_table(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every cell of every projection dataset: n and human survival (0-1) with its 95% CI."""
    return projection.human_table(con)


@reads(DATA)
def model_choices(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Models (model × training data) with complete NLI runs on projection datasets: name, datasets, run ids, and per
    dataset why its runs are contaminated ({} when none are)."""
    return projection.model_choices(con)


@reads(DATA)
def profile(con: duckdb.DuckDBPyConnection, model: str, include_contaminated: bool = False) -> pd.DataFrame:
    """The human table with the model's survival (E rate, CI) beside it in every cell it predicted, and `contaminated`
    saying why where its runs were trained on that dataset (those cells are left empty unless
    `include_contaminated`)."""
    return projection.profile(con, model, include_contaminated)


@reads(DATA)
def template_cell(con: duckdb.DuckDBPyConnection, dataset_id: str, trigger: str, operator: str) -> pd.DataFrame:
    """The items of one cell of `template_vs_people`, those whose crowd majority differs from the template first."""
    return projection.template_cell(con, dataset_id, trigger, operator)


@reads(DATA)
def template_datasets(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Loaded datasets whose projection spec sets a template's labels against people's."""
    return projection.template_datasets(con)


@reads(DATA)
def template_vs_people(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Per trigger × operator of `template_items`: the share of judgements whose label is not their row's template
    label (every item), and the share of items whose crowd majority is not the item's template label with its 95%
    CI, over the items whose rows all give one template label. Empty for a dataset without a template part."""
    return projection.template_vs_people(con, dataset_id)
