"""Where a corpus's saved retrieval indexes live on disk (`<data_dir>/indexes/<corpus_id>-<hash[:12]>/`).

Kept apart from `retrieval.index`, which builds and loads them, so that naming the folder (a run's plan, a
provenance record) does not import faiss, torch and the retrievers.
"""

from __future__ import annotations

from pathlib import Path

from backend.config import settings


def index_root(corpus_id: str, digest: str) -> Path:
    return settings().data_dir / "indexes" / f"{corpus_id}-{digest[:12]}"


def dense_folder(model_name: str, kind: str = "flat") -> str:
    """`dense-<model>` (flat) or `dense-<model>-hnsw`."""
    return f"dense-{model_name}" + ("" if kind == "flat" else f"-{kind}")
