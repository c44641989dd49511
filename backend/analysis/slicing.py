"""Slicing a dataset by facets, runs, correctness and text (Explore, the Map, the Slice finder, saved slices, the
notebook API): what a dataset can be sliced by, the runs to slice with, and a slice's scores.

A slice is a `Slice` value and one parameterised query (`backend.store.examples`); this module scores it into a
`SliceSummary` (accuracy, macro-F1, confusion, response bias, and run B against run A as a `Comparison`).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field, fields

import duckdb
import numpy as np
import pandas as pd
from threadpoolctl import ThreadpoolController

from backend.datasets.catalogue import UnknownDataset, describe
from backend.datasets.description import Description
from backend.metrics import classification
from backend.metrics.bootstrap import (
    LARGE_N,
    paired_difference,
)
from backend.metrics.pairs import mcnemar
from backend.models import contamination
from backend.store import examples as store_examples
from backend.store import runs as store_runs
from backend.store.examples import BOOLEAN_FACETS, Slice

_BLAS = ThreadpoolController()  # found once, so limiting per call costs nothing
_BLAS_LOCK = threading.Lock()


def url_value(facet: str, value) -> str:
    """A facet value as Explore's URL writes it (its multiselect shows booleans as yes / no)."""
    if facet in BOOLEAN_FACETS:
        return {"true": "yes", "false": "no"}.get(str(value).lower(), str(value))
    return str(value)


def _description(con: duckdb.DuckDBPyConnection, dataset_id: str) -> Description | None:
    try:
        return describe(con, dataset_id)
    except UnknownDataset:
        return None


