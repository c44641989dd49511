"""A run's worth against the best trivial baseline, from the store: its headline metric per dataset against
the best trivial baseline there (the verdict every page shows beside the model's outputs and the model card lists).

The trivial baselines of a dataset and split are the baseline runs that look at no input (random, a constant label,
the train split's majority: `datasets.baselines.is_trivial`) and every constant label of the dataset whether or not a
run of it is stored (so the split's own majority label is always among them: issue 64, item 2, where NOPE adv's
only stored constant, always-E, scores 15% and always-N 50%), scored on the same headline metric
(`analysis.leaderboard`) and on the run's own items (a run over part of a split, `--limit`, is compared on its
items). Random guessing is scored by its expectation (exact for accuracy; the mean of 1,000 guesses of every item
for macro-F1), not by the one seeded draw the stored random run made. The strongest of them on those items is the
baseline, and the verdict names it.

One rule for every verdict: the run is compared with that baseline on the same items by a two-sided test at the 5%
level (`metrics.paired_tests`), and the verdict is the sign of the difference run − baseline when the test's own 95%
interval of that difference excludes 0:

- against a baseline's predictions: exact McNemar for accuracy, a paired bootstrap for macro-F1;
- against random guessing: an exact binomial test of the run's correct count against the expected accuracy, a Monte
  Carlo test against 1,000 random guesses for macro-F1;

- **below baseline**: the difference's interval lies wholly under 0;
- **not different from baseline**: it holds 0;
- **above baseline**: it lies wholly above 0;
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
from backend.metrics import classification, paired_tests
from backend.store import run_metrics

BELOW, NOT_DIFFERENT, ABOVE, NO_BASELINE = (
    "below baseline",
    "not different from baseline",
    "above baseline",
    "no trivial baseline",
)
FLAGGED = (BELOW, NOT_DIFFERENT)  # the verdicts shown as badges beside a model's outputs
KEYS = ["dataset", "split", "metric"]
RANDOM = "baseline: random"
BASELINE = ["baseline", "baseline_value", "baseline_low", "baseline_high", "baseline_n"]
TEST = ["difference", "difference_low", "difference_high", "p_value", "test", "test_counts"]
METHOD = f"verdicts-3:{leaderboard.VERSION}"  # part of the cached verdicts' key: what they are computed from
RULE = (  # what every verdict badge and the model card say of the rule
    "Each run is compared with the strongest trivial baseline on its own items — random guessing's expectation, "
    "every constant label (so the split's majority label too) or the train majority, whichever scores highest there, "
    "named with the verdict — by a two-sided test at the 5% level: exact McNemar for accuracy and a paired "
    "bootstrap for macro-F1 against a baseline's predictions; an exact binomial test of the correct count (accuracy) "
    "or a Monte Carlo test against 1,000 random guesses (macro-F1) against random guessing. **Below** or **above "
    "baseline** when the test's 95% interval of the difference run − baseline lies wholly under or over 0; **not "
    "different from baseline** when it holds 0; **no trivial baseline** when there is none to compare with."
)  # part of the cached verdicts' key: change it when what a verdict is computed from changes
log = logging.getLogger(__name__)


def verdicts(con: duckdb.DuckDBPyConnection, dataset: str | None = None) -> pd.DataFrame:
    """Every run that is not a baseline, per headline split: dataset, run, model, kind, split, metric, value,
    low, high, n, unparsed, contaminated, baseline (its run id, '' without one), baseline_value, baseline_low,
    baseline_high, baseline_n (the items both were scored on), verdict (one of BELOW, NOT_DIFFERENT, ABOVE,
    NO_BASELINE), the test behind it (difference run − baseline, difference_low, difference_high: its 95% interval,
    p_value, test: its name, test_counts: what decided it) and figures (the numbers behind it, in words). One
    dataset's runs only when `dataset` is given: what a page's badge asks for, so it does not score every dataset's
    baselines.

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
    keys = set(map(tuple, trivial[KEYS].to_numpy()))
    compared = runs[np.array([tuple(key) in keys for key in runs[KEYS].to_numpy()], dtype=bool)]
    predictions = run_metrics.scored_predictions(con, sorted(set(compared["run"]) | set(trivial["run"])))
    by_run = {key: rows.set_index("example_id") for key, rows in predictions.groupby(["run_id", "split"])}
    rows = []
    for row in runs.itertuples():
        mine = by_run.get((row.run, row.split))
        candidates = trivial[(trivial[KEYS] == [row.dataset, row.split, row.metric]).all(axis=1)]
        if mine is None or candidates.empty:
            rows.append([NO_BASELINE, "", np.nan, np.nan, np.nan, 0, *_UNTESTED])
            continue
        rows.append(_compared_with(mine, candidates, by_run, row.metric, row.dataset))
    runs[["verdict", *BASELINE, *TEST]] = pd.DataFrame(rows, columns=["verdict", *BASELINE, *TEST], index=runs.index)
    runs["figures"] = [_figures(row) for row in runs.itertuples()]
    return runs


