"""Retrieval: Recall@K and MRR against qrels, per question and overall.

Recall@K here is the IfQA/DPR convention: a question counts as a hit when *any* gold passage is in
the top K (Karpukhin et al. 2020). MRR is the mean reciprocal rank of the first gold passage (0 when
none is retrieved).
"""

from __future__ import annotations

import numpy as np

from backend.metrics.bootstrap import Estimate, mean


def first_gold_rank(ranked: list[str], gold: set[str]) -> int | None:
    """1-based rank of the first gold id in the ranking, or None.

    >>> first_gold_rank(["d3", "d1", "d2"], {"d1"})
    2
    """
    return next((rank for rank, doc in enumerate(ranked, start=1) if doc in gold), None)


def hits_at(ranks: list[int | None], k: int) -> np.ndarray:
    """Per question 1.0 when the first gold rank is ≤ k."""
    return np.array([float(r is not None and r <= k) for r in ranks])


def recall_at_k(ranks: list[int | None], k: int, ci: bool = True) -> Estimate:
    """Share of questions with a gold passage in the top k.

    >>> recall_at_k([1, 3, None, 20], 5, ci=False).value
    0.5
    """
    return mean(hits_at(ranks, k), ci=ci)


def mrr(ranks: list[int | None], ci: bool = True) -> Estimate:
    """Mean reciprocal rank of the first gold passage.

    >>> mrr([1, 2, None, 4], ci=False).value
    0.4375
    """
    return mean(np.array([1.0 / r if r else 0.0 for r in ranks]), ci=ci)
