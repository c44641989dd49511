"""`python -m backend evaluate`: every table the dashboard shows, computed from the store.

A report is an ordered mapping title → DataFrame. Classification datasets get accuracy and
macro-F1 with 95% bootstrap CIs, per-class scores, response bias and a breakdown by every facet the
dataset has; NOPE also gets the paper's analyses (Figure 2, Tables 2-4, Figures 3 and 5,
accuracy on majority-N items, human-vs-model calibration), for each run and each run group (a
model × training data averaged over its seeds, as in the paper's tables).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from backend.analysis import gradient as gradient_tables
from backend.analysis import leaderboard, projection
from backend.datasets.catalogue import describe
from backend.metrics import classification
from backend.metrics import nope_paper as nope
from backend.metrics import pairs as pair_metrics
from backend.metrics.bootstrap import Estimate, paired_difference
from backend.metrics.facets import accuracy_of, by_facet
from backend.models import contamination
from backend.store import queries
from backend.store import runs as store_runs
from backend.store.ids import pasted

Report = dict[str, pd.DataFrame]


@dataclass(frozen=True)
class Scored:
    """Predictions of several runs aligned to one item order."""

    runs: pd.DataFrame  # one row per run
    labels: np.ndarray  # runs × items, predicted label or None
    probs: np.ndarray  # runs × items × classes (NaN where missing)
    correct: np.ndarray  # runs × items, 1.0 / 0.0 (a prediction row without a label is wrong)
    covered: np.ndarray  # runs × items, True where the run has a prediction row

    def complete(self) -> Scored:
        """Only the runs that predicted every item (the vectorised analyses need one item set)."""
        keep = self.covered.all(axis=1)
        return Scored(
            self.runs[keep].reset_index(drop=True),
            self.labels[keep],
            self.probs[keep],
            self.correct[keep],
            self.covered[keep],
        )


def score(items: pd.DataFrame, runs: pd.DataFrame, predictions: pd.DataFrame, classes: list[str]) -> Scored:
    """Align every run's predictions with `items`."""
    position = pd.Series(np.arange(len(items)), index=items.index)
    run_row = pd.Series(np.arange(len(runs)), index=runs["run_id"])
    preds = predictions[predictions["example_id"].isin(position.index)]
    r, c = run_row[preds["run_id"]].to_numpy(), position[preds["example_id"]].to_numpy()
    labels = np.full((len(runs), len(items)), None, dtype=object)
    labels[r, c] = preds["label"].to_numpy()
    probs = np.full((len(runs), len(items), len(classes)), np.nan)
    has_probs = preds["probs"].map(lambda p: isinstance(p, (list, np.ndarray)) and len(p) == len(classes)).to_numpy()
    if has_probs.any():
        probs[r[has_probs], c[has_probs]] = np.stack(preds["probs"].to_numpy()[has_probs])
    correct = (labels == items["gold_label"].to_numpy()[None, :]).astype(np.float64)
    covered = np.zeros(labels.shape, dtype=bool)
    covered[r, c] = True
    return Scored(runs.reset_index(drop=True), labels, probs, correct, covered)


def run_groups(runs: pd.DataFrame) -> dict[str, list[int]]:
    """Model × training data → row positions of its seeds, for groups of more than one run."""
    keys = runs["model_id"] + runs["training_data"].fillna("").map(lambda t: f" · {t}" if t else "")
    return {
        f"{key} (mean of {len(rows)})": list(rows) for key, rows in keys.groupby(keys).indices.items() if len(rows) > 1
    }


def rows_for(scored: Scored, groups: bool) -> tuple[list[str], np.ndarray, list[str]]:
    """Names and correctness rows of every run plus (optionally) every run group's mean over seeds,
    and the summary names: the groups and the runs that belong to none (the paper's view)."""
    names, rows, grouped = list(scored.runs["run_id"]), list(scored.correct), set()
    if groups:
        for name, members in run_groups(scored.runs).items():
            names.append(name)
            rows.append(scored.correct[members].mean(axis=0))
            grouped |= set(scored.runs["run_id"].iloc[members])
    summary = [n for n in names if n not in grouped]
    return names, np.array(rows, dtype=float).reshape(len(names), scored.correct.shape[1]), summary


