"""Dense retrieval: sentence embeddings + FAISS (Johnson et al. 2019), DPR-style (Karpukhin et al. 2020).

Passages and queries are encoded by the same `Embedder` (unit vectors), so inner product is cosine
similarity. `kind="flat"` (default) is exact search (`IndexFlatIP`); `kind="hnsw"` is approximate
search on a navigable small-world graph (Malkov & Yashunin 2018; `IndexHNSWFlat`, inner-product
metric) for corpora where exact search is too slow; `kind="ivfpq"` (inverted lists + product
quantisation, Jégou et al. 2011: 48 bytes a passage instead of 1,536) for millions of passages, where
even the vectors do not fit in memory. When the installed faiss has GPU support and sees a GPU, a flat index
is built on the GPU (vectors added there as they arrive) and a loaded one moved there; otherwise, and for the other
kinds, everything stays on the CPU as before. A lock serialises index searches (Streamlit sessions are
threads; GPU indexes are not thread-safe).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable
from pathlib import Path

import faiss
import numpy as np

from backend.retrieval.base import Hit, hits

log = logging.getLogger(__name__)
KINDS = ("flat", "hnsw", "ivfpq")
HNSW_M, HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH = 32, 200, 128
PQ_BYTES, IVF_NPROBE = 48, 32  # IVF-PQ: 48 sub-quantizers × 8 bits (384-d MiniLM → 48 bytes a passage); lists probed
INDEX, META = "index.faiss", "meta.json"


def embedder_name(embedder) -> str:
    """A short, path-free name for an embedder (used in run ids and index folders)."""
    return str(getattr(embedder, "name", None) or type(embedder).__name__)


def gpu_resources() -> object | None:
    """faiss' GPU resources when the installed faiss has GPU support and sees a GPU; None otherwise (a CPU build,
    or a GPU build without a usable device). They must live as long as the GPU index they serve."""
    if not hasattr(faiss, "StandardGpuResources"):
        return None
    try:
        return faiss.StandardGpuResources() if faiss.get_num_gpus() >= 1 else None
    except (RuntimeError, AttributeError) as exc:  # a GPU build without a usable device
        log.warning("faiss GPU unavailable (%s); indexing and searching on the CPU", exc)
        return None


def on_gpu(index: faiss.Index) -> bool:
    return type(index).__name__.startswith("Gpu")


def new_index(
    dimension: int,
    kind: str = "flat",
    vectors: np.ndarray | None = None,
    count: int | None = None,
    resources: object | None = None,
) -> faiss.Index:
    """An empty inner-product index of the chosen kind (a flat one on the GPU when `resources` are given). IVF-PQ
    is trained first on a sample of `vectors`; `count` (default: as many as `vectors`) is how many passages it
    will hold."""
    if kind == "flat":
        return faiss.GpuIndexFlatIP(resources, dimension) if resources is not None else faiss.IndexFlatIP(dimension)
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dimension, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        return index
    if kind == "ivfpq":
        count = len(vectors) if count is None and vectors is not None else (count or 0)
        if vectors is None or count < 1_000:
            raise ValueError("an IVF-PQ index is trained on the vectors: it needs at least 1,000 passages (use flat)")
        lists = ivf_lists(count)
        m = PQ_BYTES if dimension % PQ_BYTES == 0 else next(d for d in (32, 24, 16, 8, 4, 2, 1) if dimension % d == 0)
        index = faiss.IndexIVFPQ(faiss.IndexFlatIP(dimension), dimension, lists, m, 8, faiss.METRIC_INNER_PRODUCT)
        sample = vectors[np.random.default_rng(0).permutation(len(vectors))[: training_size(count)]]
        index.train(np.ascontiguousarray(sample, dtype=np.float32))
        return index
    raise ValueError(f"unknown dense index kind {kind!r}; allowed: {', '.join(KINDS)}")


def ivf_lists(count: int) -> int:
    """Inverted lists for `count` passages: 4√n, with at least the 39 points a list faiss wants."""
    return int(max(1, min(4 * np.sqrt(count), count // 39)))


def training_size(count: int) -> int:
    """Vectors IVF-PQ trains on: 256 a list (faiss' rule for its k-means), at least 10,000."""
    return max(256 * ivf_lists(count), 10_000)


def to_gpu(index: faiss.Index, kind: str, resources: object | None = None) -> tuple[faiss.Index, str, object]:
    """(index, device, GPU resources): an index built on the GPU as it is (with the `resources` it was built with);
    a flat CPU index moved to GPU 0 when faiss has GPU support and sees a GPU; else the index on the CPU.

    The resources object must live as long as the GPU index, so the caller keeps it.
    """
    if on_gpu(index):
        return index, "cuda", resources
    resources = gpu_resources() if kind == "flat" else None
    if resources is None:
        return index, "cpu", None
    return faiss.index_cpu_to_gpu(resources, 0, index), "cuda", resources


def to_cpu(index: faiss.Index) -> faiss.Index:
    """A CPU copy of a GPU index (for writing); a CPU index as is."""
    if on_gpu(index):
        return faiss.index_gpu_to_cpu(index)
    return index


class DenseRetriever:
    """Nearest passages by embedding inner product; `doc_ids[i]` names the i-th vector."""

    name = "dense"

    def __init__(self, index: faiss.Index, doc_ids: list[str], embedder, kind: str = "flat", resources=None):
        if index.ntotal != len(doc_ids):
            raise ValueError(f"the index holds {index.ntotal} vectors but {len(doc_ids)} doc_ids were given")
        if index.d != embedder.dimension:
            raise ValueError(
                f"the index has dimension {index.d}, the embedder {embedder.dimension}: "
                "rebuild the index with this embedder"
            )
        self.index, index_device, self._gpu = to_gpu(index, kind, resources)
        self.doc_ids, self.embedder, self.kind = list(doc_ids), embedder, kind
        self.model_name = embedder_name(embedder)
        self.model_id = f"{self.name}/{self.model_name}"
        embed_device = str(getattr(embedder, "device", "cpu"))
        self.device = "cuda" if "cuda" in (index_device, embed_device) else "cpu"
        self.params = {
            "embedder": self.model_name,
            "index": f"faiss {faiss.__version__} {kind} inner product",
            "index_device": index_device,
            "embedder_device": embed_device,
        }
        self.lock = threading.Lock()

    @classmethod
    def build(cls, doc_ids: list[str], texts: list[str], embedder, kind: str = "flat") -> DenseRetriever:
        """Embed `texts` (aligned with `doc_ids`) and index the vectors."""
        if len(doc_ids) != len(texts) or not texts:
            raise ValueError(f"need as many doc_ids as texts, at least one (got {len(doc_ids)} and {len(texts)})")
        vectors = embedder.encode(list(texts), progress=f"embedding {len(texts):,} passages")
        return cls.from_vectors(doc_ids, vectors, embedder, kind)

    @classmethod
    def from_vectors(cls, doc_ids: list[str], vectors: np.ndarray, embedder, kind: str = "flat") -> DenseRetriever:
        """Index vectors embedded elsewhere (e.g. by Ray actors), aligned with `doc_ids`."""
        return cls.from_shards(doc_ids, [vectors], embedder, kind)

    @classmethod
    def from_shards(
        cls, doc_ids: list[str], shards: Iterable[np.ndarray], embedder, kind: str = "flat"
    ) -> DenseRetriever:
        """Index vectors that arrive in shards, in `doc_ids` order, adding each as it comes: only the
        index is held, not every vector (IVF-PQ holds the first shards until it has its training sample)."""
        index, waiting, seen = None, [], 0
        resources = gpu_resources() if kind == "flat" else None  # a flat index is built where it will be searched
        for shard in shards:
            waiting.append(np.ascontiguousarray(shard, dtype=np.float32))
            seen += len(waiting[-1])
            if index is None and (kind != "ivfpq" or seen >= min(training_size(len(doc_ids)), len(doc_ids))):
                index = new_index(embedder.dimension, kind, np.concatenate(waiting), len(doc_ids), resources)
            if index is not None:
                for part in waiting:
                    index.add(part)
                waiting = []
        if seen != len(doc_ids):
            raise ValueError(f"{seen} vectors for {len(doc_ids)} doc_ids")
        if index is None:  # no passages: an empty index (IVF-PQ says why it cannot be one)
            index = new_index(embedder.dimension, kind, resources=resources)
        return cls(index, doc_ids, embedder, kind, resources)

    def save(self, folder: Path | str) -> None:
        """`index.faiss` (faiss.write_index) and `meta.json` (doc_ids, kind, model, dimension) in `folder`."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        with self.lock:
            faiss.write_index(to_cpu(self.index), str(folder / INDEX))
        meta = {"kind": self.kind, "model": self.model_name, "dimension": self.index.d, "doc_ids": self.doc_ids}
        (folder / META).write_text(json.dumps(meta))

    @classmethod
    def load(cls, folder: Path | str, embedder) -> DenseRetriever:
        folder = Path(folder)
        meta = json.loads((folder / META).read_text())
        return cls(faiss.read_index(str(folder / INDEX)), meta["doc_ids"], embedder, meta["kind"])

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Top-k hits per query: one embedding batch, one index search."""
        if not queries:
            return []
        vectors = np.ascontiguousarray(self.embedder.encode(list(queries)), dtype=np.float32)
        k = min(k, len(self.doc_ids))
        with self.lock:
            if self.kind == "hnsw":
                self.index.hnsw.efSearch = max(HNSW_EF_SEARCH, k)
            elif self.kind == "ivfpq":
                self.index.nprobe = IVF_NPROBE
            scores, positions = self.index.search(vectors, k)
        return [hits(self.doc_ids, p, s) for p, s in zip(positions, scores)]
