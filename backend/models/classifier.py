"""Sequence classifiers (NLI cross-encoders, question-only detectors) with fast batch inference.

Inputs are tokenised once, sorted by token length and cut into batches whose padded size stays
under a token budget (short questions go many to a batch, long NLI pairs fewer: "length-sorted
dynamic batching"), under `torch.inference_mode()`; bf16 on a GPU that supports it. On 2 CPU cores
about 1,000 tokens a batch is the sweet spot; a GPU takes 32,768 to 131,072 (`gpu_tokens`), with batches padded
in NumPy, copied from pinned memory without blocking and their probabilities kept on the device until the end.
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
        self.max_tokens = gpu_tokens(self.device) if self.device.type == "cuda" else 1024
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
        cuda = self.device.type == "cuda"
        rows = max(self.batch_size, self.max_tokens // 16) if cuda else self.batch_size  # a GPU: the budget binds
        out = torch.empty((len(inputs), len(self.labels)), dtype=torch.float32, device=self.device)
        with self.lock, torch.inference_mode():
            for chosen in token_batches([len(ids) for ids in encoded["input_ids"]], self.max_tokens, rows):
                batch = {
                    key: (tensor.pin_memory() if cuda else tensor).to(self.device, non_blocking=cuda)
                    for key, tensor in padded(encoded, chosen, self.tokenizer.pad_token_id or 0).items()
                }
                logits = self.model(**batch).logits.float()
                out[torch.as_tensor(chosen, device=self.device)] = torch.softmax(logits, dim=-1)
        return out.cpu().numpy().astype(np.float64)


def gpu_tokens(device: torch.device) -> int:
    """Padded tokens per forward pass on a GPU: 131,072 on a card of 40 GiB or more (NOPE pairs ran 2.2x faster
    than at 16,384 on an H200: issue 48), 32,768 on a smaller one."""
    memory = torch.cuda.get_device_properties(device).total_memory
    return 131_072 if memory >= 40 * 2**30 else 32_768


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


def padded(encoded: dict[str, list[list[int]]], chosen: np.ndarray, pad_id: int) -> dict[str, torch.Tensor]:
    """The chosen rows of an unpadded encoding as right-padded tensors (ids with `pad_id`, masks and segments with
    0), as the tokenizer pads them, without a call into it (another thread may be tokenising).

    >>> padded({"input_ids": [[5, 6, 7], [8]], "attention_mask": [[1, 1, 1], [1]]}, np.array([1, 0]), 0)["input_ids"]
    tensor([[8, 0, 0],
            [5, 6, 7]])
    """
    longest = max(len(encoded["input_ids"][i]) for i in chosen)
    found = {}
    for key, fill in (("input_ids", pad_id), ("attention_mask", 0), ("token_type_ids", 0)):
        if key in encoded:
            rows = np.full((len(chosen), longest), fill, dtype=np.int64)
            for r, i in enumerate(chosen):
                rows[r, : len(encoded[key][i])] = encoded[key][i]
            found[key] = torch.from_numpy(rows)
    return found
