"""Projection across operators: how often a presupposition survives each operator, per trigger, as
people judge it, as a dataset states it by construction, and as a model predicts it.

A dataset takes part when its description has a `projection` spec (`Description.projection`; built-in
NOPE, IMPPRES, CommitmentBank and PROPRES declare one, a user dataset may too). The spec says where the
trigger and the operator are (an examples column or an `extra` facet), how the dataset's operator
values map onto the five operators (OPERATORS), which items carry the presupposition as hypothesis
(`where`), how one human judgement counts as "survives" (`human`: a crowd criterion and the label it
must have, or the least value it must reach; none: the gold label, by construction), and how its
triggers map onto a shared family vocabulary (`families`; NOPE's trigger names, which the others
are mapped to; the mapping is each dataset's, documented in its loader and in ARCHITECTURE.md).

A cell is (dataset, trigger, operator). Human survival: the mean over items of the share of that
item's judgements that say it survives (crowd), or the share of items whose gold label is the
dataset's positive label (gold). A model's survival: the share of items it labels positive (E); a
seed group's is the mean over seeds per item. Every rate has a 95% interval over items (`bootstrap.mean`): Wilson's
when every item counts 0 or 1 (gold, one model's labels), a percentile bootstrap when items carry shares (crowd
judgements, a seed group's mean).
"""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pandas as pd

from backend.datasets.catalogue import describe, described, part
from backend.datasets.description import OPERATORS
from backend.metrics.bootstrap import mean
from backend.models import contamination
from backend.store import queries
from backend.studies import collection

BY_CONSTRUCTION = "gold label (by construction)"  # judged_by of a dataset without people's judgements
COLUMNS = ["dataset", "trigger", "family", "operator", "n", "judged_by", "human", "human_low", "human_high"]


def spec(con: duckdb.DuckDBPyConnection, dataset_id: str) -> dict:
    """The dataset's projection spec ({} when it takes no part). A built-in dataset stored before specs
    existed takes its loader's."""
    return part(con, dataset_id, "projection")


