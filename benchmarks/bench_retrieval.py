"""Retrieval speed on the store's corpus and IfQA S-dev questions, side by side with baselines.

    .venv/bin/python -m benchmarks.bench_retrieval [--store PATH] [--queries 700] [--cached-dense]

1. BM25 queries/second: our bm25s retriever (batched `search_many`, and one `search` per query)
   against `rank_bm25.BM25Okapi` on the same passages, the same questions and the same tokens
   (bm25s.tokenize: lowercase, English stopwords), top 100 each. Target: at least 10x rank_bm25.
2. Index build: BM25 (tokenise + score matrix) and dense (MiniLM embedding of every passage + FAISS
   flat add). `--cached-dense` loads the dense index built by `python -m backend index` instead.
3. Single-query latency, warm: BM25, dense (embed + FAISS search), hybrid (both + RRF).
4. The BM25 search API against bare bm25s: the same saved index, the same 1,400 IfQA questions (S-dev +
   S-test), k = 20, the same tokenisation; `search_many` (tokenise, retrieve, Hits) against
   `bm25s.tokenize` + `BM25.retrieve`, timed alternately in one run (median of 7). Target: >= 0.9x.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from backend.retrieval.bm25 import BM25Retriever, tokenize
from backend.retrieval.dense import DenseRetriever
from backend.retrieval.fusion import HybridRetriever
from backend.store.connection import connect
from backend.store.passages import corpus_passages

TARGET_RATIO = 10.0
K = 100
API_TARGET = 0.9


def questions(con, n: int) -> list[str]:
    rows = con.execute(
        """SELECT input FROM examples WHERE dataset_id = 'ifqa' AND split = 'S-dev'
                          ORDER BY example_id LIMIT $n""",
        {"n": n},
    ).fetchall()
    return [r[0] for r in rows]


def timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def rank_bm25_search(model, doc_ids: list[str], query: str) -> list[str]:
    """The baseline's top K: scores for every passage, then the same top-k selection."""
    scores = model.get_scores(tokenize([query])[0])
    top = np.argpartition(-scores, K)[:K]
    return [doc_ids[i] for i in top[np.argsort(-scores[top])]]


def bench_bm25(doc_ids: list[str], texts: list[str], queries: list[str]) -> BM25Retriever:
    from rank_bm25 import BM25Okapi

    build_ours, ours = timed(lambda: BM25Retriever.build(doc_ids, texts))
    build_base, base = timed(lambda: BM25Okapi(tokenize(texts)))
    ours.search_many(queries[:10], K)  # warm-up
    batched, found = timed(lambda: ours.search_many(queries, K))
    threaded, _ = timed(lambda: ours.search_many(queries, K, threads=os.cpu_count()))
    single, _ = timed(lambda: [ours.search(q, K) for q in queries])
    baseline, base_found = timed(lambda: [rank_bm25_search(base, doc_ids, q) for q in queries])
    n = len(queries)
    agree = np.mean([bool(h) and h[0].doc_id == b[0] for h, b in zip(found, base_found)])
    print(f"\n1. BM25 over {len(doc_ids):,} passages, {n} IfQA S-dev questions, top {K}")
    print(f"   rank_bm25 BM25Okapi (baseline)     {n / baseline:9.0f} q/s")
    for label, seconds in [
        ("bm25s search_many (batched)", batched),
        (f"bm25s search_many, {os.cpu_count()} threads", threaded),
        ("bm25s search (one at a time)", single),
    ]:
        print(
            f"   {label:35}{n / seconds:9.0f} q/s   {baseline / seconds:6.1f}x rank_bm25 (target {TARGET_RATIO:.0f}x)"
        )
    print(f"   top-1 agreement with rank_bm25: {agree:.1%} (lucene vs Okapi IDF)")
    print(f"   index build: bm25s {build_ours:.2f} s, rank_bm25 {build_base:.2f} s ({build_base / build_ours:.1f}x)")
    return ours


def bench_dense_build(doc_ids: list[str], texts: list[str], embedder) -> DenseRetriever:
    from backend.retrieval.dense import new_index

    embed_s, vectors = timed(lambda: embedder.encode(texts))
    index = new_index(embedder.dimension, "flat")
    add_s, _ = timed(lambda: index.add(vectors))
    print(
        f"\n2. Dense index build: MiniLM embedding of {len(texts):,} passages {embed_s:.1f} s "
        f"({len(texts) / embed_s:.0f} passages/s on {embedder.device}), FAISS flat add {add_s * 1000:.0f} ms"
    )
    return DenseRetriever(index, doc_ids, embedder)


