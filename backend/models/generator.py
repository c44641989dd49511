"""A small instruction-tuned causal LM, prompted like an endpoint: `complete(prompts)` returns each
response with the top log-probabilities of its first non-blank token (what label probabilities are
read from, as from a server). Prompts are chat-formatted and left-padded; decoding is greedy unless a
temperature is given.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.utils import logging as hf_logging

from backend.models.device import dtype_for, pick
from backend.models.output import Completion


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
        self.model = (
            AutoModelForCausalLM.from_pretrained(path, dtype=dtype_for(self.device), **kwargs).to(self.device).eval()
        )
        self.batch_size = batch_size
        self.lock = threading.Lock()

    def _encode(self, prompts: list[str], room: int = 1):
        """Chat-formatted prompts; one longer than the context (less `room` for new tokens) loses its start."""
        texts = [
            self.tokenizer.apply_chat_template(
                [{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True
            )
            for p in prompts
        ]
        context = getattr(self.model.config, "max_position_embeddings", None) or 1_000_000
        self.tokenizer.truncation_side = "left"
        return self.tokenizer(
            texts,
            padding=True,
            return_tensors="pt",
            add_special_tokens=False,
            truncation=True,
            max_length=max(16, context - room),
        ).to(self.device)

    def complete(
        self,
        prompts: list[str],
        max_tokens: int = 48,
        temperature: float | None = None,
        top_logprobs: int = 0,
        seed: int | None = None,
        budget=None,
        on_text=None,
        on_done=None,
    ) -> list[Completion]:
        """Responses (greedy, or sampled at `temperature` with `seed`), with the first non-blank token's top
        `top_logprobs` log-probabilities from the raw logits. `budget` is for endpoints (a local model is free);
        `on_text` hears each answer whole (a local model is not streamed); `on_done(i, completion)` hears each
        prompt's completion as its batch ends (a judge run counts and stores them as they come)."""
        done = []
        with self.lock, torch.inference_mode():
            for start in range(0, len(prompts), self.batch_size):
                began = time.perf_counter()
                encoded = self._encode(prompts[start : start + self.batch_size], room=max_tokens)
                if seed is not None:
                    torch.manual_seed(seed)
                sample = bool(temperature)
                output = self.model.generate(
                    **encoded,
                    max_new_tokens=max_tokens,
                    do_sample=sample,
                    temperature=temperature if sample else None,
                    top_p=None,
                    top_k=None,
                    pad_token_id=self.tokenizer.pad_token_id,
                    return_dict_in_generate=True,
                    output_logits=bool(top_logprobs),
                )
                new = output.sequences[:, encoded["input_ids"].shape[1] :]
                texts = self.tokenizer.batch_decode(new, skip_special_tokens=True)
                share = 1000 * (time.perf_counter() - began) / len(texts)
                for row, text in enumerate(texts):
                    top = self._top(output.logits, new[row], row, top_logprobs) if top_logprobs else None
                    done.append(
                        Completion(
                            text.strip(),
                            top,
                            int(encoded["attention_mask"][row].sum()),
                            int((new[row] != self.tokenizer.pad_token_id).sum()),
                            share,
                        )
                    )
                    if on_text is not None:
                        on_text(text.strip())
                    if on_done is not None:
                        on_done(len(done) - 1, done[-1])
        return done

    def _top(self, logits, tokens, row: int, k: int) -> tuple[tuple[str, float], ...] | None:
        for step, token in enumerate(tokens.tolist()):
            if self.tokenizer.decode([token]).strip():
                logprobs = torch.log_softmax(logits[step][row].float(), dim=-1)
                values, ids = logprobs.topk(k)
                return tuple((self.tokenizer.decode([i]), float(v)) for i, v in zip(ids.tolist(), values.tolist()))
        return None

    def generate(self, prompts: list[str], max_new_tokens: int = 48) -> list[str]:
        """Greedy continuations (deterministic), stripped."""
        answers = []
        with self.lock, torch.inference_mode():
            for start in range(0, len(prompts), self.batch_size):
                encoded = self._encode(prompts[start : start + self.batch_size], room=max_new_tokens)
                output = self.model.generate(
                    **encoded, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=self.tokenizer.pad_token_id
                )
                new = output[:, encoded["input_ids"].shape[1] :]
                answers += [t.strip() for t in self.tokenizer.batch_decode(new, skip_special_tokens=True)]
        return answers
