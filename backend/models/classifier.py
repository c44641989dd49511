"""Sequence classifiers (NLI cross-encoders, question-only detectors) with fast batch inference.

Inputs are tokenised once, sorted by token length and cut into batches whose padded size stays
under a token budget (short questions go many to a batch, long NLI pairs fewer: "length-sorted
dynamic batching"), under `torch.inference_mode()`; bf16 on a GPU that supports it. On 2 CPU cores
about 1,000 tokens a batch is the sweet spot; a GPU takes 16× that.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer
from transformers.utils import logging as hf_logging

from backend.models.device import dtype_for, pick

LABEL_NAMES = {
    "entailment": "E",
    "neutral": "N",
    "contradiction": "C",
    "e": "E",
    "n": "N",
    "c": "C",
    "fp": "FP",
    "false premise": "FP",
    "normal": "N",
}


def normalise_labels(id2label: dict) -> list[str]:
    """The model's labels in output order, as E/N/C or FP/N.

    >>> normalise_labels({0: "contradiction", 1: "entailment", 2: "neutral"})
    ['C', 'E', 'N']
    """
    names = [str(id2label[i]) for i in sorted(id2label, key=int)]
    return [LABEL_NAMES.get(n.lower(), n) for n in names]


class SequenceClassifier:
    """Probabilities over `labels` for texts or (premise, hypothesis) pairs; thread-safe."""

    def __init__(
        self,
        path: Path | str,
        device: str = "auto",
        batch_size: int = 32,
        max_length: int = 256,
        revision: str | None = None,
        local_only: bool = True,
    ):
        hf_logging.disable_progress_bar()
        self.device = pick(device)
        kwargs = {"local_files_only": local_only} | ({"revision": revision} if revision and not local_only else {})
        self.tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
        self.model = AutoModelForSequenceClassification.from_pretrained(path, dtype=dtype_for(self.device), **kwargs)
        self.model.to(self.device).eval()
        self.labels = normalise_labels(self.model.config.id2label)
        positions = getattr(self.model.config, "max_position_embeddings", None) or max_length
        self.batch_size, self.max_length = batch_size, min(max_length, positions)
        self.max_tokens = 16384 if self.device.type == "cuda" else 1024
        self.lock = threading.Lock()

    def predict(self, inputs: list[str] | list[tuple[str, str]]) -> np.ndarray:
        """len(inputs) × len(labels) probabilities, in input order."""
        if not inputs:
            return np.zeros((0, len(self.labels)))
        pairs = not isinstance(inputs[0], str)
        encoded = self.tokenizer(
            [x[0] for x in inputs] if pairs else list(inputs),
            [x[1] for x in inputs] if pairs else None,
            truncation=True,
            max_length=self.max_length,
        )
        out = np.zeros((len(inputs), len(self.labels)), dtype=np.float64)
        with self.lock, torch.inference_mode():
            for chosen in token_batches([len(ids) for ids in encoded["input_ids"]], self.max_tokens, self.batch_size):
                batch = self.tokenizer.pad({k: [v[i] for i in chosen] for k, v in encoded.items()}, return_tensors="pt")
                logits = self.model(**batch.to(self.device)).logits.float()
                out[chosen] = torch.softmax(logits, dim=-1).cpu().numpy()
        return out


def token_batches(lengths: list[int], max_tokens: int, max_batch: int) -> list[np.ndarray]:
    """Indices sorted by length, cut so each batch's padded size (rows × longest) stays ≤ max_tokens.

    >>> [b.tolist() for b in token_batches([5, 50, 6, 49], max_tokens=100, max_batch=8)]
    [[0, 2], [3, 1]]
    """
    order = np.argsort(lengths, kind="stable")
    batches, start = [], 0
    for end in range(1, len(order) + 1):
        longest = lengths[order[end - 1]]
        if end - start > max_batch or (end - start) * longest > max_tokens:
            batches.append(order[start : end - 1])
            start = end - 1
    batches.append(order[start:])
    return [b for b in batches if len(b)]
