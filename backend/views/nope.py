"""The NOPE page's data: run/group choices, the paper's analyses for ONE choice, and the items
behind any bar or cell.

Thin functions over `backend.analysis.evaluation` (nope_inputs) and `backend.metrics.nope_paper`, computing only for
the chosen run or group (a group = every seed of one model × training data; its correctness row is
the mean over seeds, as in the paper). Pages call them through `ui.resources.query` (cached).
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from backend.analysis import evaluation
from backend.metrics import nope_paper as nope
from backend.models import contamination
from backend.models.contamination import FLAG  # noqa: F401 — the page flags contaminated runs
from backend.store import queries
from backend.store.sessions import DATA, reads

FIGURE2 = "Figure 2: gold label distribution per trigger × polarity (main)"
TABLE2 = "Table 2: label change under negation, % of pairs (non-negated → negated)"
FIGURE3 = "Figure 3: mean SD of the five ratings per trigger × polarity (main)"
TABLE3 = "Table 3: annotator agreement"
FIGURE5 = evaluation.FIGURE5
TABLE4 = evaluation.TABLE4
MAJORITY_N = "Accuracy on items whose majority label is N (main)"
CALIBRATION = "Human vs model: crowd label shares vs model probabilities"
CURVE = "Mean model probability by crowd label share"
DEFAULT_CHOICE = "RoBERTa-large · mnli-snli-anli-fever (mean of 5)"

# Parrish et al. (2021), "NOPE: A Corpus of Naturally-Occurring Presuppositions in English",
# CoNLL 2021, Table 4: accuracy (%) on projection subsets of the main corpus, models trained on
# MNLI+SNLI+ANLI+FEVER. Keys: (subset, polarity of the member).
PAPER_TABLE4 = {
    "RoBERTa-large (mean of 5)": [89.9, 89.2, 80.6, 32.7, 35.1, 68.4],
    "DeBERTa-v2-xlarge": [90.8, 88.6, 81.8, 32.1, 38.9, 68.9],
}
TABLE4_CELLS = [(subset, polarity) for subset in nope.SUBSETS for polarity in ("non-negated", "negated")]
CELLS = {
    "figure2": ("trigger_type", "polarity"),
    "figure3": ("trigger_type", "polarity"),
    "table2": ("trigger_type", "change"),
    "figure5": ("split", "trigger_type"),
    "table4": ("subset", "polarity"),
    "majority_n": (),
}


@reads(DATA)
def run_choices(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Groups (model × training data, several seeds) then single runs of NOPE NLI runs: name, kind
    (run | group), model, training data, source, in_paper_tables, seeds, the member run ids and why
    they are contaminated ('' when not: `backend.models.contamination`)."""
    runs = contamination.runs_frame(con, "nope")
    runs = runs[runs["task"] == "nli"].reset_index(drop=True)
    rows = []
    for name, members in evaluation.run_groups(runs).items():
        group = runs.iloc[members]
        rows.append(_choice(name, "group", group))
    rows += [_choice(run.run_id, "run", runs.iloc[[i]]) for i, run in enumerate(runs.itertuples())]
    frame = pd.DataFrame(
        rows,
        columns=[
            "name",
            "kind",
            "model",
            "training data",
            "source",
            "in_paper_tables",
            "seeds",
            "run_ids",
            "contaminated",
        ],
    )
    rank = list(
        zip(
            frame["name"] != DEFAULT_CHOICE,
            frame["contaminated"] != "",
            frame["kind"] != "group",
            ~frame["in_paper_tables"],
            frame["name"],
        )
    )
    return frame.iloc[sorted(range(len(frame)), key=rank.__getitem__)].reset_index(drop=True)


def _choice(name: str, kind: str, runs: pd.DataFrame) -> dict:
    return {
        "name": name,
        "kind": kind,
        "model": runs["model_id"].iloc[0],
        "training data": runs["training_data"].dropna().iloc[0] if runs["training_data"].notna().any() else "—",
        "source": queries.SOURCE_NAMES.get(runs["source"].iloc[0], runs["source"].iloc[0]),
        "in_paper_tables": bool(runs["in_paper_tables"].all()),
        "seeds": len(runs),
        "run_ids": tuple(runs["run_id"]),
        "contaminated": "; ".join(sorted(set(runs["contaminated"]) - {""})),
    }


def _members(con: duckdb.DuckDBPyConnection, choice: str) -> tuple[str, tuple[str, ...]]:
    choices = run_choices(con).set_index("name")
    if choice not in choices.index:
        shown = ", ".join(choices.index[:6])
        raise ValueError(f"unknown NOPE run or group {choice!r}; choose one of: {shown} ...")
    return choices.loc[choice, "kind"], choices.loc[choice, "run_ids"]


