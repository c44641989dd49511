"""Generated outputs side by side: two QA or writing runs on the same items, next to the gold, with
per-item scores, who got it right, how much they disagree, a word diff, and the human ratings from
the Rate page.

Scores per item: QA (short answers) — exact match and token F1 (SQuAD normalisation, best over the
acceptable answers); writing (presupposition and correction) — unigram F1 against the gold
presuppositions and corrections (CREPE's metric) and sentence BLEU (sacreBLEU's `sentence_bleu`,
exp smoothing). *Right* is EM = 1 for QA and unigram F1 ≥ RIGHT_F1 for writing (a written sentence
rarely matches word for word). Disagreement is |score_A − score_B| on the main score (F1).
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from backend.analysis import pairwise, ratings
from backend.metrics import bootstrap, generation
from backend.metrics.bootstrap import (
    RESAMPLES,  # noqa: F401 — the page names the resamples
    Estimate,
)
from backend.metrics.pairs import mcnemar
from backend.metrics.squad import exact_match
from backend.store import ratings as store_ratings
from backend.store import runs as store_runs
from backend.store.sessions import DATA, reads

TASKS = ("qa", "write")
RIGHT_F1 = 0.5
OUTCOMES = ("both right", "A right, B wrong", "B right, A wrong", "both wrong")
NO_GOLD = "no gold"  # an item without reference answers: compared by the ratings only


@reads(DATA)
def runs(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Complete QA and writing runs with stored outputs: dataset_id, run_id, task, model_id, n, and the
    model's quality note from the registry when the run was made (e.g. that a model is tiny and weak)."""
    frame = store_runs.listing(con, tasks=("qa", "write"), with_answers=True, order="dataset")
    return frame[["dataset_id", "run_id", "task", "model_id", "quality", "ok"]].rename(columns={"ok": "n"})


def _texts(value) -> list[str]:
    return [str(t) for t in value] if value is not None and not isinstance(value, float) else []


def _gold(row: pd.Series, task: str) -> list[str]:
    """QA: the acceptable answers. Writing: the gold presuppositions and corrections (CREPE), else the
    gold answers (FalseQA's explanation of why the premise is false is its correction)."""
    if task == "qa":
        return _texts(row["gold_answers"])
    written = _texts(row["gold_presuppositions"]) + _texts(row["gold_corrections"])
    return written or _texts(row["gold_answers"])


def _scores(outputs: list[str], golds: list[list[str]], task: str) -> pd.DataFrame:
    """Per-item scores; NaN (and not right) for an item without gold."""
    f1 = generation.unigram_f1(outputs, golds)
    if task == "qa":
        em = np.array([exact_match(o, g) if g else np.nan for o, g in zip(outputs, golds)], dtype=float)
        return pd.DataFrame({"em": em, "f1": f1, "right": em == 1.0})
    return pd.DataFrame({"f1": f1, "bleu": generation.sentence_bleu(outputs, golds), "right": f1 >= RIGHT_F1})


