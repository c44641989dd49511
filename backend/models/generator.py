"""A small instruction-tuned causal LM: yes/no probabilities from one forward pass, and greedy answers.

Yes/no questions are scored from the next-token distribution after the chat prompt: P(yes) is the
mass on the "yes" tokens over the mass on "yes" + "no" tokens (no sampling, one forward pass per
batch). Prompts are left-padded so the last position is every row's next token.
"""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.utils import logging as hf_logging

from backend.models.device import dtype_for, pick

YES, NO = ("yes", "Yes", " yes", " Yes", "YES"), ("no", "No", " no", " No", "NO")


class Generator:
    """Chat-template prompting of a causal LM (a folder, or a .gguf file via transformers' GGUF loader)."""

    def __init__(self, path: Path | str, device: str = "auto", batch_size: int = 8, local_only: bool = True):
        hf_logging.disable_progress_bar()
        path = Path(path) if not isinstance(path, str) or Path(path).exists() else path
        kwargs: dict = {"local_files_only": local_only}
        if isinstance(path, Path) and path.suffix == ".gguf":
            kwargs["gguf_file"], path = path.name, path.parent
        self.device = pick(device)
        self.tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype_for(self.device), **kwargs).to(self.device).eval()
        self.batch_size = batch_size
        self.yes_ids, self.no_ids = self._token_ids(YES), self._token_ids(NO)
        self.lock = threading.Lock()

    def _token_ids(self, words: tuple[str, ...]) -> list[int]:
        ids = {self.tokenizer.encode(w, add_special_tokens=False)[0] for w in words}
        return sorted(ids)

    def _encode(self, prompts: list[str], room: int = 1):
        """Chat-formatted prompts; one longer than the context (less `room` for new tokens) loses its start."""
        texts = [self.tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                                    add_generation_prompt=True) for p in prompts]
        context = getattr(self.model.config, "max_position_embeddings", None) or 1_000_000
        self.tokenizer.truncation_side = "left"
        return self.tokenizer(texts, padding=True, return_tensors="pt", add_special_tokens=False, truncation=True,
                              max_length=max(16, context - room)).to(self.device)

    def yes_probability(self, prompts: list[str]) -> np.ndarray:
        """P(yes | prompt) renormalised over the yes/no tokens, one forward pass per batch."""
        out = np.zeros(len(prompts))
        with self.lock, torch.inference_mode():
            for start in range(0, len(prompts), self.batch_size):
                logits = self.model(**self._encode(prompts[start:start + self.batch_size])).logits[:, -1].float()
                probs = torch.softmax(logits, dim=-1)
                yes, no = probs[:, self.yes_ids].sum(-1), probs[:, self.no_ids].sum(-1)
                out[start:start + self.batch_size] = (yes / (yes + no).clamp(min=1e-12)).cpu().numpy()
        return out

    def generate(self, prompts: list[str], max_new_tokens: int = 48) -> list[str]:
        """Greedy continuations (deterministic), stripped."""
        answers = []
        with self.lock, torch.inference_mode():
            for start in range(0, len(prompts), self.batch_size):
                encoded = self._encode(prompts[start:start + self.batch_size], room=max_new_tokens)
                output = self.model.generate(**encoded, max_new_tokens=max_new_tokens, do_sample=False,
                                             pad_token_id=self.tokenizer.pad_token_id)
                new = output[:, encoded["input_ids"].shape[1]:]
                answers += [t.strip() for t in self.tokenizer.batch_decode(new, skip_special_tokens=True)]
        return answers
