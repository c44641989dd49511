"""The leaderboard: one headline metric per dataset × run, with its split, n and 95% CI (the Overview, the verdicts,
the model cards, `evaluate`).

Each dataset's description (`backend.datasets.description`) names its headline splits and metric; built in:

| dataset | task | headline |
|---|---|---|
| NOPE | nli | accuracy on main (and on adversarial) |
| FalseQA, CREPE, Syn-(QA)² | detect | macro-F1 (FP/N) on the evaluation split (test; CREPE dev when loaded) |
| IfQA | qa | exact match (SQuAD normalisation, best over answers) on S-dev |
| IfQA | retrieve | Recall@20 of the gold passage on S-dev |

A run of another task than its dataset's is scored by its own task's metric on the dataset's headline splits: a QA
run by exact match; a writing run by unigram F1 (CREPE's writing metric, best over the gold references) of its
presupposition and its correction, averaged per item over the parts that have gold (a correction without gold
corrections is scored against the gold answers, FalseQA's explanation of the false premise, as Side by side scores
it), over the false-premise items (those of the dataset's positive label, as in CREPE) that have gold; the
metric's name says which parts were scored.

A user dataset is scored the same way on the headline splits it declared. Paper-reported runs
(source `import`) and your imports (source `user`) are marked; baselines sit beside models.

Each run's rows are cached in `run_metrics` under a fingerprint of what they depend on (its
predictions' count and a hash of their ids, labels, answers and texts; its config and source; the
dataset's description): only a new or changed run is scored again, so the Overview stays fast with
thousands of runs and millions of predictions (BENCHMARKS.md, "10 million predictions"). Whether a
run is contaminated is decided afresh each time (it depends on other runs' models).
"""

from __future__ import annotations

import json
import logging

import duckdb
import numpy as np
import pandas as pd

from backend.datasets import catalogue
from backend.datasets.description import Description
from backend.metrics import classification, generation, retrieval, squad
from backend.metrics.bootstrap import (
    Estimate,
    mean,
)
from backend.models import contamination
from backend.store import queries, run_metrics
from backend.store import runs as store_runs

log = logging.getLogger(__name__)


def _cache(con: duckdb.DuckDBPyConnection, rows: dict[str, list[dict]], fingerprints: dict[str, str]) -> None:
    """Store the new rows and forget runs that are gone; a read-only connection just does not cache."""
    try:
        run_metrics.replace(con, {run: json.dumps(found, default=_plain) for run, found in rows.items()}, fingerprints)
    except duckdb.Error as exc:  # e.g. a read-only connection (a benchmark, an old store being read)
        log.info("run_metrics not cached: %s", exc)


def _plain(value):
    """numpy scalars as Python numbers for JSON."""
    return value.item() if hasattr(value, "item") else str(value)


