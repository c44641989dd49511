"""Local vs Ray on this machine (issue 16): a batch NLI run and passage embedding, each on both
engines (the overhead ratio, Ray / local), and the approximate dense indexes against the exact one
on IfQA (recall of the exact top 20, search time, memory).

    .venv/bin/python -m benchmarks.bench_engines [--items 800] [--passages 4000]

Ray here is a local cluster with this machine's CPUs (one model per actor); the same code on a
cluster adds machines. Prints the numbers ARCHITECTURE.md's cluster plan is computed from.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import faiss
import numpy as np

from backend.config import settings
from backend.execution import batch, executors, runs
from backend.models.embed import Embedder
from backend.retrieval.dense import HNSW_EF_SEARCH, IVF_NPROBE, new_index
from backend.store.access import session
from backend.store.passages import corpus_passages


def predict(store: Path, items: int, engine: str) -> float:
    started = time.perf_counter()
    batch.predict(
        store, runs.Request(model="minilm-nli", dataset="nope", limit=items, chunk=64), progress=False, engine=engine
    )
    return time.perf_counter() - started


def saved_vectors(count: int) -> np.ndarray | None:
    """The corpus's vectors from the exact index `index` saved (the same embedder), rather than embed again."""
    from backend.retrieval.dense import INDEX

    for path in (settings().data_dir / "indexes").glob(f"wiki-*/dense-{Embedder.name}/{INDEX}"):
        index = faiss.read_index(str(path))
        if index.ntotal == count and isinstance(index, faiss.IndexFlat):
            return index.reconstruct_n(0, count)
    return None


def recall(truth: np.ndarray, found: np.ndarray) -> float:
    return float(np.mean([len(set(t) & set(f)) / len(t) for t, f in zip(truth, found)]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=800)
    parser.add_argument("--passages", type=int, default=4000)
    args = parser.parse_args()
    executors.init()
    cpus = os.cpu_count()
    with tempfile.TemporaryDirectory() as folder:
        times = {}
        for engine in ("local", "ray"):
            copy = Path(folder) / f"{engine}.duckdb"
            shutil.copyfile(settings().store_path, copy)
            times[engine] = predict(copy, args.items, engine)
    print(
        f"predict minilm-nli on {args.items} NOPE items: local {times['local']:.1f} s "
        f"({args.items / times['local']:.0f} items/s), ray ({cpus} actors) {times['ray']:.1f} s; ratio ray/local "
        f"{times['ray'] / times['local']:.2f}"
    )
    with session() as con:
        doc_ids, texts = corpus_passages(con, "wiki")
        questions = [
            q
            for (q,) in con.execute(
                "SELECT input FROM examples WHERE dataset_id = 'ifqa' AND split = 'S-dev'"
            ).fetchall()
        ]
    embedder = Embedder()
    sample = texts[: args.passages]
    started = time.perf_counter()
    embedder.encode(sample)
    local = time.perf_counter() - started
    started = time.perf_counter()
    executors.embed(sample, embedder.path)
    on_ray = time.perf_counter() - started
    print(
        f"embed {len(sample):,} passages: local {local:.1f} s ({len(sample) / local:.0f}/s), ray ({cpus} actors) "
        f"{on_ray:.1f} s ({len(sample) / on_ray:.0f}/s, {len(sample) / on_ray / cpus:.0f}/s per actor); "
        f"ratio ray/local {on_ray / local:.2f}"
    )
    vectors = saved_vectors(len(texts))
    vectors = np.ascontiguousarray(embedder.encode(texts) if vectors is None else vectors, dtype=np.float32)
    queries = np.ascontiguousarray(embedder.encode(questions), dtype=np.float32)
    exact = new_index(vectors.shape[1], "flat")
    exact.add(vectors)
    truth = exact.search(queries, 20)[1]
    print(
        f"IfQA S-dev: {len(questions):,} questions over {len(texts):,} passages; recall = share of the exact top 20 "
        f"found"
    )
    for kind in ("flat", "hnsw", "ivfpq"):
        started = time.perf_counter()
        index = new_index(vectors.shape[1], kind, vectors)
        index.add(vectors)
        built = time.perf_counter() - started
        if kind == "hnsw":
            index.hnsw.efSearch = HNSW_EF_SEARCH
        if kind == "ivfpq":
            index.nprobe = IVF_NPROBE
        started = time.perf_counter()
        found = index.search(queries, 20)[1]
        search_ms = 1000 * (time.perf_counter() - started) / len(queries)
        size = len(faiss.serialize_index(index))
        print(
            f"  {kind:6} recall@20 {recall(truth, found):.3f}  build {built:5.1f} s  search {search_ms:.2f} ms/query  "
            f"index {size / 1e6:6.1f} MB ({size / len(texts):.0f} bytes a passage)"
        )


if __name__ == "__main__":
    main()
