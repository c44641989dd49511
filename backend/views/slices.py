"""Slice discovery: where does a run err significantly more than it does overall?

The search is exhaustive, not sampled: every combination of up to three facets (the dataset's
facets — built-in, a user dataset's own columns, operator — and whether each other model run got the
item right), and within it every combination of values with at least `min_support` items, is one
slice; each is tested and the p-values are corrected together for the number tested
(Benjamini–Hochberg, statsmodels). We do not use `sliceline`: it ranks slices by a size-weighted
error score without a test, and the paper-style question here is "significantly worse, after
correcting for how many slices were looked at".

- **One run** (error rate): the slice's errors k of n against the overall error rate p0, a one-sided
  exact binomial test (is the slice's rate above p0?); lift = rate / p0; Wilson 95% interval.
- **Run B against run A**: the per-item accuracy difference d = right_B − right_A ∈ {−1, 0, 1} (B − A
  in accuracy, as on Explore: negative where B is worse). Two questions, chosen by `question`:
  - `worse` — where is B worse than A? The slice's B − A is tested against 0: McNemar's exact test
    (a one-sided sign test) on the items exactly one run got right: are those A got right and B got
    wrong more than half? lift = the slice's B − A minus the overall B − A.
  - `shrinks` — where does B's advantage over A shrink or reverse, relative to its overall advantage?
    The slice's mean d against the items outside it, a one-sided Welch t-test (d is bounded, and
    slices have at least `min_support` items); a slice where B is better, but less than overall, counts.
  The slice's B − A has a normal-approximation 95% interval over its items.

Each slice is a filter set Explore reproduces (another run's correctness becomes Explore's run B
with `correct_b`), so a slice opens there in one click.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from backend.analysis import slicing
from backend.store import examples as store_examples
from backend.store.runs import CLASSIFICATION_TASKS  # noqa: F401 — the page's names
from backend.store.sessions import DATA, reads

QUESTIONS = {
    "worse": "where run B is worse than run A (B − A < 0, tested against 0)",
    "shrinks": "where run B's advantage over A shrinks or reverses (B − A below its overall value)",
}
MAX_DEPTH = 3
MAX_VALUES = 50  # a facet with more distinct values than this is an id, not a facet
MAX_OTHER_RUNS = 8  # other runs whose correctness is a facet (the most recent non-baseline runs)
RUN = "run:"  # facet name prefix for another run's correctness ("right" / "wrong")


@dataclass(frozen=True)
class Found:
    slices: pd.DataFrame  # one row per slice tested, most significant first; `worse` marks the asked direction
    tested: int  # how many slices were tested (what BH corrects for)
    overall: float  # the whole dataset's error rate (or B − A accuracy difference)
    n: int  # items scored
    facets: tuple[str, ...]
    seconds: float
    question: str | None = None  # with run B: a key of QUESTIONS


def other_runs(con: duckdb.DuckDBPyConnection, dataset_id: str, exclude: tuple[str, ...]) -> list[str]:
    runs = slicing.runs_for(con, dataset_id)
    runs = runs[
        runs["task"].isin(CLASSIFICATION_TASKS) & (runs["source"] != "baseline") & ~runs["run_id"].isin(exclude)
    ]
    return list(runs["run_id"])[:MAX_OTHER_RUNS]


def items(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    run_a: str,
    run_b: str | None = None,
    others: tuple[str, ...] | None = None,
    splits: tuple[str, ...] = (),
) -> pd.DataFrame:
    """One row per item run A (and B) labelled that has a gold label, of `splits` (none: every split, pooled): its
    facet values as text, `wrong_a` (and `wrong_b`), and a `run:RUN` column (right / wrong) per other run in
    `others` (default: `other_runs`; none when comparing B with A)."""
    facets = [f for f, values in slicing.facet_values(con, dataset_id).items() if 2 <= len(values) <= MAX_VALUES]
    frame = store_examples.wrongness(con, dataset_id, facets, run_a, run_b)
    if splits and "split" in frame:  # (a dataset with one split has no split facet: nothing to choose)
        frame = frame[frame["split"].isin(splits)].reset_index(drop=True)
    if run_b is None:
        for run in other_runs(con, dataset_id, (run_a,)) if others is None else others:
            predicted = frame["example_key"].map(store_examples.labels_by_key(con, run))
            frame[RUN + run] = np.where(predicted.isna(), None, np.where(predicted == frame["_gold"], "right", "wrong"))
    return frame.drop(columns=["example_key", "_gold"])


def facets_of(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c not in ("wrong_a", "wrong_b") and 2 <= frame[c].nunique() <= MAX_VALUES]


def _cells(codes: list[np.ndarray], sizes: list[int], weights: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Counts per combination of values (mixed-radix code over the facets; items missing one are left out)."""
    valid = np.all([c >= 0 for c in codes], axis=0)
    combined = np.zeros(len(codes[0]), dtype=np.int64)
    for c, size in zip(codes, sizes):
        combined = combined * size + np.where(c >= 0, c, 0)
    length = int(np.prod(sizes))
    counts = np.bincount(combined[valid], minlength=length)
    return counts, [np.bincount(combined[valid], weights=w[valid], minlength=length) for w in weights]


