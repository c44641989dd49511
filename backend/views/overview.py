"""What the Overview shows: the leaderboard (backend.analysis.leaderboard), what the store holds, the models,
and the saved slices × runs matrix."""

from __future__ import annotations

import duckdb
import pandas as pd

from backend.analysis import leaderboard
from backend.analysis import saved_slices as analysis_saved_slices
from backend.metrics.bootstrap import RESAMPLES  # noqa: F401 — the page's names
from backend.metrics.classification import BIAS_AT_LEAST, BIAS_OVER_GOLD  # noqa: F401 — the page's names
from backend.models import availability
from backend.models.contamination import FLAG  # noqa: F401 — the page's names
from backend.store import queries
from backend.store.sessions import DATA, SAVED, reads


@reads(DATA)
def headline(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """dataset, run, model, kind (paper-reported | baseline | model run), metric, split, value, low, high, n, bias (for
    a classifier that gives one label to almost every item, which and how often), unparsed (a prompted run's
    responses that gave no answer, of n: counted wrong in its value; '' for other runs), cost (what a prompted run's
    requests for these items cost at its endpoint's prices, cached answers free) and contaminated (why, when the
    run's model was trained on this dataset: `backend.models.contamination`) and part ('40 of 2,386 items' for a run
    over part of the split, e.g. a `--limit` run: its value is not comparable with the runs over every item; '' for
    those)."""
    return leaderboard.headline(con)


@reads(DATA)
def loaded_datasets(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per loaded dataset: title, source folder, when, licence, notes (a list), whether a user's, example
    count."""
    return queries.loaded_datasets(con)


@reads(DATA)
def missing_datasets(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Built-in datasets that are not in the store, with how to add each."""
    return leaderboard.missing_datasets(con)


def model_status() -> pd.DataFrame:
    """One row per registered model: task, whether it can be used here, what to do if not, quality."""
    return availability.status_table()


@reads(DATA)
def split_label_table(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """One dataset's examples as a split × gold label table with 'all splits' totals (row and column)."""
    return queries.split_label_table(con, dataset_id)


@reads(DATA)
def table_counts(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Per dataset: pairs, crowd ratings, imported runs, predictions, passages, qrels."""
    return queries.table_counts(con)


@reads(DATA, SAVED)
def saved_slices(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every saved slice: name, dataset, filters in words, search, note, when."""
    return analysis_saved_slices.listing(con)


@reads(DATA, SAVED)
def slice_matrix(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per saved slice × complete classification run of its dataset: n scored, accuracy and its Wilson 95%
    interval, and the run's contamination flag."""
    return analysis_saved_slices.matrix(con)
