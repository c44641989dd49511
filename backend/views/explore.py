"""What the Explore page shows: a slice of a dataset (facets, runs, correctness, search), its summary and its
rows, and the saved slices it opens and saves. The computation is backend.analysis.slicing's."""

from __future__ import annotations

import duckdb
import pandas as pd

from backend.actions import slices as slice_actions
from backend.analysis import leaderboard, saved_slices, slicing
from backend.analysis.saved_slices import SliceError  # noqa: F401 — the page's names
from backend.analysis.slicing import Comparison, Facets, SliceSummary  # noqa: F401 — the page's names
from backend.identity.actor import Actor
from backend.metrics import classification
from backend.metrics.bootstrap import RESAMPLES  # noqa: F401 — the page's names
from backend.metrics.classification import BIAS_AT_LEAST, BIAS_OVER_GOLD
from backend.models.contamination import FLAG  # noqa: F401 — the page's names
from backend.store import examples
from backend.store.examples import CORRECTNESS, EXTRA, SORTS, Slice  # noqa: F401 — the page's names
from backend.store.queries import FACETS  # noqa: F401 — the page's names
from backend.store.runs import CLASSIFICATION_TASKS  # noqa: F401 — the page's names
from backend.store.sessions import DATA, SAVED, reads


def dominant_label(
    bias: pd.DataFrame, at_least: float = BIAS_AT_LEAST, over_gold: float = BIAS_OVER_GOLD
) -> dict | None:
    """The label a run gives to at least `at_least` of the items, `over_gold` more often than it is gold (a response
    bias worth flagging), as a row of `response_bias`; None when there is none."""
    return classification.dominant_label(bias, at_least, over_gold)


@reads(DATA)
def facets(con: duckdb.DuckDBPyConnection, dataset_id: str) -> Facets:
    """What the dataset can be sliced by: each facet's values (the typed columns, then the `extra` keys its
    description names, as 'extra.KEY') and the split shown by default (the headline split: main and adversarial
    items are reported apart, not pooled)."""
    return slicing.facets(con, dataset_id)


@reads(DATA)
def runs_for(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Complete runs of the dataset that stored predictions: classification runs first (baselines last among them),
    then QA, writing and retrieval runs; with each run's label order ([] if none) and why it is contaminated ('' if
    not)."""
    return slicing.runs_for(con, dataset_id)


@reads(DATA)
def best_run(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str | None:
    """The run A the page opens with: the dataset's best classification run (not a baseline, not contaminated, over
    the whole split) by its headline metric on its headline split; None when it has none (a QA run's exact match is
    not compared with a classifier's accuracy)."""
    table = leaderboard.headline(con, dataset_id)
    classifier = table["metric"].isin(leaderboard.CLASSIFICATION_METRICS)
    table = table[classifier & (table["kind"] != "baseline") & (table["contaminated"] == "") & (table["part"] == "")]
    table = table[table["split"] == table["split"].iloc[0]] if len(table) else table  # the headline split first
    best = table.sort_values(["value", "run"], ascending=[False, True])  # a tie: the first run id, every time
    return str(best["run"].iloc[0]) if len(best) else None


@reads(DATA)
def slice_count(con: duckdb.DuckDBPyConnection, where: Slice) -> int:
    """How many examples the slice holds (the table shows at most 500 of them)."""
    return examples.slice_count(con, where)


@reads(DATA)
def slice_frame(
    con: duckdb.DuckDBPyConnection, where: Slice, sort: str = "example_id", limit: int | None = 500
) -> pd.DataFrame:
    """The slice's rows (at most `limit`; None = all), sorted by a whitelisted order (`SORTS`)."""
    return examples.slice_frame(con, where, sort, limit)


@reads(DATA)
def slice_summary(con: duckdb.DuckDBPyConnection, where: Slice, labels: tuple[str, ...] | None = None) -> SliceSummary:
    """The slice scored for run A, and run B against it (`SliceSummary`); `labels`: run A's label order, which the
    page's run picker already holds."""
    return slicing.slice_summary(con, where, labels)


def url_value(facet: str, value) -> str:
    """A facet value as Explore's URL writes it (its multiselect shows booleans as yes / no)."""
    return slicing.url_value(facet, value)


@reads(DATA, SAVED)
def saved_slice_params(con: duckdb.DuckDBPyConnection, name: str) -> dict:
    """Explore's URL parameters for the slice (a facet with several values repeats its parameter)."""
    return saved_slices.explore_params(con, name)


def save_slice(
    con: duckdb.DuckDBPyConnection,
    name: str,
    where: Slice,
    note: str | None = None,
    replace: bool = False,
    *,
    actor: Actor,
) -> None:
    """Store the slice's facet filters and search under `name` (SliceError when the name is taken and `replace` is
    not set, or a filter is unknown; Forbidden when the actor may not save slices, or replace this one)."""
    slice_actions.save(con, name, where, note, replace, actor=actor)