def discover(
    frame: pd.DataFrame,
    min_support: int = 30,
    depth: int = MAX_DEPTH,
    facets: list[str] | None = None,
    alpha: float = 0.05,
    question: str = "worse",
) -> Found:
    """Every slice of up to `depth` facets with at least `min_support` items, tested and BH-corrected.

    With a `wrong_b` column the slices answer `question` (QUESTIONS) about B − A; else where A errs more."""
    started = time.perf_counter()
    if question not in QUESTIONS:
        raise ValueError(f"question: {question!r}; expected one of {', '.join(QUESTIONS)}")
    facets = facets if facets is not None else facets_of(frame)
    compare = "wrong_b" in frame and frame["wrong_b"].notna().any()
    wrong_a = frame["wrong_a"].to_numpy(dtype=float)
    if compare:
        wrong_b = frame["wrong_b"].to_numpy(dtype=float)
        d = wrong_a - wrong_b  # right_b − right_a: B − A in accuracy
        weights = [d, d * d]
        overall = float(d.mean()) if len(d) else 0.0
        total, total_squares = float(d.sum()), float((d * d).sum())
    else:
        weights = [wrong_a]
        overall = float(wrong_a.mean()) if len(wrong_a) else 0.0
    encoded = {f: pd.factorize(frame[f], sort=True) for f in facets}
    fingerprint = list(np.random.default_rng(0).random((2, len(frame))))  # summed per slice: its item set's print
    weights = weights + fingerprint
    rows = []
    for k in range(1, depth + 1):
        for combo in itertools.combinations(facets, k):
            if sum(f.startswith(RUN) for f in combo) > 1:
                continue  # Explore holds one other run (run B): a slice names at most one
            codes = [encoded[f][0] for f in combo]
            sizes = [max(len(encoded[f][1]), 1) for f in combo]
            counts, sums = _cells(codes, sizes, weights)
            for cell in np.flatnonzero(counts >= min_support):
                values = np.unravel_index(cell, sizes)
                rows.append(
                    (
                        combo,
                        tuple(str(encoded[f][1][v]) for f, v in zip(combo, values)),
                        counts[cell],
                        *(s[cell] for s in sums),
                    )
                )
    columns = ["facets", "values", "n", *(["sum", "squares"] if compare else ["errors"]), "print1", "print2"]
    table = _merged(pd.DataFrame(rows, columns=columns))
    asked = question if compare else None
    if table.empty:
        return Found(table, 0, overall, len(frame), tuple(facets), time.perf_counter() - started, asked)
    if compare:
        table, p, severity = _compared(table, question, overall, len(d), total, total_squares)
    else:
        n, errors = table["n"].to_numpy(), table["errors"].to_numpy()
        low, high = proportion_confint(errors, n, alpha=0.05, method="wilson")
        p = stats.binom.sf(errors - 1, n, overall)
        table = table.assign(
            **{"error rate": errors / n, "low": low, "high": high, "lift": errors / n / overall if overall else np.nan}
        )
        table["worse"], severity = table["lift"] > 1, table["lift"]
    table["p"] = p
    table["q (BH)"] = multipletests(p, method="fdr_bh")[1]
    table["significant"] = table["q (BH)"] < alpha
    table["depth"] = table["facets"].map(len)
    table["slice"] = _names(table)
    table = (
        table.assign(_severity=severity)
        .sort_values(["q (BH)", "_severity", "n"], ascending=[True, False, False], kind="stable")
        .drop(columns="_severity")
        .reset_index(drop=True)
    )
    return Found(table, len(table), overall, len(frame), tuple(facets), time.perf_counter() - started, asked)


def _merged(table: pd.DataFrame) -> pd.DataFrame:
    """One row per distinct item set: slices that hold the same items (e.g. NOPE's split = main and
    adversarial = false) are one slice, named by its shortest description, the others listed in `same as`;
    so they are tested, and corrected for, once. Two item sets share both random-weight sums only by accident
    (identical sets sum the same weights in the same order, so their sums are equal exactly)."""
    if table.empty:
        return table.assign(**{"same as": []}).drop(columns=["print1", "print2"])
    table = table.assign(_depth=table["facets"].map(len)).sort_values("_depth", kind="stable")
    key = ["n", "print1", "print2"]
    groups = table.assign(_name=_names(table)).groupby(key, sort=False)["_name"]
    same = groups.transform(lambda n: "; ".join(n.iloc[1:]))
    return (
        table.assign(**{"same as": same}).drop_duplicates(key).drop(columns=[*key[1:], "_depth"]).reset_index(drop=True)
    )


