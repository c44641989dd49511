"""Baseline runs: constants, seeded random, train majority, and nearest neighbour (train or outside the pair)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from backend.datasets import DATASETS, baselines


class WordEmbedder:
    """A tiny deterministic stand-in for MiniLM: normalised bag of words over a fixed vocabulary."""

    def __init__(self, texts: list[str]):
        self.vocab = sorted({w for t in texts for w in t.lower().split()})

    def encode(self, texts: list[str], progress: str | None = None) -> np.ndarray:  # the Embedder interface
        vectors = np.array([[t.lower().split().count(w) for w in self.vocab] for t in texts], dtype=float)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def frame(rows):
    return pd.DataFrame(rows, columns=["example_id", "split", "input", "gold_label"]).set_index("example_id")


def test_trivial_runs_and_train_majority():
    examples = frame(
        [("t1", "train", "q", "FP"), ("t2", "train", "q", "FP"), ("t3", "train", "q", "N"), ("d1", "test", "q", "N")]
    )
    runs, preds = baselines.trivial("falseqa", DATASETS["falseqa"].description, examples)
    preds = preds.to_pylist()
    assert [r["run_id"] for r in runs] == [
        "falseqa/baseline/random",
        "falseqa/baseline/always-FP",
        "falseqa/baseline/always-N",
        "falseqa/baseline/majority",
    ]
    majority = [p["label"] for p in preds if p["run_id"] == "falseqa/baseline/majority"]
    assert majority == ["FP"] * 4 and "FP: 2 of 3" in runs[3]["config"]["rule"]
    again = baselines.trivial("falseqa", DATASETS["falseqa"].description, examples)[1].to_pylist()
    assert [p["label"] for p in again] == [p["label"] for p in preds]  # seeded


def test_nearest_neighbour_uses_train_questions_only():
    examples = frame(
        [
            ("t1", "train", "why is the sky green", "FP"),
            ("t2", "train", "why is the sky blue", "N"),
            ("d1", "test", "why is the grass green", "FP"),
            ("d2", "test", "why is the ocean blue", "N"),
        ]
    )
    runs, preds = baselines.nearest_neighbour(
        "falseqa", DATASETS["falseqa"].description, examples, pd.DataFrame(), WordEmbedder(list(examples["input"]))
    )
    assert {p["example_id"]: p["label"] for p in preds.to_pylist()} == {"d1": "FP", "d2": "N"}
    assert "train question" in runs[0]["config"]["rule"]


def test_nearest_neighbour_without_train_skips_the_own_pair():
    examples = frame(
        [
            ("single-0-valid", "test", "who founded google", "N"),
            ("single-0-false", "test", "who founded google earth moon", "FP"),
            ("single-1-valid", "test", "who founded apple", "N"),
            ("single-1-false", "test", "who founded apple earth moon", "FP"),
        ]
    )
    pairs = pd.DataFrame(
        {"example_a": ["single-0-valid", "single-1-valid"], "example_b": ["single-0-false", "single-1-false"]}
    )
    runs, preds = baselines.nearest_neighbour(
        "synqa2", DATASETS["synqa2"].description, examples, pairs, WordEmbedder(list(examples["input"]))
    )
    labels = {p["example_id"]: p["label"] for p in preds.to_pylist()}
    assert labels == {"single-0-valid": "N", "single-0-false": "FP", "single-1-valid": "N", "single-1-false": "FP"}
    assert "outside its own pair" in runs[0]["config"]["rule"]


def test_no_neighbour_run_without_train_or_pairs():
    examples = frame([("sycon-000", "test", "a b", "FP"), ("sycon-001", "test", "a c", "FP")])
    assert baselines.nearest_neighbour(
        "crepe", DATASETS["crepe"].description, examples, pd.DataFrame(), WordEmbedder(["a b", "a c"])
    ) == ([], None)
