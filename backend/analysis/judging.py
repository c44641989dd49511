"""Judges and people: how far an LLM judge's scores of a run agree with the people who rated the same
outputs, and with itself. Serves the Rate page (and the Example page's judgements of one item).

For each criterion a judge scored, against each human rater and against the people's consensus (the
median of their scores, the lower of two middle ones, `agreement.consensus`): Krippendorff's alpha and
Cohen's kappa (quadratic weights on the 0-3 scales) with 95% bootstrap intervals over items, and
Spearman's rho of the judge's score and the people's mean, each with its n (items both scored). The
judge's score of an item is its parsed response, or with repeated samples their consensus; an item
whose responses could not be parsed has no judge score and is counted, not guessed. The verdict on a
judge follows Krippendorff (2004, "Content Analysis", §11.4): alpha ≥ 0.800 to rely on the scores,
0.667 for tentative conclusions only.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from backend.execution import jobs
from backend.execution.judging import MAX_TOKENS, JudgeRequest, judge
from backend.metrics import agreement, bootstrap
from backend.metrics.rubrics import RUBRIC
from backend.models.prompts import templates
from backend.store import judgements as store_judgements
from backend.store import ratings as store_ratings

__all__ = ["MAX_TOKENS", "JudgeRequest", "judge"]  # the CLI and API start judge runs through this view
RELIABLE, TENTATIVE = 0.800, 0.667
MIN_ITEMS = 10  # fewer items both scored: too few to say how far to trust the judge
PEOPLE = "people (consensus)"


def rubrics(task: str) -> list[str]:
    """The judge rubrics (name@version) that score runs of `task`."""
    return [t.ref for t in templates.for_task("judge") if task in t.judges and t.strategy == "score"]


def pairwise_rubrics(task: str) -> list[str]:
    """The pairwise judge rubrics (name@version) that compare two runs of `task`."""
    return [t.ref for t in templates.for_task("judge") if task in t.judges and t.strategy == "pairwise"]


def judge_models() -> list[str]:
    """The generators a judge run can use here (registered, and loadable or reachable)."""
    return jobs.judge_models()


def progress(con: duckdb.DuckDBPyConnection, judge_run_id: str) -> dict:
    """A started judge run's status, responses done of total, parsed, errors, cost so far and its last log line."""
    return jobs.judge_progress(con, judge_run_id)


def judge_jobs(run_id: str) -> list[str]:
    """The score judge runs of `run_id` started as jobs (`jobs.judge_jobs`), running or not."""
    return jobs.judge_jobs(run_id)


def running(run_id: str) -> list[str]:
    """The score judge runs of `run_id` whose process runs now, newest first: stored or not yet (a local judge model
    loads before its run is written)."""
    return [key for key in jobs.judge_jobs(run_id) if jobs.alive(key)]


