"""What every retriever returns and offers: ranked `Hit`s for one query or a batch of queries.

A retriever ranks the passages of one corpus for a free-text query. `search_many` is the batched
fast path used for evaluation (one tokenisation / one embedding batch / one index call); `search`
is the single-query path of the live playground.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np


class Hit(NamedTuple):
    """One retrieved passage: its store `doc_id`, the retriever's score (higher is better), 1-based rank.
    A named tuple, not a frozen dataclass: a batch of searches makes tens of thousands, and a tuple is
    made in about half the time (290 ns against 540 ns; bench_retrieval part 4)."""

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

    Positions below 0 (FAISS's "no result") are dropped, and so are those whose score `keep` (a
    predicate over the score array, e.g. `lambda s: s > 0`) rejects. The arrays are filtered and
    converted to Python numbers in one step each: per-element conversions cost more than BM25's search.

    >>> hits(["a", "b", "c"], np.array([2, 0, -1]), np.array([0.9, 0.5, 0.0]))
    [Hit(doc_id='c', score=0.9, rank=1), Hit(doc_id='a', score=0.5, rank=2)]
    """
    positions, scores = np.asarray(positions), np.asarray(scores)
    chosen = positions >= 0
    if keep is not None:
        chosen &= keep(scores)
    return [
        Hit(doc_ids[p], s, rank)
        for rank, (p, s) in enumerate(zip(positions[chosen].tolist(), scores[chosen].tolist()), start=1)
    ]
