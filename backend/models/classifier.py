"""Sequence classifiers (NLI cross-encoders, question-only detectors) with fast batch inference.

Inputs are sorted by length and cut into batches, each padded only to its own longest item
("length-sorted dynamic batching"), under `torch.inference_mode()`; bf16 on a GPU that supports it.
"""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer
from transformers.utils import logging as hf_logging

from backend.models.device import dtype_for, pick

LABEL_NAMES = {"entailment": "E", "neutral": "N", "contradiction": "C", "e": "E", "n": "N", "c": "C",
               "fp": "FP", "false premise": "FP", "normal": "N"}


def normalise_labels(id2label: dict) -> list[str]:
    """The model's labels in output order, as E/N/C or FP/N.

    >>> normalise_labels({0: "contradiction", 1: "entailment", 2: "neutral"})
    ['C', 'E', 'N']
    """
    names = [str(id2label[i]) for i in sorted(id2label, key=int)]
    return [LABEL_NAMES.get(n.lower(), n) for n in names]


class SequenceClassifier:
    """Probabilities over `labels` for texts or (premise, hypothesis) pairs; thread-safe."""

    def __init__(self, path: Path | str, device: str = "auto", batch_size: int = 32, max_length: int = 256,
                 revision: str | None = None, local_only: bool = True):
        hf_logging.disable_progress_bar()
        self.device = pick(device)
        kwargs = {"local_files_only": local_only} | ({"revision": revision} if revision and not local_only else {})
        self.tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
        self.model = AutoModelForSequenceClassification.from_pretrained(path, dtype=dtype_for(self.device), **kwargs)
        self.model.to(self.device).eval()
        self.labels = normalise_labels(self.model.config.id2label)
        self.batch_size, self.max_length = batch_size, max_length
        self.lock = threading.Lock()

    def predict(self, inputs: list[str] | list[tuple[str, str]]) -> np.ndarray:
        """len(inputs) × len(labels) probabilities, in input order."""
        lengths = [len(x) if isinstance(x, str) else len(x[0]) + len(x[1]) for x in inputs]
        order = np.argsort(lengths, kind="stable")
        out = np.zeros((len(inputs), len(self.labels)), dtype=np.float64)
        with self.lock, torch.inference_mode():
            for start in range(0, len(inputs), self.batch_size):
                chosen = order[start:start + self.batch_size]
                out[chosen] = self._batch([inputs[i] for i in chosen])
        return out

    def _batch(self, batch: list) -> np.ndarray:
        pairs = not isinstance(batch[0], str)
        first = [x[0] for x in batch] if pairs else batch
        second = [x[1] for x in batch] if pairs else None
        encoded = self.tokenizer(first, second, padding=True, truncation=True, max_length=self.max_length,
                                 return_tensors="pt").to(self.device)
        return torch.softmax(self.model(**encoded).logits.float(), dim=-1).cpu().numpy()