def all_judge_runs(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """Every judge run of a run (score and pairwise, as run A or B), newest first, with their counts."""
    return store_judgements.of_run(con, run_id)


def judge_runs(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """The score judges of a run with their counts (judgements, parsed, unparsed, cost) and `overlap`, the outputs it
    scored that people rated on the same criterion: most overlap first (the judges that can be set against people),
    then newest first."""
    frame = store_judgements.of_run(con, run_id)
    frame = frame[(frame["kind"] == "score") & (frame["run_id"] == run_id)].reset_index(drop=True)
    rated = store_ratings.scored(con, run_id)[["example_id", "criterion"]].drop_duplicates()
    frame["overlap"] = [overlap(con, judge_run_id, rated) for judge_run_id in frame["judge_run_id"]]
    return frame.sort_values("overlap", ascending=False, kind="stable").reset_index(drop=True)


def overlap(con: duckdb.DuckDBPyConnection, judge_run_id: str, rated: pd.DataFrame) -> int:
    """How many outputs the judge gave a score (parsed) that people also rated on that criterion (`rated`: example_id,
    criterion)."""
    scores = judge_scores(con, judge_run_id)
    both = scores[np.isfinite(scores["judge"].astype(float))].merge(rated, on=["example_id", "criterion"])
    return int(both["example_id"].nunique())


def criteria(rubric: str) -> list[str]:
    """The criteria a judge rubric (name@version) scores; [] for one no longer here."""
    try:
        return list(templates.get(rubric).criteria)
    except templates.TemplateProblem:
        return []


def judge_scores(con: duckdb.DuckDBPyConnection, judge_run_id: str) -> pd.DataFrame:
    """Per item and criterion: the judge's score (the parsed response, or the consensus of its parsed
    samples; NaN when none parsed), how many responses parsed of how many, and the first reason."""
    rows = store_judgements.scores(con, judge_run_id)
    if rows.empty:
        return pd.DataFrame(columns=["example_id", "criterion", "judge", "parsed", "responses", "reason"])
    grouped = rows.groupby(["example_id", "criterion"], sort=False)
    return grouped.agg(
        judge=("value", lambda v: agreement.consensus(v.dropna())),
        parsed=("value", "count"),
        responses=("parse", "size"),
        reason=("reason", "first"),
    ).reset_index()


def _people(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """Per item and criterion rated by people: their consensus, mean and count."""
    rated = store_ratings.scored(con, run_id)
    grouped = rated.groupby(["example_id", "criterion"])["value"]
    return grouped.agg(people=agreement.consensus, people_mean="mean", raters="size").reset_index()


def _domain(criterion: str) -> np.ndarray:
    return np.array(sorted(RUBRIC[criterion]), dtype=float)


def agreement_table(con: duckdb.DuckDBPyConnection, judge_run_id: str, run_id: str) -> pd.DataFrame:
    """Per criterion, the judge against the people's consensus and against each rater: n items both
    scored, alpha, kappa and rho with their 95% intervals, and the rated items the judge left unscored."""
    scores, rated = judge_scores(con, judge_run_id), store_ratings.scored(con, run_id)
    people = _people(con, run_id)
    rows = []
    for criterion, mine in scores.groupby("criterion", sort=False):
        domain = _domain(criterion)
        mine = mine.set_index("example_id")["judge"]
        theirs = people[people["criterion"] == criterion].set_index("example_id")
        others = [(PEOPLE, theirs["people"], theirs["people_mean"])]
        for rater, group in rated[rated["criterion"] == criterion].groupby("rater_id"):
            values = group.set_index("example_id")["value"]
            others.append((rater, values, values))
        for against, values, means in others:
            both = mine.index.intersection(values.index)
            unscored = int(mine.loc[both].isna().sum())
            both = [e for e in both if np.isfinite(mine.loc[e])]
            stats = agreement.paired(mine.loc[both], values.loc[both], domain, means.loc[both])
            rows.append({"criterion": criterion, "against": against, **stats.as_dict(), "judge_unscored": unscored})
    return pd.DataFrame(
        rows,
        columns=[
            "criterion", "against", "n", "alpha", "alpha_low", "alpha_high", "kappa", "kappa_low", "kappa_high",
            "rho", "rho_low", "rho_high", "judge_unscored",
        ],
    )  # fmt: skip


def verdict(table: pd.DataFrame) -> pd.DataFrame:
    """Per criterion, how far to trust the judge, from its alpha against the people's consensus."""
    rows = []
    for row in table[table["against"] == PEOPLE].itertuples():
        if row.n < MIN_ITEMS or not np.isfinite(row.alpha):
            said = (
                f"too few items to tell: {row.n} scored by both (at least {MIN_ITEMS} needed)"
                if row.n < MIN_ITEMS
                else "undefined: the scores do not vary"
            )
            trust = "unknown"
        elif row.alpha_high < TENTATIVE:
            trust, said = "poor", f"a poor judge here: even the top of alpha's interval is below {TENTATIVE}"
        elif row.alpha >= RELIABLE and row.alpha_low >= TENTATIVE:
            trust, said = "reliable", f"alpha ≥ {RELIABLE}: its scores may stand in for people's on this criterion"
        else:
            trust, said = "tentative", f"alpha's interval reaches below {RELIABLE}: tentative conclusions only"
        rows.append({"criterion": row.criterion, "trust": trust, "n": row.n, "alpha": row.alpha, "why": said})
    return pd.DataFrame(rows, columns=["criterion", "trust", "n", "alpha", "why"])


def _joined(con: duckdb.DuckDBPyConnection, judge_run_id: str, run_id: str, criterion: str) -> pd.DataFrame:
    scores = judge_scores(con, judge_run_id)
    people = _people(con, run_id)
    return scores[scores["criterion"] == criterion].merge(
        people[people["criterion"] == criterion], on=["example_id", "criterion"]
    )


def confusion(con: duckdb.DuckDBPyConnection, judge_run_id: str, run_id: str, criterion: str) -> pd.DataFrame:
    """Items per (judge's score, people's consensus) on one criterion; 'unscored' where the judge's
    responses could not be parsed."""
    both = _joined(con, judge_run_id, run_id, criterion)
    judged = both["judge"].map(lambda v: "unscored" if not np.isfinite(v) else f"{v:g}")
    table = pd.crosstab(judged.rename("judge"), both["people"].map("{:g}".format).rename("people"))
    return table.reset_index().melt(id_vars="judge", var_name="people", value_name="items")


def cell_items(
    con: duckdb.DuckDBPyConnection, judge_run_id: str, run_id: str, criterion: str, judge_score: str, people: str
) -> pd.DataFrame:
    """The items of one confusion cell (scores as the table shows them), with the output and the judge's reason."""
    both = _joined(con, judge_run_id, run_id, criterion)
    judged = both["judge"].map(lambda v: "unscored" if not np.isfinite(v) else f"{v:g}")
    chosen = both[(judged == judge_score) & (both["people"].map("{:g}".format) == people)]
    outputs = store_ratings.targets(con, run_id)[["example_id", "input"]]
    return chosen.merge(outputs, on="example_id", how="left")[
        ["example_id", "input", "judge", "people", "people_mean", "raters", "reason"]
    ]


def self_consistency(con: duckdb.DuckDBPyConnection, judge_run_id: str) -> pd.DataFrame:
    """Per criterion of a sampled judge: alpha across its samples (each sample a rater) over the items,
    with a 95% bootstrap interval over items; empty for a judge asked once."""
    rows = store_judgements.scores(con, judge_run_id)
    out = []
    if rows.empty or rows["sample"].max() < 1:
        return pd.DataFrame(columns=["criterion", "samples", "items", "alpha", "alpha_low", "alpha_high"])
    for criterion, group in rows.groupby("criterion", sort=False):
        domain = _domain(criterion)
        matrix = group.pivot(index="sample", columns="example_id", values="value").to_numpy(dtype=float)
        matrix = matrix[:, np.isfinite(matrix).sum(axis=0) >= 2]
        items, scale = matrix.shape[1], agreement.level(domain)
        resampled = [
            agreement.alpha(matrix[:, np.repeat(np.arange(items), c.astype(int))], domain, scale)
            for c in (bootstrap.weights(items) if items >= 2 else [])
        ]
        low, high = bootstrap.interval(np.array(resampled)) if resampled else (np.nan, np.nan)
        alpha = agreement.alpha(matrix, domain, scale)
        out.append([criterion, matrix.shape[0], items, alpha, low, high])
    return pd.DataFrame(out, columns=["criterion", "samples", "items", "alpha", "alpha_low", "alpha_high"])


def ranking(con: duckdb.DuckDBPyConnection, source: str, criterion: str) -> dict:
    """Whether the judge (`source`: judge:<model>:<rubric@version>) ranks runs as people do on one
    criterion: per run judged by it and rated by people, both means over the items both scored, and
    Kendall's tau-b over the runs; with fewer than three runs, `why` says there is no tau."""
    every = store_judgements.of_run(con)
    rows = []
    for judged in every[(every["source"] == source) & (every["kind"] == "score")].itertuples():
        both = _joined(con, judged.judge_run_id, judged.run_id, criterion)
        both = both[np.isfinite(both["judge"])]
        if len(both):
            rows.append([judged.run_id, len(both), both["judge"].mean(), both["people_mean"].mean()])
    runs = pd.DataFrame(rows, columns=["run_id", "items", "judge_mean", "people_mean"])
    tau, p = agreement.kendall(runs["judge_mean"], runs["people_mean"])
    why = (
        ""
        if len(runs) >= 3
        else f"{len(runs)} run(s) are both judged by this judge and rated by people on {criterion}; "
        "ranking runs needs three or more"
    )
    return {"runs": runs, "tau": tau, "p": p, "why": why}


def of_example(con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str) -> pd.DataFrame:
    """Every judge's judgements of one example (for the Example page, beside the people's ratings)."""
    return store_judgements.of_example(con, dataset_id, example_id)


def scorer_means(con: duckdb.DuckDBPyConnection, judge_run_id: str) -> pd.DataFrame:
    """Per criterion of a judge or metric run: the mean score over the items it scored, with a 95% bootstrap
    interval, and how many items had no score."""
    rows = store_judgements.scores(con, judge_run_id)
    out = []
    for criterion, group in rows.groupby("criterion", sort=False):
        estimate = bootstrap.mean(group["value"].dropna().to_numpy())
        out.append(
            [criterion, estimate.value, estimate.low, estimate.high, estimate.n, int(group["value"].isna().sum())]
        )
    return pd.DataFrame(out, columns=["criterion", "mean", "low", "high", "items", "unscored"])
