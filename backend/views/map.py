"""A 2-D map of a dataset's inputs: the bundled MiniLM embedder's vectors of each item's text (input,
and hypothesis where there is one), reduced by UMAP (`umap-learn`, cosine, 15 neighbours, seed 0)
or by PCA (scikit-learn: the fast fallback, seconds for 100k items).

A map is computed once (`python -m backend map DATASET`, or the Map page's button, which runs that
command as a process of its own) and cached as Parquet under `<data_dir>/indexes/maps/`, keyed by the
dataset's SHA-256: a re-ingested or replaced dataset gets a new map, an unchanged one is never
recomputed. `points` joins the cached coordinates with the items' facets and a run's correctness.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from backend.actions import jobs as job_actions
from backend.analysis import slicing
from backend.config import settings
from backend.execution import jobs
from backend.identity.actor import Actor
from backend.store import examples as store_examples
from backend.store import queries
from backend.store.examples import (
    EXTRA,  # noqa: F401 — the page's names
    Filters,
)
from backend.store.runs import CLASSIFICATION_TASKS  # noqa: F401 — the page's names
from backend.store.sessions import DATA, reads

METHODS = ("umap", "pca")


@reads(DATA)
def path(con: duckdb.DuckDBPyConnection, dataset_id: str, method: str) -> Path:
    if method not in METHODS:
        raise ValueError(f"method: expected one of {', '.join(METHODS)}, got {method!r}")
    digest = queries.dataset_sha256(con, dataset_id)
    if digest is None:
        raise ValueError(f"dataset: no dataset {dataset_id!r} is loaded")
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in dataset_id)
    return settings().data_dir / "indexes" / "maps" / f"{safe}-{digest[:12]}-{method}.parquet"


def texts(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """example_id and the text embedded for it (input, then the hypothesis when there is one)."""
    return store_examples.embedded_texts(con, dataset_id)


def reduce(vectors: np.ndarray, method: str, seed: int = 0) -> np.ndarray:
    """(n, 2) coordinates of the vectors."""
    if len(vectors) < 3:
        return np.zeros((len(vectors), 2), dtype=np.float32)
    if method == "pca":
        from sklearn.decomposition import PCA  # lazy: start-up time (umap compiles with numba; torch)

        return PCA(n_components=2, random_state=seed).fit_transform(vectors).astype(np.float32)
    import umap  # lazy: start-up time (umap compiles with numba; torch)

    neighbours = min(15, len(vectors) - 1)
    return (
        umap.UMAP(n_neighbors=neighbours, min_dist=0.1, metric="cosine", random_state=seed, n_jobs=1)
        .fit_transform(vectors)
        .astype(np.float32)
    )


def compute(con: duckdb.DuckDBPyConnection, dataset_id: str, method: str = "umap", embedder=None) -> tuple[Path, dict]:
    """Embed, reduce and cache the map; its path and timings (`build` with the store open only to read)."""
    return build(path(con, dataset_id, method), texts(con, dataset_id), method, embedder)


def vectors_path(target: Path) -> Path:
    """Where a map's item embeddings are kept: beside it, one file per dataset version for every method."""
    return target.with_name(target.stem.rsplit("-", 1)[0] + "-vectors.npz")


def build(target: Path, items: pd.DataFrame, method: str, embedder=None, progress: bool = False) -> tuple[Path, dict]:
    """Embed the items' texts (or read the embeddings kept from an earlier map of this dataset version), reduce
    them and write the map to `target` (replaced atomically); embedding is the slow part, so it shows progress
    when asked and its result is kept for the next map or method."""
    if items.empty:
        raise ValueError("dataset: no examples to map")
    started = time.perf_counter()
    vectors = _kept(vectors_path(target), items)
    if vectors is None:
        if embedder is None:
            from backend.models.embed import Embedder  # lazy: start-up time (umap compiles with numba; torch)

            embedder = Embedder()
        texts = list(items["text"].fillna(""))
        described = f"embedding {len(texts):,} items (the slow part; kept for the next map)" if progress else None
        vectors = np.asarray(embedder.encode(texts, progress=described), dtype=np.float32)
        _keep(vectors_path(target), items, vectors)
    embedded = time.perf_counter()
    if progress:  # the embedding's bar ends at "00:00 left"; the reduction comes next (UMAP: about 25 s for NOPE)
        print(f"reducing {len(vectors):,} vectors to 2-D by {method.upper()}", file=sys.stderr, flush=True)
    xy = reduce(vectors, method)
    reduced = time.perf_counter()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    pq.write_table(pa.table({"example_id": items["example_id"], "x": xy[:, 0], "y": xy[:, 1]}), partial)
    partial.replace(target)
    return target, {"items": len(items), "embed_s": embedded - started, "reduce_s": reduced - embedded}