def _scored(con: duckdb.DuckDBPyConnection, choice: str):
    """Items, main negation pairs, the complete member runs, the choice's correctness row, run ids."""
    _, run_ids = _members(con, choice)
    items, pairs, scored = evaluation.nope_inputs(con, list(run_ids))
    scored = scored.complete()
    row = scored.correct.mean(axis=0, keepdims=True) if len(scored.runs) else np.empty((0, len(items)))
    return items, pairs, scored, row, run_ids


@reads(DATA)
def report_for(con: duckdb.DuckDBPyConnection, choice: str) -> dict:
    """The paper's analyses: Figure 2, Table 2, Figure 3, Table 3 (from the crowd, run-independent)
    and, for `choice` only, Figure 5, Table 4 (beside the paper's values), majority-N accuracy,
    calibration and its curve. `note` says when a member run lacks predictions."""
    items, pairs, scored, row, run_ids = _scored(con, choice)
    report = {
        FIGURE2: nope.label_distribution(items),
        TABLE2: nope.negation_change(items, pairs),
        FIGURE3: nope.rating_spread(items),
        TABLE3: nope.agreement(items),
        "runs": pd.DataFrame({"run": list(scored.runs["run_id"])}),
        "note": _note(run_ids, scored),
    }
    if not len(scored.runs):
        return report
    names = [choice]
    report[FIGURE5] = nope.accuracy_by_trigger(items, row, names)
    report[TABLE4] = beside_paper(nope.projection_subsets(items, pairs, row, names))
    report[MAJORITY_N] = nope.accuracy_on_label(items, row, names, "N")
    report[CALIBRATION] = _calibration(items, scored, choice)
    report[CURVE] = calibration_curve(
        items, np.nanmean(scored.probs, axis=0) if len(scored.runs) > 1 else scored.probs[0]
    )
    return report


def _note(run_ids: tuple[str, ...], scored: evaluation.Scored) -> str:
    missing = sorted(set(run_ids) - set(scored.runs["run_id"]))
    if not missing:
        return ""
    return (
        f"{len(missing)} of {len(run_ids)} runs did not predict every NOPE item and are left out of these "
        f"analyses: {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}. Re-run them on every NOPE item."
    )


def beside_paper(table4: pd.DataFrame) -> pd.DataFrame:
    """Table 4 rows (subset, polarity) with ours in % (CI, n) and the paper's RoBERTa/DeBERTa values."""
    frame = table4.assign(
        ours=(100 * table4["value"]).round(1), low=(100 * table4["low"]).round(1), high=(100 * table4["high"]).round(1)
    )
    paper = {name: dict(zip(TABLE4_CELLS, values)) for name, values in PAPER_TABLE4.items()}
    for name, cells in paper.items():
        frame[f"paper {name}"] = [cells.get((s, p)) for s, p in zip(frame["subset"], frame["polarity"])]
    return frame[["run", "subset", "polarity", "ours", "low", "high", "n", *[f"paper {n}" for n in paper]]]


def _calibration(items: pd.DataFrame, scored: evaluation.Scored, choice: str) -> pd.DataFrame:
    per_run = nope.calibration(items, scored.probs, list(scored.runs["run_id"]))
    if len(scored.runs) < 2:
        return per_run
    mean = nope.calibration(items, np.nanmean(scored.probs, axis=0)[None], [f"{choice}: mean probabilities"])
    return pd.concat([mean, per_run], ignore_index=True)