def datasets(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Loaded datasets with a projection spec."""
    return [d for d in described(con) if spec(con, d)]


def _column(name: str) -> str:
    """SQL for a trigger/operator/where field: an examples column, or a key of `extra`."""
    if name in queries.FACETS:
        return f"e.{name}"
    return f"e.extra->>{_quote('$.' + json.dumps(name))}"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def items(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """The dataset's projection items: example_id, trigger, family, operator (one of OPERATORS), gold_label,
    input, hypothesis and `survives` (the item's human survival in [0, 1]; its judgements' share)."""
    rule = spec(con, dataset_id)
    frame = queries.projection_rows(
        con, dataset_id, rule.get("trigger", "trigger_type"), rule["operator"], rule.get("where", {})
    )
    frame["operator"] = frame["raw_operator"].map(rule.get("operators", {}))
    frame = frame[frame["operator"].isin(OPERATORS) & frame["trigger"].notna()].drop(columns="raw_operator")
    frame["family"] = frame["trigger"].map(lambda t: rule.get("families", {}).get(t, t))
    human = rule.get("human") or {}
    if human:
        found = collection.analysed(con, dataset_id)  # a study's: only its analysed participants
        raters = sorted(found.participants) if found is not None else None
        judged = queries.crowd_survival(
            con, dataset_id, human["criterion"], human.get("label"), human.get("least"), raters
        )
        frame = frame.merge(judged, on="example_id", how="left")
    else:
        frame["survives"] = (frame["gold_label"] == describe(con, dataset_id).positive).astype(float)
    return frame.reset_index(drop=True)


def judged_by(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str:
    human = spec(con, dataset_id).get("human") or {}
    if not human:
        return BY_CONSTRUCTION
    counted = f"label {human['label']}" if human.get("label") else f"value ≥ {human['least']}"
    return f"crowd {human['criterion']} ({counted})"


def analysed(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Per projection dataset that is a study's answers: how many participants are analysed, and how many each
    reason leaves out (`studies.collection.Analysed.describe`)."""
    found = {d: collection.analysed(con, d) for d in datasets(con)}
    return {d: f.describe() for d, f in found.items() if f is not None}


def human_table(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every cell of every projection dataset: n and human survival (0-1) with its 95% CI; a dataset whose survival
    is its gold label by construction has no interval (its share of items is fixed by the template, not sampled)."""
    rows = []
    for dataset_id in datasets(con):
        frame, how = items(con, dataset_id), judged_by(con, dataset_id)
        for (trigger, family, operator), cell in frame.groupby(["trigger", "family", "operator"], sort=True):
            rate = mean(cell["survives"].dropna().to_numpy(), ci=how != BY_CONSTRUCTION)
            rows.append(
                {
                    "dataset": dataset_id,
                    "trigger": trigger,
                    "family": family,
                    "operator": operator,
                    "n": len(cell),
                    "judged_by": how,
                    "human": rate.value,
                    "human_low": rate.low,
                    "human_high": rate.high,
                }
            )
    return _ordered(pd.DataFrame(rows, columns=COLUMNS))


def _ordered(frame: pd.DataFrame) -> pd.DataFrame:
    order = frame["operator"].map(OPERATORS.index)
    return (
        frame.assign(_o=order)
        .sort_values(["family", "dataset", "trigger", "_o"])
        .drop(columns="_o")
        .reset_index(drop=True)
    )


def model_choices(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Models (model × training data) with complete NLI runs on projection datasets: name, datasets,
    run ids, and per dataset why its runs are contaminated ({} when none are)."""
    rows = {}
    for dataset_id in datasets(con):
        runs = contamination.runs_frame(con, dataset_id)
        runs = runs[runs["task"] == "nli"]
        for run in runs.itertuples():
            name = run.model_id + (
                f" · {run.training_data}" if isinstance(run.training_data, str) and run.training_data else ""
            )
            entry = rows.setdefault(name, {"name": name, "datasets": [], "run_ids": [], "contaminated": {}})
            entry["run_ids"].append(run.run_id)
            if dataset_id not in entry["datasets"]:
                entry["datasets"].append(dataset_id)
            if run.contaminated:
                entry["contaminated"][dataset_id] = run.contaminated
    frame = pd.DataFrame(list(rows.values()), columns=["name", "datasets", "run_ids", "contaminated"])
    if frame.empty:
        return frame
    baseline = frame["name"].str.startswith("baseline")
    rank = list(zip(baseline, -frame["datasets"].map(len), frame["contaminated"].map(len), frame["name"]))
    return frame.iloc[sorted(range(len(frame)), key=rank.__getitem__)].reset_index(drop=True)


def _choice(con: duckdb.DuckDBPyConnection, name: str) -> pd.Series:
    choices = model_choices(con)
    if name not in set(choices["name"]):
        raise ValueError(
            f"unknown model {name!r} for the projection profile; choose one of: "
            f"{', '.join(choices['name'][:6])}{' ...' if len(choices) > 6 else ''}"
        )
    return choices.set_index("name").loc[name]


def _runs_on(con: duckdb.DuckDBPyConnection, chosen: pd.Series, dataset_id: str) -> list[str]:
    on = set(contamination.runs_frame(con, dataset_id)["run_id"])
    return [r for r in chosen["run_ids"] if r in on]


def predicted(con: duckdb.DuckDBPyConnection, dataset_id: str, run_ids: list[str]) -> pd.Series:
    """Per item, the share of the runs (seeds) that label it positive (E); items some run missed are NaN."""
    positive = describe(con, dataset_id).positive
    frame = queries.positive_share(con, dataset_id, run_ids, positive)
    frame.loc[frame["runs"] < len(set(run_ids)), "said"] = np.nan
    return frame.set_index("example_id")["said"]


def profile(con: duckdb.DuckDBPyConnection, model: str, include_contaminated: bool = False) -> pd.DataFrame:
    """The human table with the model's survival (E rate, CI) beside it in every cell it predicted, and
    `contaminated` saying why where its runs were trained on that dataset (those cells are left empty
    unless `include_contaminated`)."""
    table, chosen = human_table(con), _choice(con, model)
    why = dict(chosen["contaminated"])
    rows = []
    for dataset_id in chosen["datasets"]:
        if why.get(dataset_id) and not include_contaminated:
            continue
        frame = items(con, dataset_id)
        frame["said"] = frame["example_id"].map(predicted(con, dataset_id, _runs_on(con, chosen, dataset_id)))
        for (trigger, operator), cell in frame.groupby(["trigger", "operator"]):
            said = cell["said"].dropna().to_numpy()
            rate = mean(said)
            rows.append(
                {
                    "dataset": dataset_id,
                    "trigger": trigger,
                    "operator": operator,
                    "model": rate.value,
                    "model_low": rate.low,
                    "model_high": rate.high,
                    "model_n": len(said),
                }
            )
    cells = pd.DataFrame(
        rows, columns=["dataset", "trigger", "operator", "model", "model_low", "model_high", "model_n"]
    )
    out = table.merge(cells, on=["dataset", "trigger", "operator"], how="left")
    out["contaminated"] = [why.get(d, "") for d in out["dataset"]]
    out["gap"] = out["model"] - out["human"]
    return out


def cell_items(
    con: duckdb.DuckDBPyConnection,
    dataset: str,
    trigger: str,
    operator: str,
    model: str | None = None,
    include_contaminated: bool = False,
) -> pd.DataFrame:
    """The items of one cell (human survival per item; the model's share of E when a model is chosen)."""
    if dataset not in datasets(con):
        raise ValueError(f"dataset {dataset!r} has no projection items; choose one of {datasets(con)}")
    frame = items(con, dataset)
    frame = frame[(frame["trigger"] == trigger) & (frame["operator"] == operator)]
    if model:
        chosen = _choice(con, model)
        if include_contaminated or not chosen["contaminated"].get(dataset):
            frame = frame.assign(
                model_E=frame["example_id"].map(predicted(con, dataset, _runs_on(con, chosen, dataset)))
            )
    return frame.reset_index(drop=True)


def template_items(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Per item of a dataset whose spec has a `template` part (PROPRES: the people-rated items, whose gold is a
    template's label): example_id, trigger, operator, input, hypothesis, template (its label), people (the crowd's
    label counts, most frequent first), majority differs (its crowd majority is not the template's label; a tie
    that includes it counts as agreeing), judgements, judgements differing (from their own row's template label,
    as the loader counted them) and ambiguous (its rows give more than one template label). Empty for a dataset
    without a template part."""
    rule = spec(con, dataset_id)
    template, human = rule.get("template"), rule.get("human") or {}
    if not template or not human.get("label"):
        return pd.DataFrame()
    trigger = rule.get("trigger", "trigger_type")
    frame = queries.projection_rows(con, dataset_id, trigger, rule["operator"], template["where"])
    frame["operator"] = frame["raw_operator"].map(rule.get("operators", {}))
    counted = queries.extra_columns(con, dataset_id, (template["judgements"], template["differing"]))
    counted.columns = ["judgements", "judgements differing"]
    examples = queries.examples_frame(con, dataset_id)[["ambiguous"]]
    counts = queries.crowd_label_counts(con, dataset_id, human["criterion"])
    counts = counts.sort_values(["example_id", "n"], ascending=[True, False], kind="stable")
    gold = counts["example_id"].map(frame.set_index("example_id")["gold_label"])
    top = (counts["label"] == gold) & (counts["n"] == counts.groupby("example_id")["n"].transform("max"))
    votes = (counts["label"] + " " + counts["n"].astype(str)).groupby(counts["example_id"]).agg(", ".join)
    frame = frame.join(counted.astype(float), on="example_id").join(examples, on="example_id")
    frame["majority differs"] = ~frame["example_id"].map(top.groupby(counts["example_id"]).any()).astype(bool)
    frame["people"] = frame["example_id"].map(votes)
    frame["ambiguous"] = frame["ambiguous"].astype(bool)
    columns = ["example_id", "trigger", "operator", "input", "hypothesis", "gold_label", "people", "majority differs"]
    columns += ["judgements", "judgements differing", "ambiguous"]
    return frame[columns].rename(columns={"gold_label": "template"}).reset_index(drop=True)


def template_vs_people(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Per trigger × operator of `template_items`: the share of judgements whose label is not their row's
    template label (every item), and the share of items whose crowd majority is not the item's template label
    with its 95% CI, over the items whose rows all give one template label. Empty for a dataset without a
    template part."""
    frame = template_items(con, dataset_id)
    if frame.empty:
        return frame
    rows = []
    for (name, operator), cell in frame.groupby(["trigger", "operator"], sort=True):
        single = cell[~cell["ambiguous"]]
        differs = mean(single["majority differs"].to_numpy(dtype=float))  # 0 of 20 is not [0, 0]
        rows.append(
            {
                "trigger": name,
                "operator": operator,
                "items": len(cell),
                "judgements": int(cell["judgements"].sum()),
                "judgements differing": cell["judgements differing"].sum() / cell["judgements"].sum(),
                "items (one template label)": len(single),
                "majority differs": differs.value,
                "low": differs.low,
                "high": differs.high,
            }
        )
    table = pd.DataFrame(rows)
    return table.sort_values(
        ["trigger", "operator"], key=lambda c: c.map(OPERATORS.index) if c.name == "operator" else c
    )


def template_cell(con: duckdb.DuckDBPyConnection, dataset_id: str, trigger: str, operator: str) -> pd.DataFrame:
    """The items of one cell of `template_vs_people`, those whose crowd majority differs from the template first."""
    frame = template_items(con, dataset_id)
    if frame.empty:
        raise ValueError(f"dataset {dataset_id!r} has no template labels to set against people")
    cell = frame[(frame["trigger"] == trigger) & (frame["operator"] == operator)]
    return cell.sort_values(["majority differs", "example_id"], ascending=[False, True], ignore_index=True)


def template_datasets(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Loaded datasets whose projection spec sets a template's labels against people's."""
    return [d for d in datasets(con) if spec(con, d).get("template")]


def by_run(con: duckdb.DuckDBPyConnection, dataset_id: str, run_ids: list[str] | None = None) -> pd.DataFrame:
    """One dataset's cells with human survival and, per complete NLI run, its E rate with CI and whether
    it is contaminated (for `python -m backend evaluate`)."""
    frame = items(con, dataset_id)
    runs = contamination.runs_frame(con, dataset_id)
    runs = runs[(runs["task"] == "nli") & (runs["run_id"].isin(run_ids) if run_ids else True)]
    rows = []
    for run in runs.itertuples():
        said = frame["example_id"].map(predicted(con, dataset_id, [run.run_id]))
        for (trigger, operator), cell in frame.assign(said=said).groupby(["trigger", "operator"]):
            human, model = mean(cell["survives"].dropna().to_numpy()), mean(cell["said"].dropna().to_numpy())
            rows.append(
                {
                    "run": run.run_id,
                    "trigger": trigger,
                    "operator": operator,
                    "n": len(cell),
                    "human": round(human.value, 3),
                    "E rate": f"{model.value:.3f} [{model.low:.3f}, {model.high:.3f}]",
                    "contaminated": run.contaminated,
                }
            )
    return pd.DataFrame(rows, columns=["run", "trigger", "operator", "n", "human", "E rate", "contaminated"])
