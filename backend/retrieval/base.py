"""What every retriever returns and offers: ranked `Hit`s for one query or a batch of queries.

A retriever ranks the passages of one corpus for a free-text query. `search_many` is the batched
fast path used for evaluation (one tokenisation / one embedding batch / one index call); `search`
is the single-query path of the live playground.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class Hit:
    """One retrieved passage: its store `doc_id`, the retriever's score (higher is better), 1-based rank."""

    doc_id: str
    score: float
    rank: int


@runtime_checkable
class Retriever(Protocol):
    """Anything that ranks passages: BM25, dense (FAISS), hybrid (RRF)."""

    name: str

    def search(self, query: str, k: int) -> list[Hit]: ...

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]: ...


def hits(doc_ids: list[str], positions: np.ndarray, scores: np.ndarray, keep=None) -> list[Hit]:
    """Hits from parallel arrays of corpus positions and scores (already best first).

    Positions below 0 (FAISS's "no result") are dropped, and so are those `keep` rejects.

    >>> hits(["a", "b", "c"], np.array([2, 0, -1]), np.array([0.9, 0.5, 0.0]))
    [Hit(doc_id='c', score=0.9, rank=1), Hit(doc_id='a', score=0.5, rank=2)]
    """
    chosen = [(int(p), float(s)) for p, s in zip(positions, scores) if p >= 0 and (keep is None or keep(float(s)))]
    return [Hit(doc_ids[p], s, rank) for rank, (p, s) in enumerate(chosen, start=1)]