def _ratings(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pd.DataFrame:
    """(run_id, example_id) → 'criterion mean (n raters); …' from the Rate page's ratings."""
    frame = store_ratings.per_item(con, run_ids)
    if frame.empty:
        return pd.DataFrame(columns=["run_id", "example_id", "rated"])
    frame["text"] = [
        f"{c} {v:.2f}" if pd.notna(v) else f"{c} {lab}"
        for c, v, lab in zip(frame["criterion"], frame["value"], frame["labels"])
    ]
    frame["text"] = frame["text"] + " (" + frame["raters"].astype(str) + ")"
    return frame.groupby(["run_id", "example_id"])["text"].agg("; ".join).rename("rated").reset_index()


@reads(DATA)
def side_by_side(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str) -> pd.DataFrame:
    """One row per item both runs answered: input, gold, each run's output, scores, right, ratings,
    outcome and disagreement. ValueError when the runs are of different datasets or tasks."""
    info = store_runs.listing(con, status=None).set_index("run_id").loc[lambda f: f.index.isin([run_a, run_b])]
    for run in (run_a, run_b):
        if run not in info.index:
            raise ValueError(f"no run {run!r}")
    if (
        info.loc[run_a, "dataset_id"] != info.loc[run_b, "dataset_id"]
        or info.loc[run_a, "task"] != info.loc[run_b, "task"]
    ):
        raise ValueError(f"{run_a} and {run_b} are not runs of one dataset and task: compare runs of the same items")
    task = info.loc[run_a, "task"]
    if task not in TASKS:
        raise ValueError(f"{run_a} is a {task} run: side by side compares generated outputs (QA answers or writing)")
    a, b = ratings.targets(con, run_a), ratings.targets(con, run_b)
    both = a.merge(b[["example_id", "output_text"]], on="example_id", suffixes=("_a", "_b"))
    golds = [_gold(row, task) for _, row in both.iterrows()]
    out = pd.DataFrame(
        {
            "example_id": both["example_id"],
            "split": both["split"],
            "input": both["input"],
            "gold": [" | ".join(g) for g in golds],
            "output_a": both["output_text_a"].fillna(""),
            "output_b": both["output_text_b"].fillna(""),
        }
    )
    score_a, score_b = _scores(list(out["output_a"]), golds, task), _scores(list(out["output_b"]), golds, task)
    for column in score_a.columns:
        out[f"{column}_a"], out[f"{column}_b"] = score_a[column].to_numpy(), score_b[column].to_numpy()
    out["outcome"] = np.select(
        [out["gold"] == "", out["right_a"] & out["right_b"], out["right_a"], out["right_b"]],
        [NO_GOLD, *OUTCOMES[:3]],
        OUTCOMES[3],
    )
    out["disagreement"] = (out["f1_a"] - out["f1_b"]).abs()
    rated = _ratings(con, [run_a, run_b])
    for suffix, run in (("a", run_a), ("b", run_b)):
        mine = rated[rated["run_id"] == run].set_index("example_id")["rated"]
        out[f"rated_{suffix}"] = out["example_id"].map(mine).astype(object).fillna("")  # no rating: ""
    return out.assign(task=task)


def summary(frame: pd.DataFrame) -> dict:
    """Each run's mean scores with 95% bootstrap CIs over the items with gold (none when no item has
    gold), the outcome counts and McNemar's p on *right*."""
    scores = [c[:-2] for c in frame.columns if c.endswith("_a") and c[:-2] in ("em", "f1", "bleu")]
    scored = frame[frame["outcome"] != NO_GOLD]
    means: dict[str, dict[str, Estimate]] = {
        side: {s: bootstrap.mean(scored[f"{s}_{side}"].to_numpy(dtype=float)) for s in scores} if len(scored) else {}
        for side in ("a", "b")
    }
    counts = frame["outcome"].value_counts().reindex([*OUTCOMES, NO_GOLD], fill_value=0).to_dict()
    p = mcnemar(scored["right_a"].to_numpy(bool), scored["right_b"].to_numpy(bool)) if len(scored) else 1.0
    return {"n": len(frame), "scored": len(scored), "means": means, "outcomes": counts, "mcnemar_p": p}


# Side by side's pairwise judge (ui/judges.py places it): backend.analysis.pairwise


def cluster_items(found: pd.DataFrame, cluster: int) -> pd.DataFrame:
    """The verdicts of one cluster of `reasons`, with each item's input."""
    return pairwise.cluster_items(found, cluster)


def clusters(found: pd.DataFrame) -> pd.DataFrame:
    """Per cluster of `reasons`: its name, how many verdicts gave A the win, B the win, or a tie, and items."""
    return pairwise.clusters(found)


@reads(DATA)
def pairwise_runs(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str) -> pd.DataFrame:
    """The pairwise judge runs that compared these two runs (either as A), newest first, with their counts."""
    return pairwise.pairwise_runs(con, run_a, run_b)


@reads(DATA)
def reasons(con: duckdb.DuckDBPyConnection, judge_run_id: str) -> pd.DataFrame:
    """Every parsed verdict's reason with its item's input, its cluster and the cluster's name: the reasons embedded
    with the bundled MiniLM (once: `clusters` and `cluster_items` read this frame), k-means with k = reasons //
    REASONS_PER_CLUSTER (2..MAX_CLUSTERS), seed 0."""
    return pairwise.reasons(con, judge_run_id)


@reads(DATA)
def pairwise_summary(con: duckdb.DuckDBPyConnection, judge_run_id: str) -> pd.DataFrame:
    """One row per measure: A wins, ties, B wins, verdicts that flip with the order, and verdicts naming the first-
    shown answer; each a share with its 95% CI and n, and what n counts."""
    return pairwise.summary(con, judge_run_id)
