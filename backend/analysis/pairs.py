"""Minimal-pair views: which pair sets exist, one row per pair with a run's predictions, the 2×2
outcome summary, and a word-level diff of the two members for highlighting.

Plain Python over `backend.store.queries` (the Minimal pairs page calls these through
`ui.resources.query`, so every result is cached per store version and arguments). Filters are a
tuple of (name, value) pairs so they are hashable: names in `FILTERS`, value None = no filter.
"""

from __future__ import annotations

import difflib
import html
import re

import duckdb
import numpy as np
import pandas as pd

from backend.metrics import pairs as pair_metrics
from backend.models import contamination
from backend.store import queries
from backend.store import runs as store_runs

FILTERS = ("split", "trigger_type", "hop", "outcome")
MISSING = "not predicted"  # outcome of a pair whose run lacks a member's prediction
TASKS = store_runs.CLASSIFICATION_TASKS
SOURCE_ORDER = {"import": 0, "batch": 1, "baseline": 2, "live": 3}
PREFERRED_RUNS = ("nope/RoBERTa-large/mnli-snli-anli-fever/1",)  # a paper model (Parrish et al. 2021)
KIND_ORDER = {"negation": 0, "adversarial": 1, "minimal": 2}  # the page's default pair set comes first
SPLIT_ORDER = {"main": 0, "test": 1}


