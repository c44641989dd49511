"""Where a batch run's chunks execute: here (`local`, the default) or on a Ray cluster (`ray`).

The planning and the writing stay on the driver (`backend.execution.runs.predict`); only `runs.execute` — a
pure function of the loaded model, the chunk and the passages — runs on the engine. On Ray each
actor loads one model (and, for a run that retrieves, the saved indexes from the index folder the
driver names) and executes chunks; results come back in completion order and the driver writes each
chunk in one transaction, so what a failed actor did not return is simply not written. An actor that
dies is restarted and its chunk retried (`max_restarts`, `max_task_retries`); the predictions' key
(run, example) keeps a chunk from being stored twice.

`ray.init` is called here unless the caller has (tests start a local cluster with
`init(num_cpus=2)`); `--address` joins an existing cluster (`ray start --head` on one machine,
`ray start --address HEAD:6379` on the others). Workers get the lab's PLAB_* variables and the
repository on their path (a cluster's machines need the same checkout and data folder path).

Dense indexing uses the same pattern: `embed` splits the passages into shards that parallel actors
embed; the FAISS index is built on the driver from the vectors in passage order.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from backend.config import REPO_ROOT
from backend.execution import runs
from backend.models import registry
from backend.models.embed import Embedder
from backend.retrieval.index import load_saved

log = logging.getLogger(__name__)
ENGINES = ("local", "ray")
FAULT_MARKER = "PLAB_FAULT_MARKER"  # tests: an actor exits hard on its first chunk once (see ChunkWorker)
RETRIES = 3
SHARD = 2048  # passages per embedding task


class Local:
    """Chunks executed in this process, in order."""

    def __init__(self, the_plan: runs.Plan, retrievers: dict | None, max_cost: float | None = None):
        self.runner = runs.Runner(None, the_plan.request, retrievers, the_plan.passages, the_plan.pool, max_cost)
        self.spec, self.strategy, self.device = self.runner.spec, self.runner.strategy, self.runner.device
        self.prompt = self.runner.prompt_config()

    def map(self, run_id: str, chunks):
        for chunk in chunks:
            yield runs.execute(self.runner, run_id, chunk)

    def close(self) -> None:
        pass


def init(address: str | None = None, num_cpus: int | None = None) -> None:
    """Connect to Ray once: a cluster at `address`, else a local one with this machine's CPUs."""
    import ray  # lazy: Ray loads only when an engine or index build asks for it

    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # never phone home (CI and many labs are offline)
    env = {k: v for k, v in os.environ.items() if k.startswith(("PLAB_", "HF_", "TRANSFORMERS_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
    options = {"runtime_env": {"env_vars": env}, "logging_level": logging.WARNING, "log_to_driver": False}
    if address:
        ray.init(address=address, **options)
    else:
        ray.init(num_cpus=num_cpus or os.cpu_count(), include_dashboard=False, **options)


def _gpus() -> int:
    import ray  # lazy: Ray loads only when an engine or index build asks for it

    return 1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0


class ChunkWorker:
    """A Ray actor: one loaded model (and retriever), executing chunks of a run."""

    def __init__(
        self, request: runs.Request, index_root: str | None, passages: dict, pool=None, max_cost: float | None = None
    ):
        retrievers = None
        if request.retriever:
            retrievers = load_saved(Path(index_root))
        self.runner = runs.Runner(None, request, retrievers, passages, pool, max_cost)

    def device(self) -> str:
        return self.runner.device

    def prompt(self) -> dict:
        return self.runner.prompt_config()

    def execute(self, run_id: str, chunk):
        marker = os.environ.get(FAULT_MARKER)
        if marker and not Path(marker).exists():  # fault injection for the tests: die once, mid-run
            Path(marker).write_text(str(os.getpid()))
            os._exit(1)
        return runs.execute(self.runner, run_id, chunk)


class Ray:
    """Chunks executed by `workers` actors of one model each (a GPU each when the cluster has GPUs)."""

    def __init__(
        self, the_plan: runs.Plan, address: str | None = None, workers: int | None = None, max_cost: float | None = None
    ):
        """`max_cost` is shared equally by the actors (each stops before passing its share)."""
        import ray  # lazy: Ray loads only when an engine or index build asks for it
        from ray.util import ActorPool  # lazy: Ray loads only when an engine or index build asks for it

        init(address)
        request = the_plan.request
        self.spec = registry.spec(request.model)
        self.strategy = runs.strategy(self.spec, request)
        gpus = _gpus()
        available = int(ray.cluster_resources().get("GPU" if gpus else "CPU", 1))
        count = max(1, min(workers or available, len(the_plan.chunks()) or 1))
        remote = ray.remote(num_cpus=0 if gpus else 1, num_gpus=gpus, max_restarts=RETRIES, max_task_retries=RETRIES)(
            ChunkWorker
        )
        root = the_plan.index_root
        self.passages = ray.put(the_plan.passages)  # kept referenced: a restarted actor reads it again
        share = max_cost / count if max_cost is not None else None
        self.actors = [remote.remote(request, root, self.passages, the_plan.pool, share) for _ in range(count)]
        self.device = f"ray:{count}×{ray.get(self.actors[0].device.remote())}"
        self.prompt = ray.get(self.actors[0].prompt.remote())
        self.pool = ActorPool(self.actors)

    def map(self, run_id: str, chunks):
        yield from self.pool.map_unordered(lambda actor, chunk: actor.execute.remote(run_id, chunk), chunks)

    def close(self) -> None:
        import ray  # lazy: Ray loads only when an engine or index build asks for it

        for actor in self.actors:
            ray.kill(actor)


def executor(
    engine: str,
    the_plan: runs.Plan,
    retrievers: dict | None = None,
    address: str | None = None,
    max_cost: float | None = None,
):
    if engine == "local":
        return Local(the_plan, retrievers, max_cost)
    if engine == "ray":
        return Ray(the_plan, address, max_cost=max_cost)
    raise ValueError(f"engine: expected one of {', '.join(ENGINES)}, got {engine!r}")


class EmbedWorker:
    """A Ray actor holding the embedder; encodes shards of passages."""

    def __init__(self, path: str | None):
        self.embedder = Embedder(path)

    def encode(self, start: int, texts: list[str]) -> tuple[int, np.ndarray]:
        return start, np.asarray(self.embedder.encode(texts), dtype=np.float32)


def embed_shards(
    texts: list[str], embedder_path: str | None = None, address: str | None = None, workers: int | None = None
) -> Iterator[np.ndarray]:
    """The passages' vectors, embedded by parallel Ray actors in shards of at most SHARD passages,
    yielded in passage order as they arrive (a shard that comes early waits for those before it), so
    the caller can index them without holding every vector."""
    import ray  # lazy: Ray loads only when an engine or index build asks for it
    from ray.util import ActorPool  # lazy: Ray loads only when an engine or index build asks for it

    init(address)
    gpus = _gpus()
    count = max(1, workers or int(ray.cluster_resources().get("GPU" if gpus else "CPU", 1)))
    remote = ray.remote(num_cpus=0 if gpus else 1, num_gpus=gpus, max_restarts=RETRIES, max_task_retries=RETRIES)(
        EmbedWorker
    )
    actors = [remote.remote(embedder_path) for _ in range(count)]
    size = max(1, min(SHARD, -(-len(texts) // count)))  # every actor gets a shard, none more than SHARD
    starts = range(0, len(texts), size)
    try:
        early, expected = {}, iter(starts)
        following = next(expected, None)
        for start, vectors in ActorPool(actors).map_unordered(
            lambda actor, start: actor.encode.remote(start, texts[start : start + size]), starts
        ):
            early[start] = vectors
            while following in early:
                yield early.pop(following)
                following = next(expected, None)
    finally:
        for actor in actors:
            ray.kill(actor)


def embed(
    texts: list[str], embedder_path: str | None = None, address: str | None = None, workers: int | None = None
) -> np.ndarray:
    """Every passage's vector in one array (`embed_shards`, concatenated)."""
    parts = list(embed_shards(texts, embedder_path, address, workers))
    return np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)