def _names(table: pd.DataFrame) -> list[str]:
    """Each slice as 'facet = value ∧ …'."""
    return [" ∧ ".join(f"{f} = {v}" for f, v in zip(fs, vs)) for fs, vs in zip(table["facets"], table["values"])]


def _compared(
    table: pd.DataFrame, question: str, overall: float, total_n: int, total: float, total_squares: float
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """B − A per slice (accuracy), its interval, and the p-value of `question`; severity orders ties in q."""
    n, sums, squares = table["n"].to_numpy(), table["sum"].to_numpy(), table["squares"].to_numpy()
    mean = sums / n
    var = _variance(squares, mean, n)
    half = 1.96 * np.sqrt(var / n)
    # d ∈ {−1, 0, 1}: the squares count the items exactly one run got right, the sum their balance
    b_only, a_only = (squares + sums) / 2, (squares - sums) / 2
    table = table.assign(
        **{
            "B − A": mean,
            "overall B − A": overall,
            "low": mean - half,
            "high": mean + half,
            "lift": mean - overall,
            "A right, B wrong": a_only.round().astype(int),
            "B right, A wrong": b_only.round().astype(int),
        }
    )
    if question == "worse":  # McNemar's exact test, one-sided: A wins more than half of the discordant items
        p = np.where(squares > 0, stats.binom.sf(np.round(a_only) - 1, np.round(squares), 0.5), 1.0)
        table["worse"] = table["B − A"] < 0
        return table, p, -mean
    rest = np.maximum(total_n - n, 1)
    mean_rest = (total - sums) / rest
    var_rest = _variance(total_squares - squares, mean_rest, rest)
    se = np.sqrt(var / n + var_rest / rest)
    df = se**4 / ((var / n) ** 2 / np.maximum(n - 1, 1) + (var_rest / rest) ** 2 / np.maximum(rest - 1, 1))
    table["worse"] = table["lift"] < 0
    return table, stats.t.cdf((mean - mean_rest) / se, df), -(mean - overall)


def _variance(squares, means, counts):
    return np.maximum(squares / counts - means**2, 0) * counts / np.maximum(counts - 1, 1) + 1e-12


@reads(DATA)
def find(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    run_a: str,
    run_b: str | None = None,
    min_support: int = 30,
    depth: int = MAX_DEPTH,
    others: tuple[str, ...] | None = None,
    facets: tuple[str, ...] | None = None,
    question: str = "worse",
    splits: tuple[str, ...] = (),
) -> Found:
    """`discover` over the store's items of one run (or B against A) on `splits` (none: every split, pooled);
    `facets` None = every facet."""
    frame = items(con, dataset_id, run_a, run_b, others, splits)
    return discover(frame, min_support, depth, list(facets) if facets is not None else None, question=question)


def explore_params(
    dataset_id: str, run_a: str, run_b: str | None, facets: tuple, values: tuple, split: dict | None = None
) -> dict:
    """The Explore URL parameters that reproduce a slice: the splits it was found on (`slicing.split_param`), each
    facet = its value; another run's correctness as run B with `correct_b`."""
    params: dict = {"dataset": dataset_id, "run_a": run_a, **(split or {})}
    if run_b:
        params["run_b"] = run_b
    for facet, value in zip(facets, values):
        if facet.startswith(RUN):
            params["run_b"], params["correct_b"] = facet[len(RUN) :], "correct" if value == "right" else "incorrect"
        else:
            params[facet] = slicing.url_value(facet, value)
    return params


@reads(DATA)
def facet_values(con: duckdb.DuckDBPyConnection, dataset_id: str) -> dict[str, list]:
    """Facet → its sorted distinct non-null values, for the facets the dataset uses: the typed columns, then the
    `extra` keys its description names (a user dataset's categorical columns), as 'extra.KEY'."""
    return slicing.facet_values(con, dataset_id)


@reads(DATA)
def headline_split(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str | None:
    """The split a dataset's paper reports first (its description's first headline split), shown by default: main and
    adversarial items (NOPE) are reported apart, not pooled. None for a dataset without a description."""
    return slicing.headline_split(con, dataset_id)


@reads(DATA)
def runs_for(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Complete runs of the dataset that stored predictions: classification runs first (baselines last among them),
    then QA, writing and retrieval runs; with each run's label order ([] if none) and why it is contaminated ('' if
    not)."""
    return slicing.runs_for(con, dataset_id)


@reads(DATA)
def split_param(con: duckdb.DuckDBPyConnection, dataset_id: str, chosen: tuple = ()) -> dict:
    """Explore's `split` URL parameter for these splits, spelled out ("split=" for every split, pooled) on a dataset
    with several splits, where a link without it means the headline split; {} on a dataset with one."""
    return slicing.split_param(con, dataset_id, chosen)
