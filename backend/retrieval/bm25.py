"""Lexical retrieval: Okapi BM25 (Robertson & Zaragoza 2009) with `bm25s` (Lù 2024).

Tokenisation is `bm25s.tokenize`: lowercase, scikit-learn's `\\b\\w\\w+\\b` pattern, English
stopwords removed, no stemming. Scoring is bm25s's "lucene" variant (Lucene's IDF
log(1 + (N - df + 0.5) / (df + 0.5))) with its default k1 = 1.5, b = 0.75. Scores are precomputed
per (term, document) into a sparse matrix at index time, so a query is a sum of a few sparse rows.
Passages that share no term with the query (score 0) are not returned.
"""

from __future__ import annotations

import json
from pathlib import Path

import bm25s
import numpy as np

from backend.retrieval.base import Hit, hits

METHOD = "lucene"
STOPWORDS = "en"
DOC_IDS = "doc_ids.json"


def tokenize(texts: list[str], return_ids: bool = False):
    """bm25s tokens (strings, or a Tokenized of ids and vocabulary) with the settings above."""
    return bm25s.tokenize(texts, lower=True, stopwords=STOPWORDS, return_ids=return_ids, show_progress=False)


class BM25Retriever:
    """BM25 over a fixed list of passages; `doc_ids[i]` names the i-th indexed text."""

    name = "bm25"
    device = "cpu"

    def __init__(self, model: bm25s.BM25, doc_ids: list[str]):
        self.model, self.doc_ids = model, list(doc_ids)
        self.model_id = self.name
        self.params = {
            "library": f"bm25s {bm25s.__version__}",
            "method": model.method,
            "k1": model.k1,
            "b": model.b,
            "tokenizer": f"bm25s.tokenize lower, stopwords={STOPWORDS}, no stemming",
        }

    @classmethod
    def build(cls, doc_ids: list[str], texts: list[str]) -> BM25Retriever:
        """Index `texts` (aligned with `doc_ids`)."""
        if len(doc_ids) != len(texts) or not texts:
            raise ValueError(f"need as many doc_ids as texts, at least one (got {len(doc_ids)} and {len(texts)})")
        model = bm25s.BM25(method=METHOD)
        model.index(tokenize(texts, return_ids=True), show_progress=False)
        return cls(model, doc_ids)

    def save(self, folder: Path | str) -> None:
        """bm25s's own files plus `doc_ids.json` in `folder`."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save(str(folder), show_progress=False)
        (folder / DOC_IDS).write_text(json.dumps(self.doc_ids))

    @classmethod
    def load(cls, folder: Path | str) -> BM25Retriever:
        folder = Path(folder)
        model = bm25s.BM25.load(str(folder), show_progress=False)
        return cls(model, json.loads((folder / DOC_IDS).read_text()))

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]

    def search_many(self, queries: list[str], k: int, threads: int = 0) -> list[list[Hit]]:
        """Top-k hits per query; `threads` > 0 scores queries in a thread pool (bm25s's n_threads)."""
        if not queries:
            return []
        k = min(k, len(self.doc_ids))
        positions, scores = self.model.retrieve(tokenize(queries), k=k, show_progress=False, n_threads=threads)
        return [hits(self.doc_ids, p, s, keep=_positive) for p, s in zip(positions, scores)]


def _positive(scores: np.ndarray) -> np.ndarray:
    return scores > 0.0