def headline(items: pd.DataFrame, scored: Scored, classes: list[str]) -> pd.DataFrame:
    """Per run and split, over the items the run predicted: accuracy and macro-F1 with CI and n, how
    many it gave no label (a response that did not parse, a refusal, an empty response or an error:
    counted wrong), and the most predicted label (its share shows response bias)."""
    gold, splits = items["gold_label"].to_numpy(), items["split"].to_numpy()
    rows = []
    for run, labels, covered in zip(scored.runs.itertuples(), scored.labels, scored.covered):
        for split in pd.unique(splits[covered]):
            mask = covered & (splits == split)
            acc = classification.accuracy(gold[mask], labels[mask])
            f1 = classification.macro_f1(gold[mask], labels[mask], classes)
            share = pd.Series(labels[mask]).value_counts(normalize=True)
            rows.append(
                {
                    "run": run.run_id,
                    "model": run.model_id,
                    "source": run.source,
                    "split": split,
                    "accuracy": _fmt(acc),
                    "macro-F1": _fmt(f1),
                    "n": acc.n,
                    "no label": int(pd.isna(labels[mask]).sum()),
                    "most predicted": f"{share.index[0]} {100 * share.iloc[0]:.0f}%" if len(share) else "—",
                }
            )
    return pd.DataFrame(rows)


def _fmt(est: Estimate) -> str:
    return f"{100 * est.value:.1f} [{100 * est.low:.1f}, {100 * est.high:.1f}]"


def facet_breakdown(items: pd.DataFrame, scored: Scored) -> pd.DataFrame:
    """Accuracy per run and per value of every facet the dataset uses: the typed ones, then the
    description's `extra` facets (e.g. IMPPRES's and CommitmentBank's operator) as 'extra.KEY'."""
    candidates = list(queries.FACETS) + [c for c in items.columns if c.startswith("extra.")]
    used = [f for f in candidates if items[f].notna().any() and items[f].nunique() > 1]
    frames = []
    for run_id, labels, covered in zip(scored.runs["run_id"], scored.labels, scored.covered):
        frame = items.assign(label=labels)[covered]
        for facet in used:
            table = by_facet(frame, [facet], accuracy_of).rename(columns={facet: "value_of_facet"})
            frames.append(table.assign(run=run_id, facet=facet))
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames)[["run", "facet", "value_of_facet", "value", "low", "high", "n"]]


def response_bias(items: pd.DataFrame, scored: Scored, classes: list[str]) -> pd.DataFrame:
    frames = [
        classification.response_bias(items["gold_label"][covered], labels[covered], classes).assign(run=run_id)
        for run_id, labels, covered in zip(scored.runs["run_id"], scored.labels, scored.covered)
    ]
    return pd.concat(frames)[["run", "label", "gold_share", "predicted_share"]] if frames else pd.DataFrame()


def classification_report(con: duckdb.DuckDBPyConnection, dataset_id: str, run_ids: list[str] | None = None) -> Report:
    items = queries.examples_frame(con, dataset_id)
    items = items.join(queries.extra_columns(con, dataset_id, describe(con, dataset_id).facets))
    runs = contamination.runs_frame(con, dataset_id)
    runs = runs[runs["task"].isin(store_runs.CLASSIFICATION_TASKS)]
    if run_ids:
        runs = runs[runs["run_id"].isin(run_ids)]
    if runs.empty:
        return {"runs": pd.DataFrame({"note": [f"no complete classification runs for {dataset_id}"]})}
    classes = list(runs["labels"].iloc[0])
    scored = score(items, runs, queries.predictions_frame(con, list(runs["run_id"])), classes)
    flagged = dict(zip(runs["run_id"], runs["contaminated"]))  # backend.models.contamination: '' when clean
    return {
        "Accuracy and macro-F1 per run and split (95% bootstrap CI)": headline(items, scored, classes).assign(
            contaminated=lambda f: f["run"].map(flagged).fillna("")
        ),
        "Response bias: predicted vs gold label shares": response_bias(items, scored, classes),
        "Accuracy by facet": facet_breakdown(items, scored),
        "Minimal pairs: pair accuracy, flips and McNemar per run and pair set": pair_table(
            items, queries.pairs_frame(con, dataset_id), scored
        ),
    }


