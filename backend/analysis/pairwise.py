"""Pairwise judges on Side by side: a judge compared run A's and run B's outputs on the same items, each
pair shown in both orders. Serves the Side by side page.

Per item (and sample), the two verdicts (A first, B first) give one outcome, as MT-Bench counts them
(Zheng et al. 2023, "Judging LLM-as-a-Judge"): a win for A or B only when both orders name it, a tie
otherwise (both tie, or the verdict changed with the order). Win / tie / loss shares have 95%
bootstrap intervals over items. Position bias: the share of items, of those with both verdicts parsed,
whose verdict flips when the order flips; and the share of non-tie verdicts naming the answer shown
first (0.5 without a bias). A response that names no verdict is unparsed and left out, and counted.
The judge's reasons are embedded with the bundled MiniLM, clustered (k-means, scikit-learn) and each
cluster named by its most distinctive words (c-TF-IDF, `metrics.ctfidf`).
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
from sklearn.cluster import KMeans

from backend.metrics import bootstrap, ctfidf
from backend.store import judgements as store_judgements
from backend.store import ratings as store_ratings

MAX_CLUSTERS = 6
REASONS_PER_CLUSTER = 5  # at least this many reasons per cluster on average (k = reasons // this, 2..MAX_CLUSTERS)


def pairwise_runs(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str) -> pd.DataFrame:
    """The pairwise judge runs that compared these two runs (either as A), newest first, with their counts."""
    frame = store_judgements.of_run(con, run_a)
    pair = ((frame["run_id"] == run_a) & (frame["other_run_id"] == run_b)) | (
        (frame["run_id"] == run_b) & (frame["other_run_id"] == run_a)
    )
    return frame[(frame["kind"] == "pairwise") & pair].reset_index(drop=True)


def outcomes(con: duckdb.DuckDBPyConnection, judge_run_id: str) -> pd.DataFrame:
    """Per item and sample: the verdict with A shown first (AB), with B first (BA), the outcome (A, B or
    tie; None when either order is unparsed) and whether the verdict flipped with the order."""
    rows = store_judgements.scores(con, judge_run_id)
    if rows.empty:
        return pd.DataFrame(columns=["example_id", "sample", "AB", "BA", "outcome", "flipped"])
    wide = rows.pivot_table(
        index=["example_id", "sample"], columns="position", values="verdict", aggfunc="first"
    ).reindex(columns=["AB", "BA"])
    wide = wide.reset_index().astype(object).where(wide.reset_index().notna(), None)
    both = wide["AB"].notna() & wide["BA"].notna()
    wide["outcome"] = [
        (ab if ab == ba and ab != "tie" else "tie") if ok else None for ab, ba, ok in zip(wide["AB"], wide["BA"], both)
    ]
    wide["flipped"] = [(ab != ba) if ok else None for ab, ba, ok in zip(wide["AB"], wide["BA"], both)]
    return wide


def summary(con: duckdb.DuckDBPyConnection, judge_run_id: str) -> pd.DataFrame:
    """One row per measure: A wins, ties, B wins, verdicts that flip with the order, and verdicts naming
    the first-shown answer; each a share with its 95% CI and n, and what n counts."""
    items = outcomes(con, judge_run_id)
    decided = items[items["outcome"].notna()]
    rows = [
        _share("A wins (both orders)", decided["outcome"] == "A", "items with both orders parsed"),
        _share("tie (or the order decided)", decided["outcome"] == "tie", "items with both orders parsed"),
        _share("B wins (both orders)", decided["outcome"] == "B", "items with both orders parsed"),
        _share("verdict flips with the order", decided["flipped"].astype(bool), "items with both orders parsed"),
    ]
    verdicts = store_judgements.scores(con, judge_run_id)
    named = verdicts[verdicts["verdict"].isin(["A", "B"])]
    first = [v == p[0] for v, p in zip(named["verdict"], named["position"])]
    rows.append(_share("verdicts naming the answer shown first", pd.Series(first, dtype=bool), "A/B verdicts"))
    unparsed = int(verdicts["verdict"].isna().sum())
    rows.append({"measure": "responses with no verdict (unparsed)", "share": np.nan, "low": np.nan, "high": np.nan,
                 "n": unparsed, "of": f"{len(verdicts)} responses"})  # fmt: skip
    return pd.DataFrame(rows, columns=["measure", "share", "low", "high", "n", "of"])


def _share(measure: str, hits: pd.Series, of: str) -> dict:
    estimate = bootstrap.mean(hits.to_numpy(dtype=float))
    return {"measure": measure, "share": estimate.value, "low": estimate.low, "high": estimate.high,
            "n": estimate.n, "of": of}  # fmt: skip


def _embed(texts: list[str]) -> np.ndarray:
    from backend.models.embed import Embedder  # lazy: start-up time (torch)

    return Embedder().encode(texts)


def reasons(con: duckdb.DuckDBPyConnection, judge_run_id: str) -> pd.DataFrame:
    """Every parsed verdict's reason with its item's input, its cluster and the cluster's name: the reasons
    embedded with the bundled MiniLM (once: `clusters` and `cluster_items` read this frame), k-means with
    k = reasons // REASONS_PER_CLUSTER (2..MAX_CLUSTERS), seed 0."""
    rows = store_judgements.scores(con, judge_run_id)
    rows = rows[rows["verdict"].notna() & rows["reason"].fillna("").str.strip().astype(bool)].reset_index(drop=True)
    run_id = store_judgements.of_judge_run(con, judge_run_id)["run_id"]
    inputs = store_ratings.targets(con, run_id)[["example_id", "input"]]
    rows = rows.merge(inputs, on="example_id", how="left")
    columns = ["example_id", "input", "sample", "position", "verdict", "reason", "cluster", "name"]
    if len(rows) < 2:
        return rows.assign(cluster=0, name="")[columns]
    k = int(np.clip(len(rows) // REASONS_PER_CLUSTER, 2, MAX_CLUSTERS))
    vectors = _embed(list(rows["reason"]))
    rows["cluster"] = KMeans(n_clusters=k, n_init=10, random_state=0).fit_predict(vectors)
    names = ctfidf.distinctive_words([list(g["reason"]) for _, g in rows.groupby("cluster")])
    rows["name"] = rows["cluster"].map(dict(enumerate(", ".join(words) or "(no distinctive words)" for words in names)))
    return rows[columns]


def clusters(found: pd.DataFrame) -> pd.DataFrame:
    """Per cluster of `reasons`: its name, how many verdicts gave A the win, B the win, or a tie, and items."""
    if found.empty:
        return pd.DataFrame(columns=["cluster", "name", "A", "B", "tie", "items", "example"])
    counts = pd.crosstab(found["cluster"], found["verdict"]).reindex(columns=["A", "B", "tie"], fill_value=0)
    grouped = found.groupby("cluster")
    return (
        counts.join(grouped["name"].first())
        .join(grouped["example_id"].nunique().rename("items"))
        .join(grouped["reason"].first().rename("example"))
        .reset_index()[["cluster", "name", "A", "B", "tie", "items", "example"]]
        .sort_values(["items", "cluster"], ascending=[False, True], kind="stable")
    )


def cluster_items(found: pd.DataFrame, cluster: int) -> pd.DataFrame:
    """The verdicts of one cluster of `reasons`, with each item's input."""
    return found.loc[found["cluster"] == cluster, ["example_id", "input", "position", "verdict", "reason"]]
