"""The NOPE paper's analyses (Parrish et al., CoNLL 2021), computed from the store's frames.

Inputs are plain frames:
- `items`: one row per example, indexed by example_id, with split (main | adv), gold_label,
  trigger_type, polarity, crowd_labels (5 E/N/C) and crowd_ratings (5 values 0-100);
- `pairs`: negation pairs of the main corpus (example_a non-negated, example_b negated);
- a correctness matrix `scores` (rows: runs or run groups, columns: items in `items` order), values
  in [0, 1]; a run group (e.g. RoBERTa over 5 seeds) is the mean of its runs' rows, so its accuracy
  is the mean accuracy over seeds, as in the paper's tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from backend.metrics.bootstrap import means

LABELS = ["E", "N", "C"]
HARD_TRIGGERS = {"clefts", "numeric_determiners"}
SUBSETS = ("E→E", "E→{N,C}", "{N,C}→E")


def label_distribution(items: pd.DataFrame) -> pd.DataFrame:
    """Figure 2: gold-label counts and shares per trigger × polarity, with n (main corpus)."""
    main = items[items["split"] == "main"]
    table = pd.crosstab([main["trigger_type"], main["polarity"]], main["gold_label"]).reindex(
        columns=LABELS, fill_value=0
    )
    table["n"] = table.sum(axis=1)
    for label in LABELS:
        table[f"{label} %"] = 100 * table[label] / table["n"]
    return table.reset_index()


def change_kind(before: str, after: str) -> str:
    """Table 2's categories, direction non-negated → negated.

    >>> [change_kind("E", "E"), change_kind("E", "C"), change_kind("N", "E"), change_kind("N", "C")]
    ['no change', 'E→{N,C}', '{N,C}→E', 'other']
    """
    if before == after:
        return "no change"
    if before == "E":
        return "E→{N,C}"
    return "{N,C}→E" if after == "E" else "other"


def negation_change(items: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """Table 2: per trigger, the share of negation pairs in each label-change category (and n)."""
    frame = pd.DataFrame(
        {
            "trigger_type": items.loc[pairs["example_a"], "trigger_type"].to_numpy(),
            "change": [
                change_kind(a, b)
                for a, b in zip(
                    items.loc[pairs["example_a"], "gold_label"], items.loc[pairs["example_b"], "gold_label"]
                )
            ],
        }
    )
    kinds = ["no change", "E→{N,C}", "{N,C}→E", "other"]
    table = pd.crosstab(frame["trigger_type"], frame["change"], margins=True, margins_name="all").reindex(
        columns=kinds + ["all"], fill_value=0
    )
    shares = 100 * table[kinds].div(table["all"], axis=0)
    return shares.assign(n=table["all"]).reset_index()


def rating_spread(items: pd.DataFrame, ddof: int = 1) -> pd.DataFrame:
    """Figure 3: mean over items of the standard deviation of the five ratings, per trigger × polarity."""
    main = items[items["split"] == "main"]
    sd = main["crowd_ratings"].map(lambda r: float(np.std(r, ddof=ddof)))
    return main.assign(sd=sd).groupby(["trigger_type", "polarity"])["sd"].agg(mean_sd="mean", n="size").reset_index()


def agreement(items: pd.DataFrame) -> pd.DataFrame:
    """Table 3: share of unanimous items and of individual labels equal to the item's majority label."""
    rows = []
    for split, group in items.groupby("split", sort=False):
        labels = group["crowd_labels"]
        rows.append(
            {
                "split": split,
                "unanimous %": 100 * float(labels.map(lambda ls: len(set(ls)) == 1).mean()),
                "individual = majority %": 100
                * float(np.mean([label == g for ls, g in zip(labels, group["gold_label"]) for label in ls])),
                "items": len(group),
            }
        )
    return pd.DataFrame(rows)


def _estimates(scores: np.ndarray, columns: np.ndarray, names: list[str], **keys) -> list[dict]:
    return [{"run": name, **keys, **est.as_dict()} for name, est in zip(names, means(scores[:, columns]))]


ESTIMATE = ["value", "low", "high", "n"]


def _table(rows: list[dict], *keys: str) -> pd.DataFrame:
    """The rows with their columns also when there are none (no complete run: issue 64, item 1)."""
    return pd.DataFrame(rows, columns=["run", *keys, *ESTIMATE])


def accuracy_by_trigger(items: pd.DataFrame, scores: np.ndarray, names: list[str]) -> pd.DataFrame:
    """Figure 5: accuracy per trigger on main and adversarial, per run (with 95% CI and n)."""
    rows = []
    for (split, trigger), positions in items.reset_index().groupby(["split", "trigger_type"]).indices.items():
        rows += _estimates(scores, positions, names, split=split, trigger_type=trigger)
    for split, positions in items.reset_index().groupby("split").indices.items():
        rows += _estimates(scores, positions, names, split=split, trigger_type="all")
    return _table(rows, "split", "trigger_type")