def transfer(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Runs here whose model was trained on another loaded dataset, beside that model's headline on the
    held-out splits of the dataset it was trained on: in-distribution vs transferred (each with CI)."""
    board = leaderboard.headline(con)
    board = board.assign(
        score=board.apply(lambda r: f"{r['value']:.3f} [{r['low']:.3f}, {r['high']:.3f}] (n={r['n']})", axis=1)
    )
    here = board[board["dataset"] == dataset_id]
    rows = []
    for run_id, (_, listed) in contamination.trained_on(con, dataset_id).items():
        mine = here[here["run"] == run_id]
        for name in listed:
            source, _, split = name.partition(":")
            there = board[
                (board["dataset"] == source) & (board["model"].isin(mine["model"])) & (board["split"] != split)
            ]
            for a in mine.itertuples():
                for b in there[there["metric"] == a.metric].itertuples():  # the same task and metric only
                    rows.append(
                        {
                            "model": a.model,
                            "trained on": name,
                            "metric": a.metric,
                            f"on {dataset_id}": a.score,
                            f"{dataset_id} split": a.split,
                            "in distribution": b.score,
                            "where": f"{b.dataset} {b.split}",
                            "run here": run_id,
                            "run there": b.run,
                        }
                    )
    return pd.DataFrame(rows)


def pair_table(items: pd.DataFrame, pairs: pd.DataFrame, scored: Scored) -> pd.DataFrame:
    """Per run and pair kind (and corpus split): the 2×2 outcome counts, pair accuracy with CI,
    prediction vs gold flip rate, and McNemar's p (is a right/b wrong as common as the reverse?)."""
    position = pd.Series(np.arange(len(items)), index=items.index)
    pairs = pairs[pairs["example_a"].isin(position.index) & pairs["example_b"].isin(position.index)]
    rows = []
    for (kind, split), group in pairs.groupby([pairs["kind"], pairs["example_a"].map(items["split"])]):
        a, b = position[group["example_a"]].to_numpy(), position[group["example_b"]].to_numpy()
        gold = items["gold_label"].to_numpy()
        for run, labels, covered in zip(scored.runs["run_id"], scored.labels, scored.covered):
            keep = covered[a] & covered[b]
            if not keep.any():
                continue
            s = pair_metrics.summarise(gold[a][keep], labels[a][keep], gold[b][keep], labels[b][keep])
            cells = s.table.to_numpy().ravel().tolist()
            rows.append(
                {
                    "run": run,
                    "pairs": kind,
                    "split": split,
                    "n": int(keep.sum()),
                    "both right": cells[0],
                    "a right only": cells[1],
                    "b right only": cells[2],
                    "both wrong": cells[3],
                    "pair accuracy": _fmt(s.pair_accuracy),
                    "flip rate": _fmt(s.flip_rate),
                    "gold flip rate": round(100 * s.gold_flip_rate, 1),
                    "McNemar p": s.mcnemar_p,
                }
            )
    return pd.DataFrame(rows)


def compare(con: duckdb.DuckDBPyConnection, dataset_id: str, run_a: str, run_b: str) -> pd.DataFrame:
    """Accuracy of two runs on the items both predicted, per split: paired bootstrap and McNemar."""
    items = queries.examples_frame(con, dataset_id)
    runs = contamination.runs_frame(con, dataset_id).set_index("run_id")
    missing = [r for r in (run_a, run_b) if r not in runs.index]
    if missing:
        raise ValueError(f"unknown run(s) {missing} for {dataset_id}; known: {sorted(runs.index)[:10]} ...")
    scored = score(
        items,
        runs.loc[[run_a, run_b]].reset_index(),
        queries.predictions_frame(con, [run_a, run_b]),
        list(runs.loc[run_a, "labels"]),
    )
    rows = []
    for split in pd.unique(items["split"]):
        keep = scored.covered.all(axis=0) & (items["split"] == split).to_numpy()
        if keep.any():
            a, b = scored.correct[0, keep], scored.correct[1, keep]
            diff = paired_difference(a, b)
            rows.append(
                {
                    "split": split,
                    "n": int(keep.sum()),
                    "accuracy a": 100 * a.mean(),
                    "accuracy b": 100 * b.mean(),
                    "difference": 100 * diff.difference,
                    "low": 100 * diff.low,
                    "high": 100 * diff.high,
                    "paired bootstrap p": diff.p_value,
                    "McNemar p": pair_metrics.mcnemar(a > 0, b > 0),
                }
            )
    return pd.DataFrame(rows)


def nope_inputs(
    con: duckdb.DuckDBPyConnection, run_ids: list[str] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, Scored]:
    """NOPE items (with crowd votes), main-corpus negation pairs, and the scored NLI runs (`.complete()`: those that
    predicted every item)."""
    items = queries.examples_frame(con, "nope").join(queries.crowd_votes(con, "nope"))
    pairs = queries.pairs_frame(con, "nope", "negation")
    pairs = pairs[pairs["example_a"].map(items["split"]) == "main"]
    runs = contamination.runs_frame(con, "nope")
    runs = runs[(runs["task"] == "nli") & (runs["run_id"].isin(run_ids) if run_ids else True)]
    scored = score(items, runs, queries.predictions_frame(con, list(runs["run_id"])), nope.LABELS)
    return items, pairs, scored


def nope_report(con: duckdb.DuckDBPyConnection, run_ids: list[str] | None = None, groups: bool = True) -> Report:
    """The NOPE paper's figures and tables, for every complete run and run group.

    `report["summary runs"]` lists the groups and ungrouped runs: the rows the paper would show.
    """
    items, pairs, every = nope_inputs(con, run_ids)
    scored = every.complete()
    names, rows, summary = rows_for(scored, groups)
    part = ~every.covered.all(axis=1)  # a run over part of NOPE: scored on its own items above, not in the paper's
    left_out = pd.DataFrame(
        {"run": every.runs.loc[part, "run_id"], "items": every.covered[part].sum(axis=1), "of": len(items)}
    )
    return ({PARTIAL: left_out} if part.any() else {}) | {
        "Figure 2: gold label distribution per trigger × polarity (main)": nope.label_distribution(items),
        "Table 2: label change under negation, % of pairs (non-negated → negated)": nope.negation_change(items, pairs),
        "Figure 3: mean SD of the five ratings per trigger × polarity (main)": nope.rating_spread(items),
        "Table 3: annotator agreement": nope.agreement(items),
        "Figure 5: accuracy per trigger, main and adversarial": nope.accuracy_by_trigger(items, rows, names),
        "Table 4: accuracy on projection subsets (main)": nope.projection_subsets(items, pairs, rows, names),
        "Accuracy on items whose majority label is N (main)": nope.accuracy_on_label(items, rows, names, "N"),
        "Human vs model: crowd label shares vs model probabilities": nope.calibration(
            items, scored.probs, list(scored.runs["run_id"])
        ),
        "summary runs": pd.DataFrame({"run": summary}),
    }


TABLE4 = "Table 4: accuracy on projection subsets (main)"
PARTIAL = (
    "Runs left out of the NOPE paper's tables below: they cover part of the items (their accuracy on the items they "
    "cover is in the tables above)"
)
TRANSFER = "Transfer: models trained on another dataset, here vs in distribution (95% CI)"
PROJECTION = "Projection: presupposition survival (share E) per trigger × operator, people / gold vs each run"
TEMPLATE = "Template vs people per trigger × operator: items whose crowd majority is not the template's label (95% CI)"
FIGURE5 = "Figure 5: accuracy per trigger, main and adversarial"


def table4(report: Report, runs: list[str] | None = None) -> pd.DataFrame:
    """Table 4 in the paper's layout: one row per run or group, six columns of accuracy (%)."""
    frame = report[TABLE4]
    frame = frame[frame["run"].isin(runs)] if runs else frame
    wide = frame.pivot_table(index="run", columns=["subset", "polarity"], values="value", sort=False)
    wide.columns = [f"{subset} {polarity}" for subset, polarity in wide.columns]
    return (100 * wide).round(1)


def figure5(report: Report, runs: list[str]) -> pd.DataFrame:
    """Figure 5 as a table: triggers as rows, (split, run) as columns, accuracy %."""
    frame = report[FIGURE5]
    wide = frame[frame["run"].isin(runs)].pivot_table(
        index="trigger_type", columns=["split", "run"], values="value", sort=False
    )
    wide.columns = [f"{split}: {run}" for split, run in wide.columns]
    return (100 * wide).round(1)


def paper_view(report: Report) -> Report:
    """The NOPE report as the paper shows it: groups and ungrouped runs only, wide tables."""
    runs = list(report["summary runs"]["run"])
    view = {title: frame for title, frame in report.items() if title not in (TABLE4, FIGURE5, "summary runs")}
    view["Accuracy on items whose majority label is N (main)"] = report[
        "Accuracy on items whose majority label is N (main)"
    ].query("run in @runs")
    view[FIGURE5 + " (%)"] = figure5(report, runs).reset_index()
    view[TABLE4 + " (%)"] = table4(report, runs).reset_index()
    return view


CERTAINTY = "Gradient projection: mean certainty per {by}, people and each run (95% CI)"
RHO = "Gradient projection: Spearman ρ between each run's and people's per-{by} means (95% CI over {by}s)"
PRIOR = "Prior effect per {by}: mean certainty after a high-prior fact minus after a low one (95% CI)"


def gradient(con: duckdb.DuckDBPyConnection, dataset_id: str, run_ids: list[str] | None = None) -> Report:
    """For a dataset with a `gradient` spec (`analysis.gradient`), per grouping facet: people's mean certainty per
    group and each complete NLI run's on the same scale, each run's Spearman ρ with people over groups, and the
    prior effect of both where the dataset has priors."""
    runs = gradient_tables.runs(con, dataset_id)["run_id"]
    chosen = tuple(r for r in runs if not run_ids or r in run_ids)
    report = {}
    for by in gradient_tables.spec(con, dataset_id)["by"]:
        table = gradient_tables.certainty(con, dataset_id, by, chosen)
        report[CERTAINTY.format(by=by)] = table.rename(columns={"group": by})
        if chosen:
            report[RHO.format(by=by)] = gradient_tables.agreement(table)
        effects = gradient_tables.prior_effect(con, dataset_id, by, chosen)
        if not effects.empty:
            report[PRIOR.format(by=by)] = effects.rename(columns={"group": by})
    return report


class UnknownRuns(ValueError):
    """--run named runs that are not complete runs of the dataset; the message lists them and what is there."""


def checked_runs(con: duckdb.DuckDBPyConnection, dataset_id: str, run_ids: list[str] | None) -> list[str] | None:
    """The run ids as given (an invisible U+2060 or spaces a copy brought along removed), each a complete run of
    the dataset; UnknownRuns says which are not (unknown, or not complete: e.g. a --limit run, and its status)."""
    if not run_ids:
        return run_ids
    wanted = [pasted(r) for r in run_ids]
    runs = store_runs.listing(con, status=None).set_index("run_id")
    every = runs.loc[runs["dataset_id"] == dataset_id, "status"]
    elsewhere = runs.loc[runs.index.isin(wanted) & (runs["dataset_id"] != dataset_id), "dataset_id"]
    wrong = [_why_not(r, dataset_id, every, elsewhere) for r in wanted if every.get(r) != "complete"]
    if wrong:
        known = sorted(every.index[every == "complete"])
        shown = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
        partial = any(r in every.index for r in wanted if every.get(r) != "complete")
        raise UnknownRuns(
            f"--run: {'; '.join(wrong)} cannot be evaluated"
            + (": only complete runs are (a --limit run covers part of the items; run it without --limit)" * partial)
            + f". Complete runs of {dataset_id}: {shown or 'none'}"
        )
    return wanted


def _why_not(run: str, dataset_id: str, every: pd.Series, elsewhere: pd.Series) -> str:
    """Why `run` is not a run to evaluate on `dataset_id`: another dataset's (named), unknown, or its status."""
    if run in elsewhere.index:
        return f"{run!r} (a run of {elsewhere[run]}, not of {dataset_id}: evaluate it with --dataset {elsewhere[run]})"
    return f"{run!r} ({'no such run of ' + dataset_id if run not in every.index else 'status ' + every[run]})"


def evaluate(con: duckdb.DuckDBPyConnection, dataset_id: str, run_ids: list[str] | None = None) -> Report:
    run_ids = checked_runs(con, dataset_id, run_ids)
    graded = gradient(con, dataset_id, run_ids) if gradient_tables.spec(con, dataset_id) else {}
    if graded and queries.examples_frame(con, dataset_id)["gold_label"].isna().all():
        return graded  # no gold label (projective probability): nothing to score a classification by
    report = classification_report(con, dataset_id, run_ids)
    if projection.spec(con, dataset_id):
        report[PROJECTION] = projection.by_run(con, dataset_id, run_ids)
        against = projection.template_vs_people(con, dataset_id)
        if not against.empty:
            report[TEMPLATE] = against
    moved = transfer(con, dataset_id)
    if not moved.empty:
        report[TRANSFER] = moved
    if dataset_id == "nope":
        report.update(nope_report(con, run_ids))
    return report | graded


def markdown(report: Report, digits: int = 3) -> str:
    """The report as Markdown sections (floats rounded), for the terminal or a paper draft."""
    parts = []
    for title, frame in report.items():
        body = frame.to_markdown(index=False, floatfmt=f".{digits}g") if not frame.empty else "_(empty)_"
        parts.append(f"## {title}\n\n{body}\n")
    return "\n".join(parts)


def write_json(report: Report, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {title: json.loads(frame.to_json(orient="records", force_ascii=False)) for title, frame in report.items()}
    path.write_text(json.dumps(payload, indent=1, ensure_ascii=False))