def _scored(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> dict[str, list[dict]]:
    """run id → its headline rows (one per headline split), computed from its predictions."""
    frame, described = run_metrics.scored_predictions(con, run_ids), catalogue.described(con)
    found: dict[str, list[dict]] = {run: [] for run in run_ids}
    for (dataset, run_id, split), group in frame.groupby(["dataset_id", "run_id", "split"], sort=True):
        task, description = group["task"].iloc[0], described.get(dataset)
        if description is None or split not in description.headline_splits or task not in METRICS:
            continue
        metric, estimate = METRICS[task](group, description)
        found[run_id].append(
            {
                "dataset": dataset,
                "run": run_id,
                "model": group["model_id"].iloc[0],
                "kind": queries.SOURCE_NAMES.get(group["source"].iloc[0], group["source"].iloc[0]),
                "metric": metric,
                "split": split,
                **estimate.as_dict(),
                "bias": _bias(group) if task in store_runs.CLASSIFICATION_TASKS else "",
                "unparsed": _unparsed(group),
                "cost": float(group["cost"].sum()) if group["cost"].notna().any() else None,
            }
        )
    return found


CLASSIFICATION_METRICS = ("accuracy", "macro-F1")  # the headline metrics `_classification` gives


def _classification(group: pd.DataFrame, description: Description) -> tuple[str, Estimate]:
    if description.headline_metric == "accuracy":
        return "accuracy", classification.accuracy(group["gold_label"], group["label"])
    return "macro-F1", classification.macro_f1(group["gold_label"], group["label"], list(group["labels"].iloc[0]))


def _qa(group: pd.DataFrame, description: Description) -> tuple[str, Estimate]:
    scores = [squad.exact_match(a, list(g)) for a, g in zip(group["answer"], group["gold_answers"])]
    return "exact match", mean(np.array(scores))


def _writing(group: pd.DataFrame, description: Description) -> tuple[str, Estimate]:
    """Unigram F1 of the written presupposition and correction, averaged per item over the parts with gold (see
    the module's docstring), on the items a writing run writes for (`_written_for`); those without gold are left
    out of n."""
    group = group[_written_for(group["gold_label"], description)]
    written = [json.loads(t) if t else {} for t in group["text"]]
    golds = {part: [_texts(g) for g in group[f"gold_{part}s"]] for part in WRITTEN}
    golds["correction"] = [c or _texts(a) for c, a in zip(golds["correction"], group["gold_answers"])]
    scores = np.vstack(
        [generation.unigram_f1([str(w.get(part) or "") for w in written], golds[part]) for part in WRITTEN]
    )  # parts × items, NaN where a part has no gold
    parts = [part for part, row in zip(WRITTEN, scores) if not np.isnan(row).all()]
    scored = ~np.isnan(scores).all(axis=0)
    per_item = np.nanmean(scores[:, scored], axis=0) if scored.any() else np.array([])
    return f"{WRITING} ({' and '.join(parts) or 'no gold'})", mean(per_item)


def _written_for(gold: pd.Series, description: Description) -> pd.Series:
    """Which items a writing run is scored on: those with a false premise (the dataset's positive label, FP) when
    the dataset labels them, as in CREPE; every item otherwise."""
    labelled = description.positive is not None and gold.notna().any()
    return gold == description.positive if labelled else pd.Series(True, index=gold.index)


def _texts(value) -> list[str]:
    return [str(t) for t in value] if isinstance(value, (list, tuple, np.ndarray)) else []  # None, NaN, NA: none


def _retrieval(group: pd.DataFrame, description: Description) -> tuple[str, Estimate]:
    """Recall@20 over the questions that have a gold passage (as the Retrieval page and `index` count them)."""
    texts = [json.loads(t) if t else {} for t in group["text"]]
    ranks = [t.get("first_gold_rank") for t in texts if t.get("n_gold", 1) > 0]
    return "Recall@20", retrieval.recall_at_k(ranks, 20)


def _unparsed(group: pd.DataFrame) -> int | None:
    """How many of a prompted run's responses gave no answer (unparsed, refused, empty, failed): counted
    wrong in its metric; None for runs that are not prompted."""
    statuses = group["parse"].dropna()
    return int((statuses != "ok").sum()) if len(statuses) else None


def _bias(group: pd.DataFrame) -> str:
    """'N for 99.6% (gold 50.0%)' when the run gives one label to almost everything, else ''."""
    scored = group[group["gold_label"].notna()]
    skew = classification.dominant_label(
        classification.response_bias(scored["gold_label"], scored["label"], list(group["labels"].iloc[0]))
    )
    return f"{skew['label']} for {skew['predicted_share']:.1%} (gold {skew['gold_share']:.1%})" if skew else ""


METRICS = {"nli": _classification, "detect": _classification, "qa": _qa, "write": _writing, "retrieve": _retrieval}
WRITING, WRITTEN = "unigram F1", ("presupposition", "correction")
VERSION = "3"  # of the scoring: cached rows of another version are scored again (2: writing runs scored; 3: Wilson
# intervals for proportions, none below 10 items for other figures)


def headline(con: duckdb.DuckDBPyConnection, dataset: str | None = None) -> pd.DataFrame:
    """dataset, run, model, kind (paper-reported | baseline | model run), metric, split, value, low, high, n,
    bias (for a classifier that gives one label to almost every item, which and how often), unparsed (a
    prompted run's responses that gave no answer, of n: counted wrong in its value; '' for other runs), cost
    (what a prompted run's requests for these items cost at its endpoint's prices, cached answers free) and
    contaminated (why, when the run's model was trained on this dataset: `backend.models.contamination`) and part
    ('40 of 2,386 items' for a run over part of the split, e.g. a `--limit` run: its value is not comparable with
    the runs over every item; '' for those). One dataset's rows only when `dataset` is given."""
    fingerprints = {run: f"{VERSION}:{found}" for run, found in run_metrics.fingerprints(con).items()}
    cached = {run: (fingerprint, json.loads(rows)) for run, (fingerprint, rows) in run_metrics.cached(con).items()}
    stale = [run for run, fingerprint in fingerprints.items() if cached.get(run, (None,))[0] != fingerprint]
    new = _scored(con, stale) if stale else {}
    if new or set(cached) - set(fingerprints):
        _cache(con, new, fingerprints)
    rows = [row for run in fingerprints for row in (new[run] if run in new else cached[run][1])]
    rows = [row for row in rows if dataset is None or row["dataset"] == dataset]
    columns = [
        "dataset",
        "run",
        "model",
        "kind",
        "metric",
        "split",
        "value",
        "low",
        "high",
        "n",
        "bias",
        "unparsed",
        "cost",
        "contaminated",
    ]
    frame = pd.DataFrame(rows, columns=columns[:-1])
    frame["unparsed"] = [
        f"{int(u):,} ({u / n:.1%})" if pd.notna(u) else "" for u, n in zip(frame["unparsed"], frame["n"])
    ]
    frame["cost"] = [f"${c:,.4f}" if pd.notna(c) else "" for c in frame["cost"]]
    flagged = {d: contamination.flags(con, d) for d in frame["dataset"].unique()}
    frame["contaminated"] = [flagged[d].get(r, "") for d, r in zip(frame["dataset"], frame["run"])]
    counts = queries.split_label_counts(con)
    items = counts.groupby(["dataset_id", "split"])["n"].sum()
    described = catalogue.described(con)
    positive = {  # the items a writing run writes for, per dataset and split
        (d, s): int(group["n"][_written_for(group["gold_label"].replace("—", None), described[d])].sum())
        for (d, s), group in counts[counts["dataset_id"].isin(described)].groupby(["dataset_id", "split"])
    }
    whole = frame.groupby(["dataset", "split", "metric"])["n"].transform("max")  # Recall@20: questions with gold
    every = [
        positive.get((d, s), 0) if m.startswith(WRITING) else 0 if m == "Recall@20" else items.get((d, s), 0)
        for d, s, m in zip(frame.dataset, frame.split, frame.metric)
    ]
    whole = np.maximum(whole, every)  # every other metric scores every item of the split
    frame["part"] = np.where(frame["n"] < whole, [f"{n:,} of {w:,} items" for n, w in zip(frame["n"], whole)], "")
    order = [  # the dataset's headline split first (NOPE's main before adv), as its description lists them
        list(described[d].headline_splits).index(s) if d in described and s in described[d].headline_splits else 99
        for d, s in zip(frame["dataset"], frame["split"])
    ]
    frame = frame.assign(order=order).sort_values(  # ties by run id: the same order on every call
        ["dataset", "order", "split", "value", "run"], ascending=[True, True, True, False, True]
    )
    return frame.drop(columns="order")


def missing_datasets(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Built-in datasets that are not in the store, with how to add each."""
    return pd.DataFrame(catalogue.missing(con), columns=["dataset_id", "title", "how_to_add"])
