"""What the Minimal pairs page shows (backend.analysis.pairs)."""

from __future__ import annotations

import duckdb
import pandas as pd

from backend.analysis import pairs
from backend.analysis.pairs import MISSING  # noqa: F401 — the page's names
from backend.metrics.pairs import OUTCOMES  # noqa: F401 — the page's names
from backend.store.sessions import DATA, reads


def diff_html(a: str, b: str) -> tuple[str, str]:
    """Both texts as HTML with the differing words marked: removed words in <del> on side a, added words in <mark> on
    side b. Every token is HTML-escaped first, so the result is safe to render."""
    return pairs.diff_html(a, b)


@reads(DATA)
def pair_rows(
    con: duckdb.DuckDBPyConnection, dataset_id: str, kind: str, run_id: str | None = None, filters: tuple = ()
) -> pd.DataFrame:
    """One row per pair of `kind`: ids and roles, both members' input/hypothesis/gold label, the run's predictions and
    correctness per member, the outcome cell, and member a's split, trigger_type and hop. Without a run the
    prediction columns are empty and outcome is None."""
    return pairs.pair_rows(con, dataset_id, kind, run_id, filters)


@reads(DATA)
def pair_sets(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per (dataset, kind, split of member a): pair_set id 'dataset/kind/split', roles, count."""
    return pairs.pair_sets(con)


@reads(DATA)
def pair_summary(con: duckdb.DuckDBPyConnection, dataset_id: str, kind: str, run_id: str, filters: tuple = ()) -> dict:
    """The 2×2 outcome table, pair accuracy and flip rate (95% CI), gold flip rate and McNemar p over the pairs in the
    filters (an outcome filter is ignored: the table shows every cell)."""
    return pairs.pair_summary(con, dataset_id, kind, run_id, filters)


@reads(DATA)
def runs_for(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Complete classification runs of a dataset, the default (a paper model, else the first) first."""
    return pairs.runs_for(con, dataset_id)
