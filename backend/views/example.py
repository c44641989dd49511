"""Example: everything the store knows about one example — its row, every run's output (with a prompted
run's prompt and raw response), its pairs, ratings (NOPE's crowd distribution), retrieved and gold passages."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from backend.store import examples as store_examples
from backend.store import judgements as store_judgements
from backend.store import ratings as store_ratings
from backend.store.ids import pasted
from backend.store.sessions import DATA, reads
from backend.studies import collection


def _format_probs(labels, probs) -> str | None:
    sized = (list, tuple, np.ndarray)
    if not isinstance(labels, sized) or not isinstance(probs, sized) or len(labels) != len(probs):
        return None
    return " · ".join(f"{label} {p:.3f}" for label, p in zip(labels, probs))


def _crowd(ratings: pd.DataFrame) -> dict | None:
    """NOPE: the distribution of the crowd's labels (E/N/C) and their 0-100 ratings; None without."""
    crowd = ratings[ratings["source"] == "crowd"]
    labels = crowd.loc[crowd["criterion"] == "nope_label", "label"]
    if labels.empty:
        return None
    counts = labels.value_counts().reindex(["E", "N", "C"], fill_value=0)
    return {
        "labels": counts.rename_axis("label").reset_index(name="n"),
        "ratings": crowd.loc[crowd["criterion"] == "nope_likelihood", "value"].tolist(),
    }


@reads(DATA)
def example_detail(con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str) -> dict:
    """Everything the store knows about one example: the row, every run's output (label, its probability,
    all probabilities, answer, text; for a prompted run the parse status, the prompt sent and the raw
    response), pair partners, ratings (and NOPE's crowd distribution; a study's marked `analysed`: yes, or why its
    participant is left out), judges' scores with their reasons,
    retrieved passages per run and gold passages. The id may be pasted (backend.store.ids)."""
    example_id = pasted(example_id)
    row = store_examples.example_row(con, dataset_id, example_id)
    predictions = store_examples.predictions_of(con, dataset_id, example_id)
    predictions["probabilities"] = [
        _format_probs(ls, ps) for ls, ps in zip(predictions["labels"], predictions["probs"])
    ]
    ratings = store_ratings.of_example(con, dataset_id, example_id)
    study = collection.analysed(con, dataset_id)
    if study is not None:  # a study's answers: whether each counts in its analyses, or why not
        ratings["analysed"] = ratings["rater_id"].map(lambda r: study.excluded_by.get(r, "yes"))
    return {
        "example": row,
        "predictions": predictions.drop(columns=["labels", "probs"]),
        "pairs": store_examples.pairs_of(con, dataset_id, example_id),
        "ratings": ratings,
        "judgements": store_judgements.of_example(con, dataset_id, example_id),
        "crowd": _crowd(ratings),
        "retrievals": store_examples.retrievals_of(con, dataset_id, example_id),
        "qrels": store_examples.qrels_of(con, dataset_id, example_id),
    }
