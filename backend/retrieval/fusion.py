"""Hybrid retrieval by reciprocal rank fusion (Cormack, Clarke & Büttcher 2009).

Each document scores sum over rankings of 1 / (k + rank), with k = 60 as in the paper; only ranks
(not raw scores) are fused, so BM25 and cosine scores need no calibration. Every input ranking is
cut at `depth`. Ties keep the order in which documents first appear when the rankings are read
rank by rank (rank 1 of each ranking, then rank 2, ...), so fusion is deterministic.
"""

from __future__ import annotations

from backend.retrieval.base import Hit

K_RRF = 60
DEPTH = 100


def rrf(rankings: list[list[str]], k: int = K_RRF) -> list[tuple[str, float]]:
    """(doc_id, fused score) best first.

    >>> [(d, round(s * 61 * 62, 3)) for d, s in rrf([["a", "b"], ["b", "c"]], k=60)]
    [('b', 123.0), ('a', 62.0), ('c', 61.0)]
    """
    scores: dict[str, float] = {}
    for position in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if position < len(ranking):
                doc = ranking[position]
                scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + position + 1)
    return sorted(scores.items(), key=lambda item: -item[1])  # stable: ties keep first appearance


class HybridRetriever:
    """RRF over several retrievers' top-`depth` rankings; itself a Retriever."""

    name = "hybrid"

    def __init__(self, retrievers: list, k_rrf: int = K_RRF, depth: int = DEPTH):
        if not retrievers:
            raise ValueError("a hybrid retriever needs at least one retriever")
        self.retrievers, self.k_rrf, self.depth = list(retrievers), k_rrf, depth
        parts = [getattr(r, "model_id", r.name) for r in self.retrievers]
        self.model_id = f"{self.name}({'+'.join(parts)})"
        self.params = {"fusion": "reciprocal rank fusion", "k_rrf": k_rrf, "depth": depth, "retrievers": parts}
        devices = {getattr(r, "device", "cpu") for r in self.retrievers}
        self.device = "cuda" if "cuda" in devices else "cpu"

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Each retriever's batched search to `depth` (at least k), fused per query, cut to k."""
        depth = max(self.depth, k)
        per_retriever = [r.search_many(queries, depth) for r in self.retrievers]
        return [self._fuse([ranking[i] for ranking in per_retriever], k) for i in range(len(queries))]

    def _fuse(self, rankings: list[list[Hit]], k: int) -> list[Hit]:
        fused = rrf([[h.doc_id for h in ranking] for ranking in rankings], self.k_rrf)[:k]
        return [Hit(doc, score, rank) for rank, (doc, score) in enumerate(fused, start=1)]