def calibration_curve(items: pd.DataFrame, probs: np.ndarray) -> pd.DataFrame:
    """Per split and label: items grouped by the crowd's share of that label (0, .2, ..., 1 with five
    raters) → mean model probability of the label and n. A calibrated model follows the diagonal."""
    crowd = nope.crowd_distribution(items)
    ok = ~np.isnan(probs).any(axis=1)
    frames = []
    for split in ("main", "adv"):
        keep = ok & (items["split"] == split).to_numpy()
        for k, label in enumerate(nope.LABELS):
            frame = pd.DataFrame({"crowd share": crowd[keep, k].round(2), "p": probs[keep, k]})
            table = frame.groupby("crowd share")["p"].agg(["mean", "size"]).reset_index()
            frames.append(
                table.rename(columns={"mean": "model probability", "size": "n"}).assign(split=split, label=label)
            )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _items(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    items = queries.examples_frame(con, "nope").join(queries.crowd_votes(con, "nope"))
    return items.assign(crowd=items["crowd_labels"].map(lambda ls: " ".join(ls) if ls is not None else ""))


COLUMNS = ["example_id", "split", "trigger_type", "polarity", "gold_label", "crowd", "input", "hypothesis"]


@reads(DATA)
def examples_in(con: duckdb.DuckDBPyConnection, figure: str, choice: str | None = None, **cell) -> pd.DataFrame:
    """The NOPE items behind one bar or cell of `figure` (see CELLS for the keys each needs):
    figure2 trigger_type × polarity [× gold_label]; figure3 trigger_type × polarity (with rating SD);
    table2 trigger_type × change (both members of those pairs); figure5 split × trigger_type and
    table4 subset × polarity and majority_n (with the choice's prediction and correctness)."""
    if figure not in CELLS:
        raise ValueError(f"unknown figure {figure!r}; allowed: {', '.join(CELLS)}")
    absent = [k for k in CELLS[figure] if cell.get(k) in (None, "")]
    if absent:
        raise ValueError(f"{figure} needs {', '.join(absent)} to pick a cell")
    items = _items(con)
    frame = PICKERS[figure](con, items, cell)
    if figure in ("figure5", "table4", "majority_n"):
        if not choice:
            raise ValueError(f"{figure} lists a run's predictions: pass choice (a run or group name)")
        frame = _with_predictions(con, frame, choice)
    return frame.reset_index(drop=True)


def _main_cell(items: pd.DataFrame, cell: dict) -> pd.DataFrame:
    main = items[
        (items["split"] == "main")
        & (items["trigger_type"] == cell["trigger_type"])
        & (items["polarity"] == cell["polarity"])
    ]
    return main[main["gold_label"] == cell["gold_label"]] if cell.get("gold_label") else main


def _figure2(con, items: pd.DataFrame, cell: dict) -> pd.DataFrame:
    return _main_cell(items, cell).reset_index()[COLUMNS]


def _figure3(con, items: pd.DataFrame, cell: dict) -> pd.DataFrame:
    chosen = _main_cell(items, {**cell, "gold_label": None}).reset_index()
    sd = chosen["crowd_ratings"].map(
        lambda r: round(float(np.std(r, ddof=1)), 1) if r is not None and len(r) > 1 else None
    )
    ratings = chosen["crowd_ratings"].map(lambda r: " ".join(f"{v:g}" for v in r) if r is not None else "")
    return chosen.assign(ratings=ratings, **{"rating SD": sd})[COLUMNS + ["ratings", "rating SD"]].sort_values(
        "rating SD", ascending=False
    )


def _pair_members(items: pd.DataFrame, pairs: pd.DataFrame, which: tuple[str, ...]) -> pd.DataFrame:
    frames = [
        items.loc[pairs[f"example_{m}"]].reset_index().assign(pair_id=pairs["pair_id"].to_numpy(), member=m)
        for m in which
    ]
    frame = pd.concat(frames).sort_values(["pair_id", "member"])
    return frame[["pair_id", "member"] + COLUMNS]


def _main_pairs(con, items: pd.DataFrame) -> pd.DataFrame:
    pairs = queries.pairs_frame(con, "nope", "negation")
    pairs = pairs[pairs["example_a"].map(items["split"]) == "main"].reset_index(drop=True)
    gold = items["gold_label"]
    return pairs.assign(
        before=pairs["example_a"].map(gold).to_numpy(),
        after=pairs["example_b"].map(gold).to_numpy(),
        trigger_type=pairs["example_a"].map(items["trigger_type"]).to_numpy(),
    )


def _table2(con, items: pd.DataFrame, cell: dict) -> pd.DataFrame:
    pairs = _main_pairs(con, items)
    change = np.array([nope.change_kind(a, b) for a, b in zip(pairs["before"], pairs["after"])], dtype=object)
    keep = (change == cell["change"]) & (
        (pairs["trigger_type"] == cell["trigger_type"]) | (cell["trigger_type"] == "all")
    )
    return _pair_members(items, pairs[keep], ("a", "b"))


def _table4(con, items: pd.DataFrame, cell: dict) -> pd.DataFrame:
    pairs = _main_pairs(con, items)
    subset = np.array([nope.projection_subset(a, b) for a, b in zip(pairs["before"], pairs["after"])], dtype=object)
    member = "a" if cell["polarity"] == "non-negated" else "b"
    return _pair_members(items, pairs[subset == cell["subset"]], (member,))


def _figure5(con, items: pd.DataFrame, cell: dict) -> pd.DataFrame:
    chosen = items[items["split"] == cell["split"]]
    if cell["trigger_type"] != "all":
        chosen = chosen[chosen["trigger_type"] == cell["trigger_type"]]
    return chosen.reset_index()[COLUMNS]


def _majority_n(con, items: pd.DataFrame, cell: dict) -> pd.DataFrame:
    return items[(items["split"] == "main") & (items["gold_label"] == "N")].reset_index()[COLUMNS]


PICKERS = {
    "figure2": _figure2,
    "figure3": _figure3,
    "table2": _table2,
    "figure5": _figure5,
    "table4": _table4,
    "majority_n": _majority_n,
}


def _with_predictions(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame, choice: str) -> pd.DataFrame:
    """Add `predicted` (the run's label, or the seeds' labels) and `correct` (1/0, or share of seeds)."""
    items, _, scored, row, _ = _scored(con, choice)
    if not len(scored.runs):
        return frame.assign(predicted=None, correct=np.nan)
    position = pd.Series(np.arange(len(items)), index=items.index)[frame["example_id"]].to_numpy()
    labels = scored.labels[:, position]
    predicted = [" ".join(str(x) for x in column) for column in labels.T]
    return frame.assign(predicted=predicted, correct=row[0, position])
