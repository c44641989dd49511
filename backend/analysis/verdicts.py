"""A run's worth against the best trivial baseline, from the store: its headline metric per dataset against
the best trivial baseline there (the verdict every page shows beside the model's outputs and the model card lists).

The trivial baselines of a dataset and split are the baseline runs that look at no input (random, a constant label,
the train split's majority: `datasets.baselines.is_trivial`), scored on the same headline metric
(`analysis.leaderboard`) and on the same items as the run: a run over part of a split (`--limit`) is compared with
the baselines' scores on its items, not on the whole split. Random guessing is scored by its expectation over 1,000
guesses of every item (interval: the middle 95% of their scores), not by the one seeded draw the stored random run
made. The best of them is the baseline. A run's verdict:

- **below baseline**: the upper end of its 95% CI is under that baseline's value;
- **not better than baseline**: otherwise, when its CI overlaps the baseline's interval;
- **above baseline**: its CI lies wholly above the baseline's interval;
- **no trivial baseline**: nothing to compare with (a QA or retrieval metric, a dataset without baselines).
"""

from __future__ import annotations

import logging
from functools import lru_cache

import duckdb
import numpy as np
import pandas as pd

from backend.analysis import leaderboard
from backend.datasets import baselines
from backend.metrics import classification
from backend.store import run_metrics

BELOW, NOT_BETTER, ABOVE, NO_BASELINE = (
    "below baseline",
    "not better than baseline",
    "above baseline",
    "no trivial baseline",
)
FLAGGED = (BELOW, NOT_BETTER)  # the verdicts shown as badges beside a model's outputs
KEYS = ["dataset", "split", "metric"]
RANDOM = "baseline: random"
BASELINE = ["baseline", "baseline_value", "baseline_low", "baseline_high", "baseline_n"]
METHOD = "verdicts-1"  # part of the cached verdicts' key: change it when what a verdict is computed from changes
log = logging.getLogger(__name__)


def verdicts(con: duckdb.DuckDBPyConnection, dataset: str | None = None) -> pd.DataFrame:
    """Every run that is not a baseline, per headline split: dataset, run, model, kind, split, metric, value,
    low, high, n, unparsed, contaminated, baseline (its run id, '' without one), baseline_value, baseline_low,
    baseline_high, baseline_n (the items both were scored on), verdict (one of BELOW, NOT_BETTER, ABOVE,
    NO_BASELINE) and figures (the numbers behind it, in words). One dataset's runs only when `dataset` is given:
    what a page's badge asks for, so it does not score every dataset's baselines.

    Computed once per version of the data and kept in the store (`run_metrics.keep_verdicts`), so a page's first
    render reads them in one query; a read-only connection computes them without keeping them."""
    cached, version = run_metrics.current_verdicts(con, dataset or "", f"{METHOD}:")
    if cached is not None:
        return cached
    found = _computed(con, dataset)
    try:
        run_metrics.keep_verdicts(con, dataset or "", version, found)
    except duckdb.Error as exc:  # e.g. a read-only connection (a benchmark, an old store being read)
        log.info("verdicts not cached: %s", exc)
    return found


def _computed(con: duckdb.DuckDBPyConnection, dataset: str | None) -> pd.DataFrame:
    """`verdicts`, from the leaderboard's rows and the predictions."""
    table = leaderboard.headline(con, dataset)
    trivial = table[table["model"].map(baselines.is_trivial).astype(bool)]  # bool also when no row is left
    runs = table[table["kind"] != "baseline"].reset_index(drop=True)
    whole = trivial.groupby(KEYS)["n"].max().rename("whole")
    runs = runs.join(whole, on=KEYS)
    part = runs[runs["n"] < runs["whole"]]
    needed = set(trivial.loc[trivial["model"] == RANDOM, "run"]) | (
        set(trivial["run"]) | set(part["run"]) if len(part) else set()
    )
    predictions = run_metrics.scored_predictions(con, sorted(needed))  # what is scored again: on a run's own items
    found: dict[tuple, list] = {}
    rows = []
    for row in runs.itertuples():
        if pd.isna(row.whole):
            rows.append(["", np.nan, np.nan, np.nan, 0])
            continue
        subset = row.n < row.whole
        key = (row.dataset, row.split, row.metric, row.run if subset else "")
        if key not in found:
            items = predictions[(predictions["run_id"] == row.run) & (predictions["split"] == row.split)]["example_id"]
            found[key] = _best(predictions, trivial, key[:3], set(items) if subset else None)
        rows.append(found[key])
    runs[BASELINE] = pd.DataFrame(rows, columns=BASELINE, index=runs.index)
    below = runs["high"] < runs["baseline_value"]
    overlaps = (runs["low"] <= runs["baseline_high"]) & (runs["high"] >= runs["baseline_low"])
    runs["verdict"] = np.select([runs["baseline"] == "", below, overlaps], [NO_BASELINE, BELOW, NOT_BETTER], ABOVE)
    runs["figures"] = [_figures(row) for row in runs.itertuples()]
    return runs.drop(columns="whole")


