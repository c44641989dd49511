"""Saved slices: a named Explore filter set (dataset, facet filters, search), kept in the store, with
every classification run's accuracy on every saved slice (the Overview's slice × run matrix).

A slice is what is true of the items, not of a run: run filters (predicted label, correctness) are
not part of it, so every run can be scored on it. Names are the user's; a name is unique.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import duckdb
import pandas as pd
from statsmodels.stats.proportion import proportion_confint

from backend.analysis import slicing
from backend.store import saved_slices as store_slices
from backend.store.examples import RUN_FILTERS, Filters
from backend.store.runs import CLASSIFICATION_TASKS

NAME = re.compile(r"^[^\x00-\x1f\x7f\s]([^\x00-\x1f\x7f]{0,78}[^\x00-\x1f\x7f\s])?$")  # 1-80 printable, trimmed


class SliceError(ValueError):
    """A slice that cannot be saved or opened; says which field and what was expected."""


def _check(con: duckdb.DuckDBPyConnection, name: str, dataset_id: str, filters: Filters, search: str) -> None:
    if not NAME.match(name or ""):
        raise SliceError(f"name: 1-80 printable characters, not starting or ending with a space; got {name[:100]!r}")
    values = slicing.facet_values(con, dataset_id)
    if not values:
        raise SliceError(f"dataset: {dataset_id!r} has no examples")
    for facet, chosen in filters:
        if facet not in values:
            raise SliceError(f"filters: {facet!r} is not a facet of {dataset_id} (its facets: {', '.join(values)})")
        known = {str(v).lower() if facet in slicing.BOOLEAN_FACETS else str(v) for v in values[facet]}
        unknown = [v for v in chosen if str(v) not in known]
        if unknown:
            raise SliceError(f"filters: {facet} has no value {unknown[0]!r} in {dataset_id}")


def save(
    con: duckdb.DuckDBPyConnection,
    name: str,
    where: slicing.Slice,
    note: str | None = None,
    replace: bool = False,
) -> None:
    """Store the slice's facet filters and search (its runs, run filters and correctness are not part of a saved
    slice) under `name`: SliceError when the name is taken and `replace` is not set, or a filter is unknown. As a
    person's act: `actions.slices.save`."""
    _save(con, name, where.dataset, where.filters, where.search, note, replace)


def _save(con, name: str, dataset_id: str, filters: Filters, search: str, note, replace: bool) -> None:
    filters = tuple(
        (facet, tuple(str(v).lower() if facet in slicing.BOOLEAN_FACETS else str(v) for v in values))
        for facet, values in filters
        if values and facet not in RUN_FILTERS
    )
    _check(con, name, dataset_id, filters, search)
    store_slices.put(
        con, name, dataset_id, filters, search, note, datetime.now(UTC).replace(tzinfo=None), replace, SliceError
    )


def delete(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Delete the slice; whether there was one. As a person's act: `actions.slices.delete`."""
    return store_slices.remove(con, name)


def listing(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every saved slice: name, dataset, filters in words, search, note, when."""
    frame = store_slices.rows(con)
    frame["filters"] = [
        " ∧ ".join(f"{f} ∈ {{{', '.join(v)}}}" if len(v) > 1 else f"{f} = {v[0]}" for f, v in json.loads(x))
        or "all items"
        for x in frame["filters"]
    ]
    return frame


def get(con: duckdb.DuckDBPyConnection, name: str) -> slicing.Slice:
    """The saved slice (its dataset, facet filters and search); SliceError naming it when there is none."""
    row = store_slices.one(con, name)
    if row is None:
        raise SliceError(f"slice: no saved slice is called {name!r}")
    return slicing.Slice(row[0], tuple((f, tuple(v)) for f, v in json.loads(row[1])), search=row[2])


def explore_params(con: duckdb.DuckDBPyConnection, name: str) -> dict:
    """Explore's URL parameters for the slice (a facet with several values repeats its parameter)."""
    found = get(con, name)
    params: dict = {"dataset": found.dataset, **slicing.split_param(con, found.dataset)}  # none: pooled
    for facet, values in found.filters:
        params[facet] = [slicing.url_value(facet, v) for v in values]
    if found.search:
        params["q"] = found.search
    return params


def matrix(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per saved slice × complete classification run of its dataset: n scored, accuracy and its
    Wilson 95% interval, and the run's contamination flag."""
    rows = []
    saved = store_slices.rows(con)
    for name, dataset_id, filters, search in saved[["name", "dataset_id", "filters", "search"]].itertuples(index=False):
        filters = tuple((f, tuple(v)) for f, v in json.loads(filters))
        runs = slicing.runs_for(con, dataset_id)
        runs = runs[runs["task"].isin(CLASSIFICATION_TASKS)]
        size, scored = store_slices.scores(con, slicing.Slice(dataset_id, filters, search=search), list(runs["run_id"]))
        for run in runs.itertuples():
            if run.run_id not in scored.index:
                continue
            n, right = int(scored.loc[run.run_id, "n"]), int(scored.loc[run.run_id, "right"])
            low, high = proportion_confint(right, n, method="wilson")
            rows.append(
                {
                    "slice": name,
                    "dataset": dataset_id,
                    "items": int(size),
                    "run": run.run_id,
                    "n": n,
                    "accuracy": right / n,
                    "low": low,
                    "high": high,
                    "contaminated": run.contaminated,
                }
            )
    return pd.DataFrame(
        rows, columns=["slice", "dataset", "items", "run", "n", "accuracy", "low", "high", "contaminated"]
    )
