"""Passage retrieval over a store corpus: BM25 (bm25s), dense (Embedder + FAISS), hybrid (RRF).

`index.build_all(con)` builds or loads every retriever for a corpus; `evaluate.evaluate_retrievers`
scores them against a dataset's qrels and stores each as a retrieval run.
"""
