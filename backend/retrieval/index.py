"""Build or load a corpus's retrieval indexes, keyed by a hash of the corpus's passages.

Indexes live under `<data_dir>/indexes/<corpus_id>-<hash[:12]>/` (`bm25/`, `dense-<model>/`), where
the hash is SHA-256 over the passages sorted by doc_id (doc_id, unit separator, text; records
separated). A changed corpus therefore gets a new folder; an unchanged one reuses what is on disk
and only a missing index is built. Each index is written to a temporary folder and renamed into
place, so an interrupted build never leaves a half index that would be reused. Passage text is
indexed without the title (most passages start with their subject already).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import numpy as np
from filelock import FileLock

from backend.models.embed import Embedder
from backend.retrieval.bm25 import BM25Retriever
from backend.retrieval.dense import DenseRetriever, embedder_name
from backend.retrieval.folders import dense_folder, index_root
from backend.retrieval.fusion import HybridRetriever
from backend.store.passages import corpus_hash, corpus_passages

log = logging.getLogger(__name__)
Shards = Callable[[list[str]], Iterator[np.ndarray]]  # passages' texts → their vectors, shard by shard, in order


def load_or_build(folder: Path, load, build, label: str, allow_build: bool = True):
    """`load(folder)` when the folder exists, else `build()`, save it atomically and return it.

    Processes that want the same missing index (the dashboard's first run and a terminal, say) take turns
    on a lock file beside it: the first builds, the others wait and load what it saved.
    With `allow_build=False` a missing index is a FileNotFoundError saying how to build it.
    """
    if not folder.is_dir() and not allow_build:
        raise FileNotFoundError(
            f"{label}: no index at {folder}; build it with `python -m backend index` "
            "(the dashboard's run script does this on first start)"
        )
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(folder.with_name(f"{folder.name}.lock")):
        if folder.is_dir():
            started = time.perf_counter()
            retriever = load(folder)
            log.info("%s: loaded %s in %.2f s", label, folder, time.perf_counter() - started)
            return retriever
        started = time.perf_counter()
        retriever = build()
        log.info("%s: built in %.1f s", label, time.perf_counter() - started)
        staging = folder.with_name(f"{folder.name}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        retriever.save(staging)
        os.replace(staging, folder)
    log.info("%s: saved to %s", label, folder)
    return retriever


class _Corpus:
    """The passages, read from the store once and only if some index must be built."""

    def __init__(self, con, corpus_id: str):
        self.con, self.corpus_id, self._rows = con, corpus_id, None

    def rows(self) -> tuple[list[str], list[str]]:
        if self._rows is None:
            self._rows = corpus_passages(self.con, self.corpus_id)
        return self._rows


def build_all(
    con: duckdb.DuckDBPyConnection,
    corpus_id: str = "wiki",
    embedder=None,
    dense_kind: str = "flat",
    allow_build: bool = True,
    shards: Shards | None = None,
) -> dict:
    """{"bm25", "dense", "hybrid"} retrievers over a corpus, loading saved indexes where present.

    `embedder` defaults to the bundled MiniLM `Embedder` (constructed here, only when called). `shards`,
    when given, embeds the passages elsewhere (`index --engine ray`: `execution.executors.embed_shards`,
    yielding vectors in passage order) and the index is built here from what it yields.
    """
    digest = corpus_hash(con, corpus_id)
    root, corpus = index_root(corpus_id, digest), _Corpus(con, corpus_id)
    if allow_build:  # a load-only call (the dashboard) leaves the data folder as it is
        root.mkdir(parents=True, exist_ok=True)
    bm25 = load_or_build(
        root / "bm25", BM25Retriever.load, lambda: BM25Retriever.build(*corpus.rows()), f"{corpus_id} bm25", allow_build
    )
    embedder = Embedder() if embedder is None else embedder
    folder = root / dense_folder(embedder_name(embedder), dense_kind)

    def build_dense() -> DenseRetriever:
        doc_ids, texts = corpus.rows()
        if shards is not None:
            return DenseRetriever.from_shards(doc_ids, shards(texts), embedder, kind=dense_kind)
        return DenseRetriever.build(doc_ids, texts, embedder, kind=dense_kind)

    dense = load_or_build(
        folder, lambda f: DenseRetriever.load(f, embedder), build_dense, f"{corpus_id} {folder.name}", allow_build
    )
    return {"bm25": bm25, "dense": dense, "hybrid": HybridRetriever([bm25, dense])}


def load_saved(root: Path, embedder=None) -> dict:
    """The retrievers saved in an index folder, without a store (a Ray actor loads them so)."""
    embedder = Embedder() if embedder is None else embedder
    folder = root / dense_folder(embedder_name(embedder))
    if not (root / "bm25").is_dir() or not folder.is_dir():
        raise FileNotFoundError(f"no saved indexes in {root}: build them with `python -m backend index`")
    bm25, dense = BM25Retriever.load(root / "bm25"), DenseRetriever.load(folder, embedder)
    return {"bm25": bm25, "dense": dense, "hybrid": HybridRetriever([bm25, dense])}


def load_all(con: duckdb.DuckDBPyConnection, corpus_id: str = "wiki") -> dict:
    """The retrievers of `build_all`, from saved indexes only (what the dashboard uses: never a 5-minute build)."""
    return build_all(con, corpus_id, allow_build=False)