def _best(predictions: pd.DataFrame, trivial: pd.DataFrame, key: tuple, items: set | None) -> list:
    """[run id, value, low, high, n] of the best trivial baseline of (dataset, split, metric), scored on `items`
    (None: all the baseline's items); random guessing by its expectation."""
    dataset, split, metric = key
    scored = []
    for baseline in trivial[(trivial[KEYS] == list(key)).all(axis=1)].itertuples(index=False):
        run, model = baseline.run, baseline.model
        if items is None and model != RANDOM:  # on all its items: its headline row (analysis.leaderboard, cached)
            scored.append([run, baseline.value, baseline.low, baseline.high, baseline.n])
            continue
        rows = predictions[(predictions["run_id"] == run) & (predictions["split"] == split)]
        if items is not None:
            rows = rows[rows["example_id"].isin(items)]
        labels = list(rows["labels"].iloc[0]) if len(rows) else []
        if model == RANDOM:
            estimate, run = _guessing(tuple(rows["gold_label"]), tuple(labels), metric), f"{run} (expected)"
        elif metric == "accuracy":
            estimate = classification.accuracy(rows["gold_label"], rows["label"])
        else:
            estimate = classification.macro_f1(rows["gold_label"], rows["label"], labels)
        scored.append([run, estimate.value, estimate.low, estimate.high, estimate.n])
    return max(scored, key=lambda s: s[1]) if scored else ["", np.nan, np.nan, np.nan, 0]


@lru_cache(maxsize=64)
def _guessing(gold: tuple, labels: tuple, metric: str):
    """`classification.random_guessing`, once per set of gold labels (every page render asks for the verdicts)."""
    return classification.random_guessing(list(gold), list(labels), metric)


def _figures(row) -> str:
    """'accuracy 0.587 [0.560, 0.613] (n=1,000, main) against nope/baseline/always-E: 0.806 [...] on the same
    1,000 items'."""
    said = f"{row.metric} {row.value:.3f} [{row.low:.3f}, {row.high:.3f}] (n={row.n:,}, {row.split})"
    if not row.baseline:
        return said + "; no trivial baseline on this split"
    return (
        f"{said} against {row.baseline}: {row.baseline_value:.3f} [{row.baseline_low:.3f}, {row.baseline_high:.3f}]"
        f" on the same {row.baseline_n:,} items"
    )


def of(
    table: pd.DataFrame,
    dataset: str | None,
    runs: tuple[str, ...] = (),
    model: str | None = None,
    splits: tuple[str, ...] | None = None,
) -> pd.DataFrame:
    """The rows of `verdicts` flagged (BELOW, NOT_BETTER) for some runs (or every run of a model), on one dataset
    or (None) on any, on some splits (None: every headline split)."""
    chosen = (table["run"].isin(runs) | (table["model"] == model)) & table["verdict"].isin(FLAGGED)
    if dataset is not None:
        chosen &= table["dataset"] == dataset
    if splits is not None:
        chosen &= table["split"].isin(splits)
    found = table[chosen]
    return found.sort_values("verdict", key=lambda v: v != BELOW, kind="stable", ignore_index=True)  # below first
