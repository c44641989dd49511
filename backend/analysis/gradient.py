"""Gradient projection: how strongly people take a content for granted, per predicate (or verb, or operator),
on the dataset's own graded scale, beside any run's certainty on the same scale; the items behind each point.

A dataset takes part when its description has a `gradient` spec (`Description.gradient`; built in: the
projective-probability experiments and CommitmentBank; a user dataset may declare one):

- `criterion`: the crowd ratings that are people's certainty; `scale`: their range ([0, 1] sliders, [−3, 3]);
- `by`: the facets a point can stand for (the first is the default), `leave_out`: facet values left out
  (controls), `split`: the split people's certainty is read from (absent: every split);
- `prior` and `prior_split`: the facet saying whether a high- or low-prior fact was shown, and where;
- `model`: a label's weight in a run's certainty, Σ P(label)·weight (projective probability: P(E), the
  probability that the content is true; CommitmentBank: 3·P(E) − 3·P(C), an expected rating on −3…+3), with
  `formula` saying so in words; a run without probabilities gives its label's weight;
- `item`: the facet naming an item across conditions, for a mixed model's by-item effects (projective probability:
  the content; absent: each example is its own item);
- `raters`: "per item" when rater ids are numbered within each item (CommitmentBank's file does not name its
  participants): each rating is then its own rater;
- `runs_from`: the dataset whose runs are compared (a study's source dataset: its items keep their ids), `study`:
  the study whose answers the ratings are (only its analysed participants are read: `studies.collection.analysed`).

People's mean per group has a 95% CI from a bootstrap over participants and items together
(`metrics.gradient`); a run's is over items (it rates each once). Spearman's ρ between a run's and people's
group means has a bootstrap CI over groups.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from backend.datasets.catalogue import described, part
from backend.metrics import gradient as gradient_metrics
from backend.models import contamination
from backend.store import queries
from backend.store import runs as store_runs
from backend.studies import collection

PEOPLE = "people"
COLUMNS = ["who", "group", "n", "participants", "items", "mean", "low", "high"]


def spec(con: duckdb.DuckDBPyConnection, dataset_id: str) -> dict:
    """The dataset's gradient spec ({} when it has none). A built-in dataset stored before it had one takes its
    loader's."""
    return part(con, dataset_id, "gradient")