def pair_sets(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per (dataset, kind, split of member a): pair_set id 'dataset/kind/split', roles, count."""
    frames = []
    for dataset_id in queries.pair_counts(con)["dataset_id"].unique():
        pairs = queries.pairs_frame(con, dataset_id)
        split = pairs["example_a"].map(queries.examples_frame(con, dataset_id)["split"])
        frames.append(pairs.assign(dataset=dataset_id, split=split.fillna("?")))
    if not frames:
        return pd.DataFrame(columns=["pair_set", "dataset", "kind", "split", "role_a", "role_b", "count"])
    table = (
        pd.concat(frames)
        .groupby(["dataset", "kind", "split"], sort=True)
        .agg(role_a=("role_a", "first"), role_b=("role_b", "first"), count=("pair_id", "size"))
        .reset_index()
    )
    table.insert(0, "pair_set", table["dataset"] + "/" + table["kind"] + "/" + table["split"])
    rank = [
        (KIND_ORDER.get(k, 9), SPLIT_ORDER.get(s, 9), p)
        for k, s, p in zip(table["kind"], table["split"], table["pair_set"])
    ]
    return table.iloc[sorted(range(len(table)), key=rank.__getitem__)].reset_index(drop=True)


def runs_for(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Complete classification runs of a dataset, the default (a paper model, else the first) first."""
    runs = contamination.runs_frame(con, dataset_id)
    runs = runs[runs["task"].isin(TASKS)].copy()
    runs["rank"] = [
        (0 if r in PREFERRED_RUNS else 1, SOURCE_ORDER.get(s, 9), not p)
        for r, s, p in zip(runs["run_id"], runs["source"], runs["in_paper_tables"])
    ]
    runs = runs.sort_values(["rank", "run_id"]).drop(columns="rank")
    return runs[["run_id", "model_id", "source", "training_data", "in_paper_tables"]].reset_index(drop=True)


def _members(items: pd.DataFrame, ids: pd.Series, suffix: str) -> pd.DataFrame:
    member = items.reindex(ids.to_numpy())[["input", "hypothesis", "gold_label"]]
    return member.rename(columns={c: f"{c}_{suffix}" for c in member.columns}).reset_index(drop=True)


def _predictions(con: duckdb.DuckDBPyConnection, dataset_id: str, run_id: str) -> pd.Series:
    known = contamination.runs_frame(con, dataset_id)["run_id"]
    if run_id not in set(known):
        raise ValueError(
            f"unknown run {run_id!r} for {dataset_id}; choose one of: {', '.join(known[:8])}"
            + (" ..." if len(known) > 8 else "")
        )
    preds = queries.predictions_frame(con, [run_id])
    return preds.set_index("example_id")["label"]


def _with_run(rows: pd.DataFrame, labels: pd.Series) -> pd.DataFrame:
    pred_a, pred_b = rows["example_a"].map(labels), rows["example_b"].map(labels)
    right_a, right_b = (pred_a == rows["gold_label_a"]), (pred_b == rows["gold_label_b"])
    outcome = pair_metrics.outcome(right_a.to_numpy(), right_b.to_numpy())
    covered = (pred_a.notna() & pred_b.notna()).to_numpy()
    return rows.assign(
        pred_a=pred_a, pred_b=pred_b, right_a=right_a, right_b=right_b, outcome=np.where(covered, outcome, MISSING)
    )


def _filtered(rows: pd.DataFrame, filters: tuple) -> pd.DataFrame:
    for name, value in filters:
        if name not in FILTERS:
            raise ValueError(f"unknown pair filter {name!r}; allowed: {', '.join(FILTERS)}")
        if value not in (None, "", "all") and name in rows:
            rows = rows[rows[name] == value]
    return rows.reset_index(drop=True)


def pair_rows(
    con: duckdb.DuckDBPyConnection, dataset_id: str, kind: str, run_id: str | None = None, filters: tuple = ()
) -> pd.DataFrame:
    """One row per pair of `kind`: ids and roles, both members' input/hypothesis/gold label, the
    run's predictions and correctness per member, the outcome cell, and member a's split,
    trigger_type and hop. Without a run the prediction columns are empty and outcome is None."""
    items = queries.examples_frame(con, dataset_id)
    pairs = queries.pairs_frame(con, dataset_id, kind).reset_index(drop=True)
    facets = items.reindex(pairs["example_a"].to_numpy())[["split", "trigger_type", "hop"]].reset_index(drop=True)
    rows = pd.concat(
        [
            pairs.drop(columns="kind"),
            _members(items, pairs["example_a"], "a"),
            _members(items, pairs["example_b"], "b"),
            facets,
        ],
        axis=1,
    )
    if run_id:
        rows = _with_run(rows, _predictions(con, dataset_id, run_id))
    else:
        rows = rows.assign(pred_a=None, pred_b=None, right_a=None, right_b=None, outcome=None)
    return _filtered(rows, filters)


def pair_summary(con: duckdb.DuckDBPyConnection, dataset_id: str, kind: str, run_id: str, filters: tuple = ()) -> dict:
    """The 2×2 outcome table, pair accuracy and flip rate (95% CI), gold flip rate and McNemar p
    over the pairs in the filters (an outcome filter is ignored: the table shows every cell)."""
    rows = pair_rows(con, dataset_id, kind, run_id, tuple(f for f in filters if f[0] != "outcome"))
    covered = rows[rows["outcome"] != MISSING]
    s = pair_metrics.summarise(covered["gold_label_a"], covered["pred_a"], covered["gold_label_b"], covered["pred_b"])
    counts = covered["outcome"].value_counts().reindex(pair_metrics.OUTCOMES, fill_value=0).astype(int)
    return {
        "n": len(covered),
        "not predicted": len(rows) - len(covered),
        "table": _named(s.table, rows),
        "outcomes": counts.to_dict(),
        "pair accuracy": s.pair_accuracy,
        "flip rate": s.flip_rate,
        "gold flip rate": s.gold_flip_rate,
        "McNemar p": s.mcnemar_p,
    }


def _named(table: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """The 2×2 counts with the members' roles in the labels ('negated right', ...)."""
    role_a, role_b = (rows[c].iloc[0] if len(rows) else c[-1] for c in ("role_a", "role_b"))
    named = pd.DataFrame(
        table.to_numpy(), index=[f"{role_a} right", f"{role_a} wrong"], columns=[f"{role_b} right", f"{role_b} wrong"]
    )
    return named.rename_axis(f"{role_a} ↓ · {role_b} →").reset_index()


TOKEN = re.compile(r"\S+")


def word_diff(a: str, b: str) -> list[tuple[str, str]]:
    """Token-level diff of a → b as ("same" | "removed" | "added", text) runs (difflib opcodes).

    >>> word_diff("Chet finished law school", "Chet didn't finish law school")
    [('same', 'Chet'), ('removed', 'finished'), ('added', "didn't finish"), ('same', 'law school')]
    """
    ta, tb = TOKEN.findall(a or ""), TOKEN.findall(b or "")
    parts: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        if op == "equal":
            parts.append(("same", " ".join(ta[i1:i2])))
            continue
        if i2 > i1:
            parts.append(("removed", " ".join(ta[i1:i2])))
        if j2 > j1:
            parts.append(("added", " ".join(tb[j1:j2])))
    return parts


def diff_html(a: str, b: str) -> tuple[str, str]:
    """Both texts as HTML with the differing words marked: removed words in <del> on side a, added
    words in <mark> on side b. Every token is HTML-escaped first, so the result is safe to render.

    >>> diff_html("a <b>", "a <i>")
    ('a <del>&lt;b&gt;</del>', 'a <mark>&lt;i&gt;</mark>')
    """
    left, right = [], []
    for kind, text in word_diff(a, b):
        safe = html.escape(text)
        if kind in ("same", "removed"):
            left.append(safe if kind == "same" else f"<del>{safe}</del>")
        if kind in ("same", "added"):
            right.append(safe if kind == "same" else f"<mark>{safe}</mark>")
    return " ".join(left), " ".join(right)
