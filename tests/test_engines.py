"""Ray engine on a local cluster (2 CPUs, no network): a predict run gives the labels and
probabilities of the local engine, survives an actor killed mid-run with nothing lost or
duplicated, and resumes across engines; Ray-embedded passages give the local index's hits; the
IVF-PQ and HNSW options keep most of the exact index's neighbours."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from backend.execution import batch, executors, runs
from backend.store.access import session

pytestmark = pytest.mark.slow


@pytest.fixture()
def cluster(tiny, tmp_path, monkeypatch):  # noqa: F811
    """A local Ray cluster whose workers see the tiny models' registry and the fault marker."""
    import ray

    monkeypatch.setenv(executors.FAULT_MARKER, str(tmp_path / "crashed-once"))
    executors.init(num_cpus=2)
    yield tmp_path / "crashed-once"
    ray.shutdown()


def _predictions(store, run_id: str):
    with session(store) as con:
        return con.execute(
            "SELECT example_id, label, probs FROM predictions WHERE run_id = ? ORDER BY example_id", [run_id]
        ).df()


def test_ray_predicts_as_local_survives_a_killed_actor_and_resumes_across_engines(cluster, real_store, tmp_path):
    request = runs.Request(model="tiny-nli", dataset="nope", split="main", limit=60, chunk=6)
    stores = {name: tmp_path / f"{name}.duckdb" for name in ("local", "ray", "resumed")}
    for path in stores.values():
        shutil.copy(real_store, path)
    run_id = batch.predict(stores["local"], request, progress=False)
    assert batch.predict(stores["ray"], request, progress=False, engine="ray") == run_id
    assert cluster.exists()  # an actor died on its first chunk; Ray restarted it and retried the chunk
    local, ray_ = _predictions(stores["local"], run_id), _predictions(stores["ray"], run_id)
    assert len(ray_) == 60 and ray_["example_id"].is_unique  # nothing lost, nothing twice
    assert list(local["label"]) == list(ray_["label"])
    assert np.allclose(np.stack(local["probs"]), np.stack(ray_["probs"]), atol=1e-5)
    with session(stores["ray"]) as con:
        status, engine, device = con.execute(
            "SELECT status, config->>'$.engine', device FROM runs WHERE run_id = ?", [run_id]
        ).fetchone()
    assert (status, engine) == ("complete", "ray") and device.startswith("ray:")
    # an interrupted local run (half its predictions) is finished on Ray: the same 60 predictions
    batch.predict(stores["resumed"], request, progress=False)
    with session(stores["resumed"]) as con:
        con.execute(
            "DELETE FROM predictions WHERE run_id = ? AND example_id IN (SELECT example_id FROM predictions "
            "WHERE run_id = ? ORDER BY example_id LIMIT 30)",
            [run_id, run_id],
        )
        con.execute("UPDATE runs SET status = 'interrupted' WHERE run_id = ?", [run_id])
    batch.predict(stores["resumed"], request, progress=False, engine="ray")
    resumed = _predictions(stores["resumed"], run_id)
    assert list(resumed["example_id"]) == list(local["example_id"]) and list(resumed["label"]) == list(local["label"])


def test_passages_embedded_on_ray_give_the_local_index_s_hits(cluster, real_store):
    from backend.models.embed import Embedder
    from backend.retrieval.dense import DenseRetriever
    from backend.store.passages import corpus_passages

    with session(real_store) as con:
        doc_ids, texts = corpus_passages(con, "wiki")
        questions = [
            q for (q,) in con.execute("SELECT input FROM examples WHERE dataset_id = 'ifqa' LIMIT 20").fetchall()
        ]
    doc_ids, texts = doc_ids[:200], texts[:200]  # two shards, one an actor (MiniLM: ~20 passages/s a CPU)
    embedder = Embedder()
    shards = list(executors.embed_shards(texts, embedder.path))  # as `index --engine ray` adds them
    assert [len(s) for s in shards] == [100, 100] and shards[0].shape[1] == embedder.dimension
    here = DenseRetriever.build(doc_ids, texts, embedder)
    there = DenseRetriever.from_shards(doc_ids, iter(shards), embedder)
    for a, b in zip(here.search_many(questions, 10), there.search_many(questions, 10)):
        assert [h.doc_id for h in a] == [h.doc_id for h in b]
        assert np.allclose([h.score for h in a], [h.score for h in b], atol=1e-5)


def test_approximate_indexes_keep_most_exact_neighbours():
    import faiss

    from backend.retrieval.dense import new_index

    rng = np.random.default_rng(0)
    centres = rng.normal(size=(50, 384))
    vectors = (centres[rng.integers(0, 50, 20_000)] + 0.3 * rng.normal(size=(20_000, 384))).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = vectors[rng.permutation(20_000)[:200]] + 0.05 * rng.normal(size=(200, 384)).astype(np.float32)
    exact = faiss.IndexFlatIP(384)
    exact.add(vectors)
    truth = exact.search(queries, 20)[1]
    for kind in ("hnsw", "ivfpq"):
        index = new_index(384, kind, vectors)
        index.add(vectors)
        if kind == "ivfpq":
            index.nprobe = 32
        else:
            index.hnsw.efSearch = 128  # as DenseRetriever searches
        found = index.search(queries, 20)[1]
        recall = np.mean([len(set(t) & set(f)) / 20 for t, f in zip(truth, found)])
        # measured 0.998 (HNSW) and 0.45 (IVF-PQ, 48 bytes a vector: its compression loses close ranks;
        # a random index would find 0.001): IfQA's numbers are in BENCHMARKS.md
        assert recall > (0.95 if kind == "hnsw" else 0.35), (kind, recall)
    with pytest.raises(ValueError, match="at least 1,000 passages"):
        new_index(384, "ivfpq", vectors[:10])


def test_an_index_built_shard_by_shard_holds_every_vector_in_order():
    """What `index --engine ray` does with the actors' shards: the same exact index as all vectors at
    once; IVF-PQ waits for its training sample across shards; a missing shard is an error."""
    from backend.retrieval.dense import DenseRetriever

    class Unit:
        dimension, name = 16, "unit"

    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(2_000, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    doc_ids = [f"d{i}" for i in range(len(vectors))]
    shards = [vectors[i : i + 250] for i in range(0, len(vectors), 250)]
    for kind in ("flat", "ivfpq"):
        whole = DenseRetriever.from_vectors(doc_ids, vectors, Unit(), kind)
        sharded = DenseRetriever.from_shards(doc_ids, iter(shards), Unit(), kind)
        assert sharded.index.ntotal == len(vectors) and sharded.index.is_trained
        found = sharded.index.search(vectors[:30], 5)[1]
        if kind == "flat":
            assert (found == whole.index.search(vectors[:30], 5)[1]).all()
            assert list(found[:, 0]) == list(range(30))  # each vector is its own nearest: ids follow doc order
    with pytest.raises(ValueError, match="1750 vectors for 2000 doc_ids"):
        DenseRetriever.from_shards(doc_ids, iter(shards[:-1]), Unit(), "flat")