def projection_subset(before: str, after: str) -> str:
    """Table 4's subsets of negation pairs: E→E, E→{N,C}, {N,C}→E, or 'other'.

    >>> [projection_subset(*pair) for pair in (("E", "E"), ("E", "N"), ("C", "E"), ("N", "N"))]
    ['E→E', 'E→{N,C}', '{N,C}→E', 'other']
    """
    if before == "E":
        return "E→E" if after == "E" else "E→{N,C}"
    return "{N,C}→E" if after == "E" else "other"


def projection_subsets(items: pd.DataFrame, pairs: pd.DataFrame, scores: np.ndarray, names: list[str]) -> pd.DataFrame:
    """Table 4: accuracy on the non-negated and negated members of pairs in each projection subset."""
    position = pd.Series(np.arange(len(items)), index=items.index)
    kind = np.array(
        [
            projection_subset(a, b)
            for a, b in zip(items.loc[pairs["example_a"], "gold_label"], items.loc[pairs["example_b"], "gold_label"])
        ]
    )
    rows = []
    for subset in SUBSETS:
        chosen = pairs[kind == subset]
        rows += _estimates(
            scores, position[chosen["example_a"]].to_numpy(), names, subset=subset, polarity="non-negated"
        )
        rows += _estimates(scores, position[chosen["example_b"]].to_numpy(), names, subset=subset, polarity="negated")
    return _table(rows, "subset", "polarity")


def accuracy_on_label(items: pd.DataFrame, scores: np.ndarray, names: list[str], label: str = "N") -> pd.DataFrame:
    """Accuracy on main-corpus items whose majority label is `label` (the paper discusses N)."""
    positions = np.flatnonzero((items["split"] == "main").to_numpy() & (items["gold_label"] == label).to_numpy())
    return _table(_estimates(scores, positions, names, gold_label=label), "gold_label")


def crowd_distribution(items: pd.DataFrame) -> np.ndarray:
    """items × 3 shares of E/N/C among the five crowd labels."""
    return np.array([[np.mean(np.asarray(ls) == label) for label in LABELS] for ls in items["crowd_labels"]])


def jensen_shannon(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Per-row Jensen–Shannon divergence in bits (0 = identical, 1 = disjoint; Lin 1991).

    >>> jensen_shannon(np.array([[1.0, 0, 0]]), np.array([[0, 1.0, 0]])).round(6).tolist()
    [1.0]
    """
    m = (p + q) / 2

    def kl(a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 0, a * np.log2(a / b), 0.0).sum(axis=-1)

    return 0.5 * kl(p, m) + 0.5 * kl(q, m)


def expected_calibration_error(probs: np.ndarray, gold: np.ndarray, bins: int = 10) -> float:
    """ECE of the top-label confidence against the gold label, equal-width bins (Guo et al. 2017).

    >>> round(expected_calibration_error(np.array([[0.9, 0.1, 0.0], [0.6, 0.4, 0.0]]), np.array([0, 1])), 6)
    0.35
    """
    confidence, predicted = probs.max(axis=1), probs.argmax(axis=1)
    right = (predicted == gold).astype(float)
    which = np.minimum((confidence * bins).astype(int), bins - 1)
    total = 0.0
    for b in np.unique(which):
        members = which == b
        total += members.sum() * abs(right[members].mean() - confidence[members].mean())
    return float(total / len(gold))


def calibration(items: pd.DataFrame, probs: np.ndarray, names: list[str]) -> pd.DataFrame:
    """Human vs model: mean JSD between crowd label shares and model probabilities, and ECE vs majority.

    `probs` is runs × items × 3 (E, N, C); NaN rows (no prediction, or a run that stored only labels)
    are left out, and a split with none gives no row.
    """
    crowd = crowd_distribution(items)
    gold = items["gold_label"].map(LABELS.index).to_numpy()
    rows = []
    for name, run in zip(names, probs):
        ok = ~np.isnan(run).any(axis=1)
        for split in ("main", "adv"):
            keep = ok & (items["split"] == split).to_numpy()
            if not keep.any():
                continue
            rows.append(
                {
                    "run": name,
                    "split": split,
                    "n": int(keep.sum()),
                    "mean JSD (bits)": float(jensen_shannon(crowd[keep], run[keep]).mean()),
                    "ECE": expected_calibration_error(run[keep], gold[keep]),
                    "model P(E)": float(run[keep, 0].mean()),
                    "crowd share E": float(crowd[keep, 0].mean()),
                }
            )
    return pd.DataFrame(rows)