def headline_split(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str | None:
    """The split a dataset's paper reports first (its description's first headline split), shown by default: main
    and adversarial items (NOPE) are reported apart, not pooled. None for a dataset without a description."""
    return _first_headline(_description(con, dataset_id))


def _first_headline(description: Description | None) -> str | None:
    splits = description.headline_splits if description else ()
    return splits[0] if splits else None


@dataclass(frozen=True)
class Facets:
    """What a dataset can be sliced by: each facet's values (`facet_values`) and the split shown by default
    (`headline_split`), read together."""

    values: dict[str, list]
    headline_split: str | None


def facets(con: duckdb.DuckDBPyConnection, dataset_id: str) -> Facets:
    """The dataset's `Facets` (its description read once for both)."""
    description = _description(con, dataset_id)
    extra = description.facets if description else ()
    return Facets(store_examples.facet_values(con, dataset_id, extra), _first_headline(description))


def split_param(con: duckdb.DuckDBPyConnection, dataset_id: str, chosen: tuple = ()) -> dict:
    """Explore's `split` URL parameter for these splits, spelled out ("split=" for every split, pooled) on a dataset
    with several splits, where a link without it means the headline split; {} on a dataset with one."""
    if len(facet_values(con, dataset_id).get("split", [])) < 2:
        return {}
    return {"split": list(chosen) or [""]}


def facet_values(con: duckdb.DuckDBPyConnection, dataset_id: str) -> dict[str, list]:
    """Facet → its sorted distinct non-null values, for the facets the dataset uses: the typed columns,
    then the `extra` keys its description names (a user dataset's categorical columns), as 'extra.KEY'."""
    return facets(con, dataset_id).values


def runs_for(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Complete runs of the dataset that stored predictions: classification runs first (baselines
    last among them), then QA, writing and retrieval runs; with each run's label order ([] if none) and
    why it is contaminated ('' if not)."""
    listed = store_runs.listing(con, dataset_id, with_predictions=True, with_training=True, order="classifiers first")
    flagged = contamination.flags_of(dataset_id, listed)  # one query: the listing carries what the flags read
    frame = listed[["run_id", "model_id", "source", "task", "labels", "predictions", "parsed"]]
    return frame.assign(contaminated=[flagged.get(r, "") for r in frame["run_id"]])


def _objects(column: np.ndarray) -> np.ndarray:
    """A fetched (possibly masked) column as an object array with None for NULL."""
    return np.where(np.ma.getmaskarray(column), None, np.ma.getdata(column)).astype(object)


@dataclass(frozen=True)
class Comparison:
    """Run B against run A on the `n` items both labelled: each one's accuracy (Estimates), B − A with its paired
    bootstrap CI and p (`difference`), McNemar's p, and the gold, A and B label shares over those items."""

    n: int
    accuracy_a: object
    accuracy_b: object
    difference: object
    mcnemar_p: float
    shares: pd.DataFrame


@dataclass(frozen=True)
class SliceSummary:
    """What Explore shows over a whole slice: n items, `scored` (those with a gold label and a run A), run A's label
    order, accuracy and macro-F1 (Estimates: value, 95% bootstrap CI, n), the confusion matrix (gold × predicted),
    the response bias (label shares, gold vs predicted), `compare` (run B against run A: their difference with its
    CI and McNemar's test; None without a run B) and `unlabelled` (items run A gave no label: an unparsed, refused
    or empty response, or an error; counted wrong). None where undefined."""

    n: int
    scored: int = 0
    labels: list[str] = field(default_factory=list)
    accuracy: object = None
    macro_f1: object = None
    confusion: pd.DataFrame | None = None
    bias: pd.DataFrame | None = None
    compare: Comparison | None = None
    unlabelled: int = 0

    def as_dict(self) -> dict:
        """The fields by name (`compare` too), as the notebook API has always returned them."""
        found = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.compare is not None:
            found["compare"] = {f.name: getattr(self.compare, f.name) for f in fields(self.compare)}
        return found


def slice_summary(con: duckdb.DuckDBPyConnection, where: Slice, labels: tuple[str, ...] | None = None) -> SliceSummary:
    """The slice scored for run A (and run B against it): see `SliceSummary`. `labels`: run A's label order when
    the caller has it (Explore's run picker does), else read from the store."""
    if labels is None:
        labels = tuple(store_runs.labels(con, where.run_a)) if where.run_a else ()
    labels = list(labels)
    cells = store_examples.slice_cells(con, where)
    if cells["n"].sum() > LARGE_N:  # a large slice: every metric from its (gold, A, B) cells, not per item
        return _summary_of_cells(cells, labels, bool(where.run_b))
    columns = store_examples.slice_labels(con, where)
    gold, pred = _objects(columns["gold_label"]), _objects(columns["label_a"])
    summary = SliceSummary(n=len(gold), labels=labels)
    scored = ~np.ma.getmaskarray(columns["gold_label"])
    if not labels or not scored.any():
        return summary
    gold, pred = gold[scored], pred[scored]
    with _one_blas_thread():
        accuracy, macro_f1 = classification.accuracy(gold, pred), classification.macro_f1(gold, pred, labels)
        compare = _compare(gold, pred, _objects(columns["label_b"])[scored], labels) if where.run_b else None
    return SliceSummary(
        n=summary.n,
        scored=int(scored.sum()),
        labels=labels,
        accuracy=accuracy,
        macro_f1=macro_f1,
        confusion=classification.confusion(list(gold), list(pred), labels),
        bias=classification.response_bias(gold, pred, labels),
        compare=compare,
        unlabelled=int(sum(p is None for p in pred)),
    )


def _summary_of_cells(cells: pd.DataFrame, labels: list[str], with_b: bool) -> SliceSummary:
    """`slice_summary` from counts per (gold, A, B) label cell: the same numbers, and bootstrap resamples
    drawn over the cells (the same distribution as over items), so a million-item slice costs no more
    than a small one."""
    cells = cells.astype(object).where(cells.notna(), None).assign(n=cells["n"].astype(int))
    summary = SliceSummary(n=int(cells["n"].sum()), labels=labels)
    scored = cells[cells["gold_label"].notna()]
    if not labels or scored.empty:
        return summary
    gold, pred, counts = scored["gold_label"].to_numpy(), scored["label_a"].to_numpy(), scored["n"].to_numpy()
    compare = None
    if with_b:  # the paired comparison wants items: expand the cells (their order does not matter for it)
        repeat = lambda column: np.repeat(scored[column].to_numpy(), counts)  # noqa: E731
        compare = _compare(repeat("gold_label"), repeat("label_a"), repeat("label_b"), labels)
    return SliceSummary(
        n=summary.n,
        scored=int(counts.sum()),
        labels=labels,
        accuracy=classification.accuracy(gold, pred, counts=counts),
        macro_f1=classification.macro_f1(gold, pred, labels, counts=counts),
        confusion=classification.confusion(list(gold), list(pred), labels, counts=counts),
        bias=classification.response_bias(gold, pred, labels, counts=counts),
        compare=compare,
        unlabelled=int(counts[pd.isna(pred)].sum()),
    )


def _compare(gold: np.ndarray, pred_a: np.ndarray, pred_b: np.ndarray, labels: list[str]) -> Comparison | None:
    """Run B against run A on the items both labelled: accuracies, B − A (paired bootstrap CI and p), McNemar p,
    and the gold, A and B label shares over those same items (`shares`)."""
    both = np.array([label is not None for label in pred_b], dtype=bool)
    if not both.any():
        return None
    gold, pred_a, pred_b = gold[both], pred_a[both], pred_b[both]
    a, b = classification.correct(gold, pred_a), classification.correct(gold, pred_b)
    shares = classification.response_bias(gold, pred_a, labels).rename(
        columns={"gold_share": "gold", "predicted_share": "run A"}
    )
    shares["run B"] = classification.response_bias(gold, pred_b, labels)["predicted_share"]
    return Comparison(
        n=int(both.sum()),
        accuracy_a=classification.accuracy(gold, pred_a),
        accuracy_b=classification.accuracy(gold, pred_b),
        difference=paired_difference(b, a),
        mcnemar_p=mcnemar(a, b),
        shares=shares,
    )


@contextmanager
def _one_blas_thread():
    """The bootstrap's products are small (3 × n by n × 1,000): one BLAS thread runs them fastest, and
    a thread pool on a busy 2-core machine (or under many Streamlit sessions) runs them ~8× slower.
    The limit is process-wide, so sessions take turns (a few ms each): overlapping limits would
    restore the wrong thread count and leave every later BLAS call single-threaded."""
    with _BLAS_LOCK, _BLAS.limit(limits=1, user_api="blas"):
        yield
