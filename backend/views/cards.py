"""A model's worth, from the store: its headline metric per dataset against the best trivial baseline there
(the verdict every page shows beside the model's outputs), and its model card.

The best trivial baseline of a dataset and split is the highest-scoring baseline run that looks at no input
(random, a constant label, the train split's majority: `datasets.baselines.is_trivial`) on the same headline
metric (`views.overview`). A run's verdict:

- **below baseline**: the upper end of its 95% CI is under that baseline's value;
- **not better than baseline**: otherwise, when its CI overlaps the baseline's CI;
- nothing: its CI lies wholly above the baseline's CI.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from backend.datasets import baselines
from backend.views import gradient, overview

BELOW, NOT_BETTER = "below baseline", "not better than baseline"
KEYS = ["dataset", "split", "metric"]


def verdicts(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every run that is not a baseline, per headline split: dataset, run, model, kind, split, metric, value,
    low, high, n, unparsed, contaminated, baseline (its run id, '' without one), baseline_value, baseline_low,
    baseline_high, verdict ('' or BELOW or NOT_BETTER) and figures (the numbers behind it, in words)."""
    table = overview.headline(con)
    trivial = table[table["model"].map(baselines.is_trivial)]
    best = trivial.sort_values("value", ascending=False).drop_duplicates(KEYS)[[*KEYS, "run", "value", "low", "high"]]
    best.columns = [*KEYS, "baseline", "baseline_value", "baseline_low", "baseline_high"]
    runs = table[table["kind"] != "baseline"].merge(best, on=KEYS, how="left")
    runs["baseline"] = runs["baseline"].fillna("")
    below = runs["high"] < runs["baseline_value"]
    overlaps = (runs["low"] <= runs["baseline_high"]) & (runs["high"] >= runs["baseline_low"])
    runs["verdict"] = np.select([below, overlaps], [BELOW, NOT_BETTER], "")
    runs["figures"] = [_figures(row) for row in runs.itertuples()]
    return runs.reset_index(drop=True)


def _figures(row) -> str:
    """'accuracy 0.587 [0.560, 0.613] (n=1,000, main) against baseline nope/baseline/always-E: 0.806 [...]'."""
    said = f"{row.metric} {row.value:.3f} [{row.low:.3f}, {row.high:.3f}] (n={row.n:,}, {row.split})"
    if not row.baseline:
        return said + "; no trivial baseline on this split"
    return f"{said} against {row.baseline}: {row.baseline_value:.3f} [{row.baseline_low:.3f}, {row.baseline_high:.3f}]"


def of(table: pd.DataFrame, dataset: str | None, runs: tuple[str, ...] = (), model: str | None = None) -> pd.DataFrame:
    """The rows of `verdicts` with a verdict for some runs (or every run of a model), on one dataset or (None)
    on any."""
    chosen = (table["run"].isin(runs) | (table["model"] == model)) & (table["verdict"] != "")
    if dataset is not None:
        chosen &= table["dataset"] == dataset
    found = table[chosen]
    return found.sort_values("verdict", key=lambda v: v != BELOW, kind="stable", ignore_index=True)  # below first


def models(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every model with a scored run that is not a baseline, by name."""
    return sorted(set(verdicts(con)["model"]) | set(_graded_runs(con)["model"]))


def _graded_runs(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """dataset, run, model, contaminated: the NLI runs on datasets with graded ratings (`views.gradient`)."""
    frames = [
        gradient.runs(con, dataset).assign(dataset=dataset).rename(columns={"run_id": "run", "model_id": "model"})
        for dataset in gradient.datasets(con)
    ]
    frames = [f[f["source"] != "baseline"] for f in frames]
    columns = ["dataset", "run", "model", "contaminated"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def card(con: duckdb.DuckDBPyConnection, model: str) -> pd.DataFrame:
    """A model card from the store: per dataset, split and run, its headline metric with n and CI, the best
    trivial baseline and the verdict, why it is contaminated, how many of its responses gave no answer
    (prompted runs), and its agreement with people where the dataset has graded ratings (Spearman ρ between
    its and people's means per group, with its CI over groups)."""
    table = verdicts(con)
    rows = table[table["model"] == model][
        ["dataset", "split", "run", "metric", "value", "low", "high", "n", "baseline", "baseline_value", "verdict"]
        + ["unparsed", "contaminated"]
    ]
    graded = _graded_runs(con)
    graded = graded[graded["model"] == model]
    people = [
        {"dataset": row.dataset, "run": row.run, "agreement with people": _rho(con, row.dataset, row.run)}
        for row in graded.itertuples()
    ]
    people = pd.DataFrame(people, columns=["dataset", "run", "agreement with people"])
    out = rows.merge(people, on=["dataset", "run"], how="outer")
    out["contaminated"] = out["contaminated"].fillna(out["run"].map(graded.set_index("run")["contaminated"]))
    return out.fillna({"agreement with people": "", "split": "", "metric": "", "verdict": ""}).sort_values(
        ["dataset", "split", "run"], ignore_index=True
    )


def summary(card: pd.DataFrame) -> pd.DataFrame:
    """dataset, split, verdict, runs (with that verdict), of (the model's runs there): a card's verdicts counted.

    >>> card = pd.DataFrame({"dataset": ["d"] * 3, "split": ["main"] * 3, "verdict": [BELOW, BELOW, ""]})
    >>> summary(card).to_dict("records")
    [{'dataset': 'd', 'split': 'main', 'verdict': 'below baseline', 'runs': 2, 'of': 3}]
    """
    scored = card[card["split"] != ""]
    total = scored.groupby(["dataset", "split"]).size().rename("of")
    counted = scored[scored["verdict"] != ""].groupby(["dataset", "split", "verdict"]).size().rename("runs")
    return counted.reset_index().join(total, on=["dataset", "split"])


def _rho(con: duckdb.DuckDBPyConnection, dataset: str, run: str) -> str:
    """'Spearman ρ 0.42 [0.05, 0.71] over 20 predicate means'."""
    by = gradient.spec(con, dataset)["by"][0]
    rho = gradient.agreement(gradient.certainty(con, dataset, by, (run,))).iloc[0]
    if rho["rho"] != rho["rho"]:
        why = f"fewer than 3 {by}s" if rho["groups"] < 3 else "the run gives one value to every group"
        return f"Spearman ρ undefined over {rho['groups']} {by} means ({why})"
    return f"Spearman ρ {rho['rho']:.3f} [{rho['low']:.3f}, {rho['high']:.3f}] over {rho['groups']} {by} means"
