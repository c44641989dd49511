"""Few-shot demonstrations: drawn with a fixed seed from a pool that never holds the item being scored.

The pool is the dataset's training split (its description's `train_split`: IfQA S-train, FalseQA
train, (QA)²'s adaptation set …) when the run scores another split. Otherwise the items are split into
FOLDS folds by a hash of their id (cross-fold) and an item's demonstrations come from the other folds.
Each item's demonstrations depend only on (seed, item id, pool), so a run is reproducible and a
resumed run draws the same ones; the run records the pool and each prediction its demonstration ids.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

FOLDS = 5


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def fold(example_id: str) -> int:
    return _hash(example_id) % FOLDS


@dataclass(frozen=True)
class Pool:
    kind: str  # "split:<name>" or "cross-fold"
    rows: pd.DataFrame  # example_id, input, hypothesis, gold_label, gold_answers

    def describe(self) -> dict:
        return {"pool": self.kind, "pool_size": len(self.rows), "folds": FOLDS if self.kind == "cross-fold" else None}

    def draw(self, example_id: str, k: int, seed: int = 0) -> pd.DataFrame:
        """k demonstrations for one item (fewer when the pool is smaller), never the item itself."""
        rows = self.rows[self.rows["example_id"] != example_id]
        if self.kind == "cross-fold":
            rows = rows[rows["example_id"].map(fold) != fold(example_id)]
        if rows.empty or k <= 0:
            return rows.iloc[:0]
        rng = np.random.default_rng(_hash(f"{seed}:{example_id}"))
        return rows.iloc[rng.choice(len(rows), size=min(k, len(rows)), replace=False)]


def pool(train: pd.DataFrame | None, train_split: str | None, scored_split: str | None, scored: pd.DataFrame) -> Pool:
    """The training split when it exists and the run scores one other split; else cross-fold over the
    scored items (a run over every split scores the training split too)."""
    if train is not None and not train.empty and train_split and scored_split not in (None, train_split):
        return Pool(f"split:{train_split}", _in_order(train))
    return Pool("cross-fold", _in_order(scored))


def _in_order(rows: pd.DataFrame) -> pd.DataFrame:
    """By example id: the draw depends on the pool's order, which must not depend on how it was read."""
    return rows.sort_values("example_id", kind="stable").reset_index(drop=True)
