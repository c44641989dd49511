"""Retrieval: BM25, dense (FAISS), RRF hybrid, index reuse by corpus hash, evaluation into the store.

Fast tests use a ten-passage corpus written here and a bag-of-words stand-in for the embedder (so
MiniLM is never loaded); the slow tests use the real indexes over the 12,892-passage corpus and
check IfQA S-dev recall against measured values.
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import numpy as np
import pytest

from backend.retrieval import dense as dense_index
from backend.retrieval.base import Hit, Retriever
from backend.retrieval.bm25 import BM25Retriever
from backend.retrieval.dense import DenseRetriever, new_index
from backend.retrieval.fusion import HybridRetriever, rrf
from backend.store.connection import connect
from tests.helpers.data import CHECKOUT_DATA, shared

PASSAGES = {
    "d-eiffel": "The Eiffel Tower is a wrought-iron lattice tower in Paris, France, completed in 1889.",
    "d-nile": "The Nile is a major north-flowing river in northeastern Africa that empties into the Mediterranean Sea.",
    "d-everest": "Mount Everest is Earth's highest mountain above sea level, located in the Himalayas.",
    "d-python": "Python is a programming language created by Guido van Rossum and first released in 1991.",
    "d-mozart": "Wolfgang Amadeus Mozart was a prolific composer of the Classical period, born in Salzburg.",
    "d-photo": "Photosynthesis is the process green plants use to turn light energy into chemical energy.",
    "d-moon": "Apollo 11 landed the first humans on the Moon in July 1969; Neil Armstrong stepped out first.",
    "d-penicillin": "Alexander Fleming discovered penicillin in 1928 at St Mary's Hospital in London.",
    "d-baht": "The Thai baht was pegged to the US dollar under a fixed exchange rate system until 1997.",
    "d-tokyo": "Tokyo is the capital of Japan and the most populous metropolitan area in the world.",
}
DOC_IDS, TEXTS = list(PASSAGES), list(PASSAGES.values())

KEYWORD_QUERIES = [
    ("Who discovered penicillin?", "d-penicillin"),
    ("highest mountain in the Himalayas", "d-everest"),
    ("What is the capital of Japan?", "d-tokyo"),
    ("Which river empties into the Mediterranean?", "d-nile"),
    ("Guido van Rossum programming language", "d-python"),
    ("When did Apollo 11 land on the Moon?", "d-moon"),
    ("exchange rate of the Thai baht", "d-baht"),
]


class BagOfWords:
    """Deterministic stand-in for `Embedder`: hashed bag-of-words counts, L2-normalised."""

    name = "bow-test"
    dimension = 512
    device = "cpu"
    STOP = {"the", "a", "an", "of", "in", "is", "to", "and", "who", "what", "which", "when", "did", "on", "that"}

    def __init__(self):
        self.calls = 0

    def encode(self, texts: list[str], progress: str | None = None) -> np.ndarray:  # the Embedder interface
        self.calls += 1
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in re.findall(r"\w\w+", text.lower()):
                if token not in self.STOP:
                    out[row, zlib.crc32(token.encode()) % self.dimension] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


class Fixed:
    """A retriever that returns the same ranking for every query (to check fusion and metrics by hand)."""

    def __init__(self, name: str, ranking: list[str]):
        self.name, self.ranking = name, ranking

    def search(self, query: str, k: int) -> list[Hit]:
        return [Hit(d, 1.0 / r, r) for r, d in enumerate(self.ranking[:k], start=1)]

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]:
        return [self.search(q, k) for q in queries]


@pytest.fixture(scope="module")
def bm25() -> BM25Retriever:
    return BM25Retriever.build(DOC_IDS, TEXTS)


@pytest.fixture(scope="module")
def dense() -> DenseRetriever:
    return DenseRetriever.build(DOC_IDS, TEXTS, BagOfWords())


def top(hits: list[Hit]) -> str:
    return hits[0].doc_id


@pytest.mark.parametrize("query, expected", KEYWORD_QUERIES)
def test_bm25_ranks_the_passage_with_the_keywords_first(bm25, query, expected):
    found = bm25.search(query, 5)
    assert top(found) == expected
    assert [h.rank for h in found] == list(range(1, len(found) + 1))
    assert all(a.score >= b.score for a, b in zip(found, found[1:]))


@pytest.mark.parametrize("query", ["xylophone quasar", "the of and is", ""])
def test_bm25_returns_nothing_when_no_term_matches(bm25, query):
    assert bm25.search(query, 5) == []


def test_bm25_k_larger_than_the_corpus_returns_only_matching_passages(bm25):
    found = bm25.search("the first tower in 1889 or 1969", 100)
    assert 0 < len(found) < len(DOC_IDS)
    assert {"d-eiffel", "d-moon"} <= {h.doc_id for h in found}


@pytest.mark.parametrize("query, expected", KEYWORD_QUERIES)
def test_dense_ranks_the_most_similar_passage_first(dense, query, expected):
    found = dense.search(query, 3)
    assert top(found) == expected
    cosine = BagOfWords().encode([query])[0] @ BagOfWords().encode([PASSAGES[expected]])[0]
    assert found[0].score == pytest.approx(float(cosine), abs=1e-5)


@pytest.mark.parametrize(
    "make",
    [lambda: BM25Retriever.build(DOC_IDS, TEXTS), lambda: DenseRetriever.build(DOC_IDS, TEXTS, BagOfWords())],
    ids=["bm25", "dense"],
)
def test_search_many_matches_search_and_is_one_batch(make):
    retriever = make()
    queries = [q for q, _ in KEYWORD_QUERIES]
    assert isinstance(retriever, Retriever)
    assert retriever.search_many(queries, 4) == [retriever.search(q, 4) for q in queries]
    if isinstance(retriever, DenseRetriever):
        before = retriever.embedder.calls
        retriever.search_many(queries, 4)
        assert retriever.embedder.calls == before + 1  # all queries embedded in one call


def test_rrf_fuses_two_fixed_rankings_as_computed_by_hand():
    # a: 1/61; b: 1/62 + 1/61; c: 1/63 + 1/62; d: 1/63  →  b, c, a, d
    hybrid = HybridRetriever([Fixed("x", ["a", "b", "c"]), Fixed("y", ["b", "c", "d"])], k_rrf=60)
    found = hybrid.search("anything", 10)
    assert [h.doc_id for h in found] == ["b", "c", "a", "d"]
    assert [h.score for h in found] == pytest.approx([1 / 62 + 1 / 61, 1 / 63 + 1 / 62, 1 / 61, 1 / 63])
    assert [h.rank for h in found] == [1, 2, 3, 4]
    assert [h.doc_id for h in hybrid.search("anything", 2)] == ["b", "c"]


def test_rrf_ties_keep_first_appearance_and_depth_cuts_inputs():
    assert [d for d, _ in rrf([["a", "b"], ["b", "a"]])] == ["a", "b"]  # equal scores: a is read first
    hybrid = HybridRetriever([Fixed("x", ["a", "b", "c"]), Fixed("y", ["d", "e", "c"])], depth=2)
    assert [h.doc_id for h in hybrid.search("q", 2)] == ["a", "d"]  # c is below depth 2 in both
    assert top(hybrid.search("q", 3)) == "c"  # k > depth: each ranking is read to k, and c is third in both


def test_hybrid_over_bm25_and_dense_finds_the_keyword_passages(bm25, dense):
    hybrid = HybridRetriever([bm25, dense])
    for query, expected in KEYWORD_QUERIES:
        assert top(hybrid.search(query, 5)) == expected


@pytest.mark.parametrize("kind", ["bm25", "flat", "hnsw"])
def test_save_and_load_return_identical_hits(tmp_path, kind):
    embedder = BagOfWords()
    if kind == "bm25":
        built = BM25Retriever.build(DOC_IDS, TEXTS)
        built.save(tmp_path / "ix")
        loaded = BM25Retriever.load(tmp_path / "ix")
    else:
        built = DenseRetriever.build(DOC_IDS, TEXTS, embedder, kind=kind)
        built.save(tmp_path / "ix")
        loaded = DenseRetriever.load(tmp_path / "ix", embedder)
    queries = [q for q, _ in KEYWORD_QUERIES]
    assert loaded.search_many(queries, 5) == built.search_many(queries, 5)
    assert loaded.doc_ids == DOC_IDS


def test_dense_rejects_an_unknown_kind_and_a_mismatched_embedder(tmp_path):
    with pytest.raises(ValueError, match="allowed: flat, hnsw"):
        new_index(8, "ivf")
    DenseRetriever.build(DOC_IDS, TEXTS, BagOfWords()).save(tmp_path / "ix")
    other = BagOfWords()
    other.dimension = 64
    with pytest.raises(ValueError, match="rebuild the index"):
        DenseRetriever.load(tmp_path / "ix", other)


# --- a tiny store --------------------------------------------------------------------------------

QUESTIONS = [  # example_id, split, question, gold doc_ids
    ("S-dev-0", "S-dev", "Who discovered penicillin?", ["d-penicillin"]),
    ("S-dev-1", "S-dev", "When was the lattice tower in Paris completed?", ["d-eiffel", "d-moon"]),
    ("S-dev-2", "S-dev", "Which capital is the most populous metropolitan area?", ["d-baht"]),  # gold shares no term
    ("S-dev-3", "S-dev", "What did Mozart compose?", []),  # no qrels: retrieved, not scored
    ("S-test-0", "S-test", "Which language did Guido van Rossum create?", ["d-python"]),
    ("S-train-0", "S-train", "Who composed in Salzburg?", ["d-mozart"]),  # split not evaluated
]


def make_store(path: Path, passages: dict[str, str] = PASSAGES):
    con = connect(path)
    for doc_id, text in passages.items():
        con.execute("INSERT INTO passages VALUES ('wiki', 'corpus', $1, NULL, $2, ['test'])", [doc_id, text])
    for example_id, split, question, gold in QUESTIONS:
        con.execute(
            "INSERT INTO examples (dataset_id, example_id, split, input) VALUES ('ifqa', $1, $2, $3)",
            [example_id, split, question],
        )
        for doc_id in gold:
            con.execute("INSERT INTO qrels VALUES ('ifqa', $1, 'wiki', $2)", [example_id, doc_id])
    return con


@pytest.fixture()
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("PLAB_DATA_DIR", str(tmp_path / "data"))
    con = make_store(tmp_path / "s.duckdb")
    yield con
    con.close()


def test_corpus_hash_ignores_insertion_order_and_sees_any_text_change(tmp_path):
    from backend.store.passages import corpus_hash

    forward = make_store(tmp_path / "a.duckdb")
    backward = make_store(tmp_path / "b.duckdb", dict(reversed(PASSAGES.items())))
    changed = make_store(tmp_path / "c.duckdb", {**PASSAGES, "d-tokyo": PASSAGES["d-tokyo"] + " "})
    digests = [corpus_hash(con, "wiki") for con in (forward, backward, changed)]
    assert digests[0] == digests[1] != digests[2]
    assert re.fullmatch(r"[0-9a-f]{64}", digests[0])
    with pytest.raises(LookupError, match="ingest --only corpus"):
        corpus_hash(forward, "nope")


def test_build_all_reuses_saved_indexes_until_the_corpus_changes(store, monkeypatch):
    from backend.retrieval import index

    builds = []
    real_bm25, real_dense = index.BM25Retriever.build, index.DenseRetriever.build
    monkeypatch.setattr(index.BM25Retriever, "build", lambda *a, **kw: builds.append("bm25") or real_bm25(*a, **kw))
    monkeypatch.setattr(index.DenseRetriever, "build", lambda *a, **kw: builds.append("dense") or real_dense(*a, **kw))
    first = index.build_all(store, embedder=BagOfWords())
    root = index.index_root("wiki", index.corpus_hash(store, "wiki"))
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == ["bm25", "dense-bow-test"]
    mtimes = {p: p.stat().st_mtime_ns for p in root.rglob("*")}
    second = index.build_all(store, embedder=BagOfWords())
    assert builds == ["bm25", "dense"]  # the second call loaded both
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*")} == mtimes
    assert set(second) == {"bm25", "dense", "hybrid"}
    assert second["hybrid"].search("Who discovered penicillin?", 3) == first["hybrid"].search(
        "Who discovered penicillin?", 3
    )
    store.execute("UPDATE passages SET text = text || ' Extra.' WHERE doc_id = 'd-nile'")
    index.build_all(store, embedder=BagOfWords())
    assert builds == ["bm25", "dense"] * 2  # a new corpus hash, a new folder
    assert len(list(root.parent.iterdir())) == 2


def test_two_processes_wanting_one_missing_index_build_it_once(tmp_path):
    """The dashboard's first run and a terminal `index` at once: one builds, the other waits and loads (two
    threads here: each lock is its own open file, so they exclude each other as two processes do)."""
    import threading
    import time

    from backend.retrieval.index import load_or_build

    folder, builds, start = tmp_path / "wiki-abc" / "bm25", [], threading.Barrier(2)
    corpus = list(PASSAGES.items())

    def build():
        builds.append(threading.get_ident())
        time.sleep(0.5)  # long enough for the other thread to arrive while this one builds
        return BM25Retriever.build([d for d, _ in corpus], [t for _, t in corpus])

    got = {}

    def want(name):
        start.wait()
        got[name] = load_or_build(folder, BM25Retriever.load, build, "wiki bm25")

    threads = [threading.Thread(target=want, args=(name,)) for name in ("dashboard", "terminal")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(builds) == 1 and folder.is_dir()
    assert got["dashboard"].search("penicillin", 2) == got["terminal"].search("penicillin", 2)


def test_evaluate_retrievers_stores_runs_and_recall_computed_by_hand(store, monkeypatch):
    from backend.retrieval.evaluate import evaluate_retrievers
    from backend.store.passages import corpus_hash

    fixed = Fixed("fixed", ["d-moon", "d-eiffel", "d-penicillin", "d-python"])
    retrievers = {"bm25": BM25Retriever.build(DOC_IDS, TEXTS), "fixed": fixed}
    table = evaluate_retrievers(store, retrievers, k=100).set_index(["retriever", "split"])
    # bm25, S-dev (3 scored): penicillin rank 1, Eiffel rank 1, baht never retrieved  →  R@1 = R@100 = 2/3
    assert table.loc[("bm25", "S-dev"), "Recall@1"] == pytest.approx(2 / 3)
    assert table.loc[("bm25", "S-dev"), "Recall@100"] == pytest.approx(2 / 3)
    assert table.loc[("bm25", "S-dev"), "n"] == 3 and table.loc[("bm25", "S-test"), "Recall@1"] == 1.0
    # fixed ranking: penicillin rank 3, Eiffel/Moon rank 1, baht missing  →  R@1 = 1/3, R@5 = 2/3, MRR = (1/3 + 1) / 3
    assert table.loc[("fixed", "S-dev"), "Recall@1"] == pytest.approx(1 / 3)
    assert table.loc[("fixed", "S-dev"), "Recall@5"] == pytest.approx(2 / 3)
    assert table.loc[("fixed", "S-dev"), "MRR"] == pytest.approx((1 / 3 + 1) / 3)
    assert table.loc[("fixed", "S-test"), "MRR"] == pytest.approx(1 / 4)
    low, value, high = table.loc[("bm25", "S-dev"), ["Recall@1 low", "Recall@1", "Recall@1 high"]]
    assert low <= value <= high
    runs = store.execute(
        "SELECT run_id, task, model_id, retriever_id, source, config FROM runs ORDER BY run_id"
    ).fetchall()
    assert [r[:5] for r in runs] == [
        ("ifqa/retrieval/bm25", "retrieve", "bm25", "bm25", "batch"),
        ("ifqa/retrieval/fixed", "retrieve", "fixed", "fixed", "batch"),
    ]
    config = json.loads(runs[0][5])
    assert (
        config["k"] == 100
        and config["splits"] == ["S-dev", "S-test"]
        and config["corpus_hash"] == corpus_hash(store, "wiki")
    )
    counts = dict(store.execute("SELECT run_id, count(*) FROM predictions GROUP BY run_id").fetchall())
    assert counts == {"ifqa/retrieval/bm25": 5, "ifqa/retrieval/fixed": 5}  # S-train is not evaluated
    ranks = dict(
        store.execute(
            "SELECT example_id, text->>'$.first_gold_rank' FROM predictions WHERE run_id = 'ifqa/retrieval/fixed'"
        ).fetchall()
    )
    assert ranks == {"S-dev-0": "3", "S-dev-1": "1", "S-dev-2": None, "S-dev-3": None, "S-test-0": "4"}
    stored = store.execute(
        "SELECT rank, doc_id FROM retrievals WHERE run_id = 'ifqa/retrieval/fixed' AND example_id = 'S-dev-0' ORDER "
        "BY rank"
    ).fetchall()
    assert stored == list(enumerate(fixed.ranking, start=1))
    evaluate_retrievers(store, {"fixed": fixed}, k=2)  # re-evaluating replaces the run and its rows
    assert store.execute(
        "SELECT count(*), max(rank) FROM retrievals WHERE run_id = 'ifqa/retrieval/fixed'"
    ).fetchall() == [(10, 2)]


def test_evaluate_retrievers_says_what_to_ingest_when_there_are_no_questions(store):
    from backend.retrieval.evaluate import evaluate_retrievers

    with pytest.raises(LookupError, match="ingest crepe"):
        evaluate_retrievers(store, {"fixed": Fixed("fixed", ["d-moon"])}, dataset_id="crepe")


# --- the real corpus ------------------------------------------------------------------------------

MEASURED_RECALL_AT_20 = {
    "bm25": (0.94, 0.98),
    "dense": (0.93, 0.98),
    "hybrid": (0.975, 1.0),
}  # measured .963, .959, .989


def real_store_path(tmp: Path) -> Path:
    """The IfQA + corpus store ingested from ../shared/datasets."""
    from backend.imports.ingest import ingest

    shared("ifqa"), shared("corpus")
    results = ingest(["ifqa", "corpus"], store=tmp / "real.duckdb")
    assert [r.status for r in results] == ["loaded", "loaded"], [r.message for r in results]
    return tmp / "real.duckdb"


@pytest.mark.slow
def test_real_corpus_recall_at_20_on_ifqa_s_dev(lab):
    """BM25 and MiniLM + FAISS over 12,892 passages: the checkout's indexes (`python -m backend index`, or the
    README first-run test, builds them once; a build under way elsewhere is waited for, not repeated), evaluated on
    IfQA S-dev once per test process by the `lab` fixture (`build_all` and `evaluate_retrievers(..., k=100)` on the
    real store), whose table and stored runs are checked here."""
    table = lab["retrieval"].set_index("retriever")
    assert (table["split"] == "S-dev").all() and (table["n"] == 700).all()
    for name, (low, high) in MEASURED_RECALL_AT_20.items():
        assert low <= table.loc[name, "Recall@20"] <= high, (name, table.loc[name, "Recall@20"])
    assert table.loc["hybrid", "Recall@20"] >= table.loc[["bm25", "dense"], "Recall@20"].max()
    con = connect(lab["store"])
    try:
        assert con.execute("SELECT count(*) FROM retrievals WHERE run_id = 'ifqa/retrieval/hybrid'").fetchall() == [
            (70_000,)
        ]
    finally:
        con.close()


def test_without_a_faiss_gpu_a_flat_index_is_built_and_searched_on_the_cpu():
    if dense_index.gpu_resources() is not None:
        pytest.skip("this machine's faiss sees a GPU: the GPU test below checks that path")
    built = DenseRetriever.build(DOC_IDS, TEXTS, BagOfWords())
    assert type(built.index).__name__ == "IndexFlatIP" and built.params["index_device"] == "cpu"
    assert dense_index.to_gpu(built.index, "flat") == (built.index, "cpu", None)


@pytest.mark.slow
def test_a_flat_index_built_on_the_gpu_finds_what_the_cpu_finds_on_ifqa(tmp_path, monkeypatch):
    """The checkout's saved MiniLM vectors indexed on the GPU (built there, shard by shard) and on the CPU: the same
    Recall@20 on IfQA S-dev and the same top 20 for nearly every question (float sums may order ties apart)."""
    import faiss

    from backend.retrieval.index import build_all
    from backend.store.passages import questions

    if dense_index.gpu_resources() is None:
        pytest.skip("faiss sees no GPU here (a CPU build of faiss, or no GPU): run where a GPU is lent")
    monkeypatch.setenv("PLAB_DATA_DIR", str(CHECKOUT_DATA))
    con = connect(real_store_path(tmp_path))
    loaded = build_all(con)["dense"]
    cpu = dense_index.to_cpu(loaded.index)
    vectors = cpu.reconstruct_n(0, cpu.ntotal)
    built = DenseRetriever.from_shards(loaded.doc_ids, np.array_split(vectors, 7), loaded.embedder)
    assert dense_index.on_gpu(built.index) and built.params["index_device"] == "cuda"
    asked = questions(con, "ifqa", ["S-dev"], "wiki")
    con.close()
    queries = np.ascontiguousarray(loaded.embedder.encode(list(asked["input"])), dtype=np.float32)
    on_cpu = faiss.IndexFlatIP(cpu.d)
    on_cpu.add(vectors)
    found = {name: index.search(queries, 20)[1] for name, index in (("cpu", on_cpu), ("gpu", built.index))}
    ids = np.array(loaded.doc_ids)
    recall = {
        name: np.mean([bool(set(gold) & set(ids[row])) for gold, row in zip(asked["gold"], rows) if len(gold)])
        for name, rows in found.items()
    }
    assert recall["gpu"] == pytest.approx(recall["cpu"], abs=1 / len(asked))
    same = np.mean([set(a) == set(b) for a, b in zip(found["cpu"], found["gpu"])])
    assert same >= 0.99, same