def latency(retriever, queries: list[str], k: int = 20) -> tuple[float, float]:
    """Median and 95th percentile milliseconds of one warm `search` call."""
    retriever.search(queries[0], k)
    times = [timed(lambda q=q: retriever.search(q, k))[0] * 1000 for q in queries]
    return statistics.median(times), float(np.percentile(times, 95))


def bench_latency(retrievers: dict, queries: list[str]) -> None:
    print(f"\n3. Single-query latency, warm, top 20, over {len(queries)} questions")
    for name, retriever in retrievers.items():
        median, p95 = latency(retriever, queries)
        print(f"   {name:8} median {median:7.2f} ms   p95 {p95:7.2f} ms")


def all_questions(con, splits=("S-dev", "S-test")) -> list[str]:
    rows = con.execute(
        "SELECT input FROM examples WHERE dataset_id = 'ifqa' AND list_contains($s, split) ORDER BY example_id",
        {"s": list(splits)},
    ).fetchall()
    return [r[0] for r in rows]


def bench_api(bm25: BM25Retriever, queries: list[str], k: int = 20, repeat: int = 7) -> None:
    """Our search API vs bare bm25s on one index object: what the wrapping (tokenise, Hits) costs."""
    import bm25s

    from backend.retrieval.bm25 import STOPWORDS

    def bare():
        tokens = bm25s.tokenize(queries, lower=True, stopwords=STOPWORDS, show_progress=False)
        return bm25.model.retrieve(tokens, k=k, show_progress=False)

    def ours():
        return bm25.search_many(queries, k)

    bare(), ours()  # warm-up
    times = {"bare": [], "ours": []}
    for _ in range(repeat):
        for name, fn in (("bare", bare), ("ours", ours)):
            times[name].append(timed(fn)[0])
    bare_s, ours_s = statistics.median(times["bare"]), statistics.median(times["ours"])
    ratio = bare_s / ours_s
    print(
        f"\n4. BM25 search API vs bare bm25s: {len(queries):,} IfQA S-dev + S-test questions, k = {k}, "
        f"median of {repeat}"
    )
    print(f"   bare bm25s (tokenize + retrieve)   {len(queries) / bare_s:9.0f} q/s   {bare_s * 1000:7.1f} ms")
    print(f"   BM25Retriever.search_many          {len(queries) / ours_s:9.0f} q/s   {ours_s * 1000:7.1f} ms")
    print(
        f"   ratio {ratio:.2f}x of bare bm25s (target >= {API_TARGET}x: {'met' if ratio >= API_TARGET else 'MISSED'})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", default=None)
    parser.add_argument("--queries", type=int, default=700)
    parser.add_argument("--corpus", default="wiki")
    parser.add_argument("--api-only", action="store_true", help="only part 4, on the saved BM25 index")
    parser.add_argument(
        "--cached-dense", action="store_true", help="load the saved dense index instead of timing its build"
    )
    args = parser.parse_args()
    con = connect(args.store, read_only=True)
    if args.api_only:
        from backend.retrieval.folders import index_root
        from backend.store.passages import corpus_hash

        bench_api(
            BM25Retriever.load(index_root(args.corpus, corpus_hash(con, args.corpus)) / "bm25"), all_questions(con)
        )
        return
    doc_ids, texts = corpus_passages(con, args.corpus)
    queries = questions(con, args.queries)
    print(f"{len(doc_ids):,} passages, {len(queries)} questions, {os.cpu_count()} CPUs")
    bm25 = bench_bm25(doc_ids, texts, queries)
    from backend.models.embed import Embedder

    embedder = Embedder()
    if args.cached_dense:
        from backend.retrieval.index import build_all

        dense = build_all(con, args.corpus, embedder)["dense"]
    else:
        dense = bench_dense_build(doc_ids, texts, embedder)
    bench_latency({"bm25": bm25, "dense": dense, "hybrid": HybridRetriever([bm25, dense])}, queries)
    bench_api(bm25, all_questions(con))


if __name__ == "__main__":
    main()