def datasets(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Loaded datasets with a gradient spec."""
    return [d for d in described(con) if spec(con, d)]


def _checked(con: duckdb.DuckDBPyConnection, dataset_id: str, by: str | None = None) -> tuple[dict, str]:
    """The spec and the grouping facet, or a ValueError naming what can be chosen."""
    rule = spec(con, dataset_id)
    if not rule:
        raise ValueError(f"dataset {dataset_id!r} has no graded ratings; choose one of {datasets(con)}")
    by = by or rule["by"][0]
    if by not in rule["by"]:
        raise ValueError(f"{dataset_id} is grouped by one of {rule['by']}, not {by!r}")
    return rule, by


def ratings(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Every crowd rating of the spec's criterion: rater, item, value, split and the spec's facets (controls
    left out); a rater numbered within its item is that item's own."""
    rule = spec(con, dataset_id)
    frame = _left_out(rule, queries.crowd_values(con, dataset_id, rule["criterion"], _keys(rule)))
    found = collection.analysed(con, dataset_id)  # a study's: only its analysed participants (open: finished so far)
    if found is not None:
        frame = frame[frame["rater"].isin(found.participants)]
    if rule.get("raters") == "per item":
        frame = frame.assign(rater=frame["item"] + "/" + frame["rater"])
    return frame.reset_index(drop=True)


def pilot_ratings(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """A study's pilot answers in `ratings`' columns (controls left out): never analysed with the real ones, read only
    where a researcher chooses them (a mixed model of the pilot, whose estimates a power analysis may assume)."""
    rule = spec(con, study_id)
    return _left_out(rule, queries.pilot_values(con, study_id, _keys(rule))).reset_index(drop=True)


def _keys(rule: dict) -> tuple[str, ...]:
    return tuple(
        dict.fromkeys([*rule["by"], *[rule[k] for k in ("prior", "item") if rule.get(k)], *rule.get("leave_out", {})])
    )


def _left_out(rule: dict, frame: pd.DataFrame) -> pd.DataFrame:
    for facet, values in rule.get("leave_out", {}).items():
        frame = frame[~frame[facet].isin(values)]
    return frame


def facet_column(facet: str) -> str:
    """The column `ratings` gives a facet: its name, or `item_1` for a facet named `item` (a study's items often
    are), which the example id's column already holds."""
    return "item_1" if facet == "item" else facet


def analysed(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str:
    """What a page says of a study's participants: '36 participants analysed (the study is closed); left out: 4 by
    controls_sd, 1 not finished'; '' for a dataset that is not a study's."""
    found = collection.analysed(con, dataset_id)
    return found.describe() if found is not None else ""


def _in_split(frame: pd.DataFrame, split: str | None) -> pd.DataFrame:
    return frame if split is None else frame[frame["split"] == split]


def runs(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """The dataset's complete NLI runs: run_id, model_id, source, contaminated (why, '' when clean)."""
    frame = contamination.runs_frame(con, spec(con, dataset_id).get("runs_from", dataset_id))
    return frame[frame["task"] == "nli"][["run_id", "model_id", "source", "labels", "contaminated"]].reset_index(
        drop=True
    )


def run_values(con: duckdb.DuckDBPyConnection, dataset_id: str, run_id: str) -> pd.Series:
    """A run's certainty per item on the dataset's scale: Σ P(label)·weight over the spec's `model` weights,
    from its probabilities where it has them, else its label's weight."""
    rule = spec(con, dataset_id)
    weights, source = rule["model"], rule.get("runs_from", dataset_id)
    chosen = store_runs.listing(con, source, tasks=("nli",)).set_index("run_id")  # runs() less contamination
    if run_id not in chosen.index:
        raise ValueError(f"{run_id!r} is not a complete NLI run on {source}; choose one of {list(chosen.index)}")
    labels = list(chosen.loc[run_id, "labels"])
    weight = np.array([weights.get(label, 0.0) for label in labels], dtype=float)
    frame = queries.predictions_frame(con, [run_id]).set_index("example_id")
    expected = frame["probs"].map(lambda p: float(np.dot(p, weight)) if p is not None and len(p) else np.nan)
    return expected.fillna(frame["label"].map(lambda label: weights.get(label, 0.0))).rename("value")


def _as_ratings(people: pd.DataFrame, values: pd.Series) -> pd.DataFrame:
    """A run's values as one rating per item, with the items' split and facets from people's ratings."""
    items = people.drop_duplicates("item").set_index("item").drop(columns=["rater", "value"])
    said = values.reindex(items.index).dropna()
    return items.loc[said.index].assign(value=said.to_numpy(), rater="model").rename_axis("item").reset_index()


def certainty(
    con: duckdb.DuckDBPyConnection, dataset_id: str, by: str | None = None, run_ids: tuple[str, ...] = ()
) -> pd.DataFrame:
    """who (people or a run id), group, n (ratings), participants, items, mean, low, high: people's mean per group
    of the spec's split, ordered by it, then each run's on the same items."""
    rule, by = _checked(con, dataset_id, by)
    people = ratings(con, dataset_id)
    tables = [_per_group(_in_split(people, rule.get("split")), by).assign(who=PEOPLE)]
    for run_id in run_ids:
        model = _in_split(_as_ratings(people, run_values(con, dataset_id, run_id)), rule.get("split"))
        tables.append(_per_group(model, by).assign(who=run_id))
    order, who = list(tables[0]["group"]), [PEOPLE, *run_ids]
    table = pd.concat(tables, ignore_index=True)[COLUMNS]
    keys = {"group": order.index, "who": who.index}
    return table.sort_values(["group", "who"], key=lambda c: c.map(keys[c.name]), ignore_index=True)


def _per_group(frame: pd.DataFrame, by: str) -> pd.DataFrame:
    table = gradient_metrics.per_predicate(frame.rename(columns={by: "predicate"}))
    return table.rename(columns={"predicate": "group"})


def agreement(table: pd.DataFrame) -> pd.DataFrame:
    """run, groups, rho, low, high, note: Spearman ρ between each run's and people's group means (CI over groups);
    `note` says why ρ is undefined where it is (a run with one value in every group, or fewer than 3 groups)."""
    people = table[table["who"] == PEOPLE].set_index("group")["mean"]
    rows = []
    for run_id, mine in table[table["who"] != PEOPLE].groupby("who", sort=False):
        means = mine.set_index("group")["mean"]
        rho = gradient_metrics.spearman(means, people)
        note = (
            ""
            if rho.value == rho.value
            else "undefined: fewer than 3 groups"
            if rho.n < 3
            else f"undefined: the run gives every group the same value ({means.iloc[0]:.3g})"
        )
        rows.append({"run": run_id, "groups": rho.n, "rho": rho.value, "low": rho.low, "high": rho.high, "note": note})
    return pd.DataFrame(rows, columns=["run", "groups", "rho", "low", "high", "note"])


def prior_effect(
    con: duckdb.DuckDBPyConnection, dataset_id: str, by: str | None = None, run_ids: tuple[str, ...] = ()
) -> pd.DataFrame:
    """who, group, n_high_prior, mean_high_prior, n_low_prior, mean_low_prior, effect, effect_low, effect_high: the
    ratings and mean certainty after a high-prior fact and after a low one, and the effect (the first mean minus the
    second), per group, for people and each run (empty for a dataset without priors); `effect_low` and
    `effect_high` name the effect's 95% interval, as `low` and `high` do in every table of the lab."""
    rule, by = _checked(con, dataset_id, by)
    if not rule.get("prior"):
        return pd.DataFrame()
    people = ratings(con, dataset_id)
    frames = {PEOPLE: people} | {r: _as_ratings(people, run_values(con, dataset_id, r)) for r in run_ids}
    tables = []
    for who, frame in frames.items():
        shown = _in_split(frame, rule.get("prior_split")).rename(columns={by: "predicate", rule["prior"]: "prior"})
        tables.append(gradient_metrics.prior_effect(shown).rename(columns={"predicate": "group"}).assign(who=who))
    table = pd.concat(tables, ignore_index=True)
    return table[["who", "group", *[c for c in table.columns if c not in ("who", "group")]]]


def group_items(
    con: duckdb.DuckDBPyConnection, dataset_id: str, by: str, group: str, run_id: str | None = None
) -> pd.DataFrame:
    """The items behind one point: example_id, split, the item's text, its ratings (n), people's mean, and the
    run's value when a run is chosen — every split, so the prior experiment's items are listed too."""
    rule, by = _checked(con, dataset_id, by)
    people = ratings(con, dataset_id)
    mine = people[people[by] == group]
    if mine.empty:
        raise ValueError(f"no rated items with {by} = {group!r} in {dataset_id}")
    per_item = mine.groupby("item").agg(ratings=("value", "size"), people=("value", "mean"))
    texts = queries.examples_frame(con, dataset_id)
    frame = per_item.join(texts[["split", "input", "hypothesis"]])
    if rule.get("prior"):
        frame = frame.join(mine.drop_duplicates("item").set_index("item")[rule["prior"]])
    if run_id:
        frame = frame.assign(model=run_values(con, dataset_id, run_id).reindex(frame.index))
    return frame.rename_axis("example_id").reset_index().sort_values(["split", "people"], ascending=[True, False])