def _kept(cache: Path, items: pd.DataFrame) -> np.ndarray | None:
    """The kept embeddings when they are of exactly these items' texts, else None."""
    if not cache.is_file():
        return None
    with np.load(cache, allow_pickle=False) as kept:
        same = (
            len(kept["example_id"]) == len(items)
            and (kept["example_id"] == items["example_id"].astype(str)).all()
            and (kept["text"] == items["text"].fillna("").astype(str)).all()
        )
        return kept["vectors"] if same else None


def _keep(cache: Path, items: pd.DataFrame, vectors: np.ndarray) -> None:
    cache.parent.mkdir(parents=True, exist_ok=True)
    partial = cache.with_suffix(".partial.npz")
    np.savez(
        partial,
        example_id=np.array(items["example_id"].astype(str), dtype=str),  # text, not pickled objects
        text=np.array(items["text"].fillna("").astype(str), dtype=str),
        vectors=vectors,
    )
    partial.replace(cache)


@reads(DATA)
def points(
    con: duckdb.DuckDBPyConnection, dataset_id: str, method: str, run_id: str | None = None, stamp: float | None = None
) -> pd.DataFrame:
    """The cached map's points with each item's split, gold label, facets and (with a run) its
    predicted label and correctness ('right' / 'wrong' / 'not predicted'). FileNotFoundError when the
    map has not been computed. `stamp` (the map file's mtime) is unused here: it keys the dashboard's
    cache, so a recomputed map is read again."""
    found = path(con, dataset_id, method)
    if not found.is_file():
        raise FileNotFoundError(
            f"no {method} map of {dataset_id} yet: run `python -m backend map {dataset_id} "
            f"--method {method}` (or press Compute on the Map page)"
        )
    xy = pq.read_table(found).to_pandas()
    facets = [f for f, values in slicing.facet_values(con, dataset_id).items() if 2 <= len(values) <= 50]
    items = store_examples.correctness(con, dataset_id, facets, run_id)
    frame = xy.merge(items, on="example_id").sort_values("example_id", ignore_index=True)
    return frame if run_id else frame.drop(columns=["predicted", "correct"])


def matches(frame: pd.DataFrame, filters: Filters) -> np.ndarray:
    """Which points Explore's facet filters select (to highlight them)."""
    keep = np.ones(len(frame), dtype=bool)
    for facet, values in filters:
        if values and facet in frame:
            wanted = {str(v).lower() if facet in slicing.BOOLEAN_FACETS else str(v) for v in values}
            keep &= frame[facet].astype(str).isin(wanted).to_numpy()
    return keep


def inside(frame: pd.DataFrame, region: dict) -> pd.DataFrame:
    """The points in a dragged rectangle ({"x": [a, b], "y": [c, d]}, in map coordinates); all when none."""
    if not region.get("x") or not region.get("y"):
        return frame
    (x0, x1), (y0, y1) = sorted(region["x"]), sorted(region["y"])
    return frame[frame["x"].between(x0, x1) & frame["y"].between(y0, y1)]


@reads(DATA)
def facet_values(con: duckdb.DuckDBPyConnection, dataset_id: str) -> dict[str, list]:
    """Facet → its sorted distinct non-null values, for the facets the dataset uses: the typed columns, then the
    `extra` keys its description names (a user dataset's categorical columns), as 'extra.KEY'."""
    return slicing.facet_values(con, dataset_id)


@reads(DATA)
def runs_for(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Complete runs of the dataset that stored predictions: classification runs first (baselines last among them),
    then QA, writing and retrieval runs; with each run's label order ([] if none) and why it is contaminated ('' if
    not)."""
    return slicing.runs_for(con, dataset_id)


def alive(run_id: str) -> bool:
    return jobs.alive(run_id)


def last_line(key: str) -> str:
    """The job's log's last non-empty line (progress bars' carriage returns split lines)."""
    return jobs.last_line(key)


def start_map(store: Path | str, dataset: str, method: str, *, actor: Actor) -> str:
    """Start `map DATASET --method M` (embed + reduce, minutes for large sets) in a process of its own; its key."""
    return job_actions.start_map(store, dataset, method, actor=actor)
