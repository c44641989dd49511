"""What the Gradient page shows: people's certainty per group and a run's on the same scale
(backend.analysis.gradient)."""

from __future__ import annotations

import duckdb
import pandas as pd

from backend.analysis import gradient
from backend.analysis.gradient import PEOPLE  # noqa: F401 — the page's names
from backend.models.contamination import FLAG  # noqa: F401 — the page's names
from backend.store.sessions import DATA, reads


def agreement(table: pd.DataFrame) -> pd.DataFrame:
    """run, groups, rho, low, high, note: Spearman ρ between each run's and people's group means (CI over groups);
    `note` says why ρ is undefined where it is (a run with one value in every group, or fewer than 3 groups)."""
    return gradient.agreement(table)


@reads(DATA)
def certainty(
    con: duckdb.DuckDBPyConnection, dataset_id: str, by: str | None = None, run_ids: tuple[str, ...] = ()
) -> pd.DataFrame:
    """who (people or a run id), group, n (ratings), participants, items, mean, low, high: people's mean per group of
    the spec's split, ordered by it, then each run's on the same items."""
    return gradient.certainty(con, dataset_id, by, run_ids)


@reads(DATA)
def datasets(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Loaded datasets with a gradient spec."""
    return gradient.datasets(con)


@reads(DATA)
def group_items(
    con: duckdb.DuckDBPyConnection, dataset_id: str, by: str, group: str, run_id: str | None = None
) -> pd.DataFrame:
    """The items behind one point: example_id, split, the item's text, its ratings (n), people's mean, and the run's
    value when a run is chosen — every split, so the prior experiment's items are listed too."""
    return gradient.group_items(con, dataset_id, by, group, run_id)


@reads(DATA)
def prior_effect(
    con: duckdb.DuckDBPyConnection, dataset_id: str, by: str | None = None, run_ids: tuple[str, ...] = ()
) -> pd.DataFrame:
    """who, group, n_high_prior, mean_high_prior, n_low_prior, mean_low_prior, effect, effect_low, effect_high: the
    ratings and mean certainty after a high-prior fact and after a low one, and the effect (the first mean minus the
    second), per group, for people and each run (empty for a dataset without priors); `effect_low` and
    `effect_high` name the effect's 95% interval, as `low` and `high` do in every table of the lab."""
    return gradient.prior_effect(con, dataset_id, by, run_ids)


@reads(DATA)
def runs(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """The dataset's complete NLI runs: run_id, model_id, source, contaminated (why, '' when clean)."""
    return gradient.runs(con, dataset_id)


@reads(DATA)
def spec(con: duckdb.DuckDBPyConnection, dataset_id: str) -> dict:
    """The dataset's gradient spec ({} when it has none). A built-in dataset stored before it had one takes its
    loader's."""
    return gradient.spec(con, dataset_id)


@reads(DATA)
def analysed(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str:
    """What the page says of a study's analysed participants ('' for a dataset that is not a study's)."""
    return gradient.analysed(con, dataset_id)
