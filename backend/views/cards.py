"""The Model cards page: per model, its headline metric per dataset and split against the best trivial baseline
(the verdicts of backend.analysis.verdicts) and its agreement with people where a dataset has graded ratings."""

from __future__ import annotations

import duckdb
import pandas as pd

from backend.analysis import gradient, verdicts
from backend.analysis.verdicts import BASELINE, BELOW, NO_BASELINE, TEST  # noqa: F401 — summary's doctest
from backend.store.sessions import DATA, reads


@reads(DATA)
def models(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every model with a scored run that is not a baseline, by name."""
    return sorted(set(verdicts.verdicts(con)["model"]) | set(_graded_runs(con)["model"]))


def _graded_runs(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """dataset, run, model, contaminated: the NLI runs on datasets with graded ratings (`analysis.gradient`)."""
    frames = [
        gradient.runs(con, dataset).assign(dataset=dataset).rename(columns={"run_id": "run", "model_id": "model"})
        for dataset in gradient.datasets(con)
    ]
    frames = [f[f["source"] != "baseline"] for f in frames]
    columns = ["dataset", "run", "model", "contaminated"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


@reads(DATA)
def card(con: duckdb.DuckDBPyConnection, model: str) -> pd.DataFrame:
    """A model card from the store: per dataset, split and run, its headline metric with n and CI, the best
    trivial baseline, the verdict and the paired test behind it (the difference run − baseline with its 95%
    interval, p-value, test and what decided it), why it is contaminated, how many of its responses gave no answer
    (prompted runs), and its agreement with people where the dataset has graded ratings (Spearman ρ between
    its and people's means per group, with its CI over groups)."""
    table = verdicts.verdicts(con)
    rows = table[table["model"] == model][
        ["dataset", "split", "run", "metric", "value", "low", "high", "n", *BASELINE, "verdict", *TEST]
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
    return out.fillna(
        {"agreement with people": "", "split": "", "metric": "", "verdict": "", "test": "", "test_counts": ""}
    ).sort_values(["dataset", "split", "run"], ignore_index=True)


def summary(card: pd.DataFrame) -> pd.DataFrame:
    """dataset, split, verdict, runs (with that verdict), of (the model's runs there): a card's verdicts counted.

    >>> card = pd.DataFrame({"dataset": ["d"] * 3, "split": ["main"] * 3, "verdict": [BELOW, BELOW, NO_BASELINE]})
    >>> summary(card).to_dict("records")[0]
    {'dataset': 'd', 'split': 'main', 'verdict': 'below baseline', 'runs': 2, 'of': 3}
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