def _compared_with(mine: pd.DataFrame, candidates: pd.DataFrame, by_run: dict, metric: str, dataset: str) -> list:
    """[verdict, *BASELINE, *TEST] of one run (its predictions `mine`, by example id) against the strongest of the
    trivial baselines `candidates` and every constant label, each scored on the run's items."""
    labels = list(mine["labels"].iloc[0])
    best = None
    for baseline in candidates.itertuples(index=False):
        if baseline.model == RANDOM:
            items = mine
            estimate = _guessing(tuple(items["gold_label"]), tuple(labels), metric)
            name, answers = f"{baseline.run} (expected)", None
        else:
            theirs = by_run.get((baseline.run, baseline.split))
            if theirs is None:
                continue
            items = mine[mine.index.isin(theirs.index)]
            answers = theirs["label"].reindex(items.index)
            estimate = _scored(items["gold_label"], answers, labels, metric)
            name = baseline.run
        if best is None or estimate.value > best[1].value:
            best = (name, estimate, items, answers)
    for label in labels:  # every constant, stored or not: the split's majority label is one of them
        answers = pd.Series(label, index=mine.index, dtype=object)
        estimate = _scored(mine["gold_label"], answers, labels, metric)
        if best is None or estimate.value > best[1].value:
            best = (f"{dataset}/always-{label} (a constant label, scored here)", estimate, mine, answers)
    if best is None:
        return [NO_BASELINE, "", np.nan, np.nan, np.nan, 0, *_UNTESTED]
    name, estimate, items, answers = best
    tested = _test(items, answers, labels, metric)
    verdict = {-1: BELOW, 0: NOT_DIFFERENT, 1: ABOVE}[tested.verdict]
    return [verdict, name, estimate.value, estimate.low, estimate.high, estimate.n, *_tested(tested)]


def _scored(gold: pd.Series, answers: pd.Series, labels: list[str], metric: str):
    if metric == "accuracy":
        return classification.accuracy(gold, answers)
    return classification.macro_f1(gold, answers, labels)


def _test(items: pd.DataFrame, answers: pd.Series | None, labels: list[str], metric: str) -> paired_tests.Difference:
    """The paired test of the run's predictions on `items` against the baseline's `answers` on the same items
    (None: random guessing, by its expectation)."""
    gold, mine = items["gold_label"].to_numpy(object), items["label"].to_numpy(object)
    if answers is None and metric == "accuracy":
        right = int(classification.correct(gold, mine).sum())
        return paired_tests.binomial(right, len(gold), classification.guessing_accuracy(gold, labels))
    if answers is None:
        value = classification.macro_f1(gold, mine, labels, ci=False).value
        return paired_tests.against_draws(value, _draws(tuple(gold), tuple(labels), metric), len(gold))
    theirs = answers.to_numpy(object)
    if metric == "accuracy":
        return paired_tests.mcnemar(classification.correct(gold, mine) > 0, classification.correct(gold, theirs) > 0)
    return paired_tests.bootstrap_difference(*classification.macro_f1_difference(gold, mine, theirs, labels))


_UNTESTED = [np.nan, np.nan, np.nan, np.nan, "", ""]


def _tested(tested: paired_tests.Difference) -> list:
    return [tested.difference, tested.low, tested.high, tested.p_value, tested.test, tested.counts]


@lru_cache(maxsize=64)
def _guessing(gold: tuple, labels: tuple, metric: str):
    """`classification.random_guessing`, once per set of gold labels (every page render asks for the verdicts)."""
    return classification.random_guessing(list(gold), list(labels), metric)


@lru_cache(maxsize=64)
def _draws(gold: tuple, labels: tuple, metric: str) -> np.ndarray:
    """`classification.guessing_scores`, once per set of gold labels."""
    return classification.guessing_scores(list(gold), list(labels), metric)


def _figures(row) -> str:
    """'accuracy 0.587 [0.560, 0.613] (n=1,000, main) against nope/baseline/always-E: 0.806 [0.789, 0.821] on the
    same 1,000 items; difference −0.219 [−0.251, −0.187], exact McNemar p < 0.001 (… items only the run got right,
    … only the baseline)'."""
    said = f"{row.metric} {_interval(row.value, row.low, row.high)} (n={row.n:,}, {row.split})"
    if not row.baseline:
        return said + "; no trivial baseline on this split"
    against = (
        f"{said} against {row.baseline}: {_interval(row.baseline_value, row.baseline_low, row.baseline_high)}"
        f" on the same {row.baseline_n:,} items"
    )
    difference = (
        f"difference {row.difference:+.3f} [{row.difference_low:+.3f}, {row.difference_high:+.3f}]"
        if row.difference_low == row.difference_low
        else f"difference {row.difference:+.3f} (the same items right: no interval)"
    )
    p = "p < 0.001" if row.p_value < 0.001 else f"p = {row.p_value:.3f}"
    counts = f" ({row.test_counts})" if row.test_counts else ""
    return f"{against}; {difference}, {row.test} {p}{counts}"


def _interval(value: float, low: float, high: float) -> str:
    return f"{value:.3f} [{low:.3f}, {high:.3f}]" if low == low else f"{value:.3f} (no interval)"


def of(
    table: pd.DataFrame,
    dataset: str | None,
    runs: tuple[str, ...] = (),
    model: str | None = None,
    splits: tuple[str, ...] | None = None,
) -> pd.DataFrame:
    """The rows of `verdicts` flagged (BELOW, NOT_DIFFERENT) for some runs (or every run of a model), on one dataset
    or (None) on any, on some splits (None: every headline split)."""
    chosen = (table["run"].isin(runs) | (table["model"] == model)) & table["verdict"].isin(FLAGGED)
    if dataset is not None:
        chosen &= table["dataset"] == dataset
    if splits is not None:
        chosen &= table["split"].isin(splits)
    found = table[chosen]
    return found.sort_values("verdict", key=lambda v: v != BELOW, kind="stable", ignore_index=True)  # below first
