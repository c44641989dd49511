"""Batch inference throughput vs a naive per-example loop, and live playground latency (CPU or GPU).

    .venv/bin/python -m benchmarks.bench_inference [--store PATH] [--pairs 512] [--queries 20]

1. Batch NLI (long NOPE pairs) and detection (short FalseQA questions): our
   `SequenceClassifier.predict` (token-budget length-sorted batches, inference_mode, bf16 on GPU)
   against the naive loop a notebook would write (one `tokenizer(...)` + forward per
   example under `torch.no_grad()`), same model, same device, same NOPE pairs. Target ≥ 2×.
   The model is `minilm-nli` when trained, else the packaged MiniLM with an untrained 3-way head
   (identical compute).
2. Live playground query, warm: retrieve top-20 (hybrid) + NLI over the 20 passages
   (`backend.execution.live.ask`, detect by NLI over retrieval), distinct questions so nothing is cached;
   and the same with BM25 + the question-only detector. Target < 1.5 s on CPU, < 150 ms on GPU.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from backend.execution import live
from backend.models import availability, registry
from backend.models.classifier import SequenceClassifier
from backend.models.embed import packaged_minilm
from backend.retrieval.index import build_all
from backend.store import queries
from backend.store.connection import connect


def nli_model_path(tmp: Path) -> tuple[Path, str]:
    available, _ = availability.status(registry.spec("minilm-nli"))
    if available:
        return registry.weights_path(registry.spec("minilm-nli")), "minilm-nli (trained)"
    model = AutoModelForSequenceClassification.from_pretrained(packaged_minilm(), num_labels=3, local_files_only=True)
    model.save_pretrained(tmp)
    AutoTokenizer.from_pretrained(packaged_minilm(), local_files_only=True).save_pretrained(tmp)
    return tmp, "MiniLM + untrained 3-way head (minilm-nli not trained yet)"


def naive(path: Path, inputs: list, device: torch.device) -> float:
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(path, local_files_only=True).to(device).eval()
    started = time.perf_counter()
    with torch.no_grad():
        for item in inputs:
            first, second = (item, None) if isinstance(item, str) else item
            encoded = tokenizer(first, second, truncation=True, max_length=256, return_tensors="pt").to(device)
            torch.softmax(model(**encoded).logits, dim=-1).cpu()
    return time.perf_counter() - started


def flops_per_item(path: Path, inputs: list) -> float:
    """Mean forward FLOPs per input: 2 per non-embedding weight per token, plus attention's 4·L²·d per layer."""
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    config = AutoModelForSequenceClassification.from_pretrained(path, local_files_only=True)
    weights = sum(p.numel() for name, p in config.named_parameters() if "embeddings" not in name)
    firsts, seconds = zip(*[(x, None) if isinstance(x, str) else x for x in inputs])
    lengths = np.array(
        [
            len(ids)
            for ids in tokenizer(
                list(firsts), None if seconds[0] is None else list(seconds), truncation=True, max_length=256
            )["input_ids"]
        ]
    )
    layers, hidden = config.config.num_hidden_layers, config.config.hidden_size
    return float(np.mean(2 * weights * lengths + 4 * layers * hidden * lengths**2))


def matmul_peak(device: torch.device, n: int = 1024, windows: int = 10) -> float:
    """This device's float32 GFLOP/s on square matmuls, best of short windows (a shared VM is noisy)."""
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    best = 0.0
    for _ in range(windows):
        started = time.perf_counter()
        for _ in range(5):
            torch.mm(a, b)
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = max(best, 5 * 2 * n**3 / (time.perf_counter() - started) / 1e9)
    return best


def batched(path: Path, inputs: list) -> tuple[float, str]:
    classifier = SequenceClassifier(path, batch_size=128)
    classifier.predict(inputs[:64])  # warm-up
    started = time.perf_counter()
    classifier.predict(inputs)
    return time.perf_counter() - started, str(classifier.device)


def compare(title: str, path: Path, inputs: list) -> None:
    fast, device = batched(path, inputs)
    slow = naive(path, inputs, torch.device(device))
    print(f"{title}, device {device}")
    print(f"   naive per-example loop  {len(inputs) / slow:7.1f} items/s")
    print(
        f"   batched (ours)          {len(inputs) / fast:7.1f} items/s   {slow / fast:.1f}x the naive loop (target 2x)"
    )
    work = flops_per_item(path, inputs) * len(inputs) / 1e9
    peak = matmul_peak(torch.device(device))
    print(
        f"   roofline: {work / len(inputs):.2f} GFLOP/item; naive {work / slow:.0f} GFLOP/s, ours {work / fast:.0f} "
        f"GFLOP/s, "
        f"float32 matmul peak {peak:.0f} GFLOP/s; no batching can beat {peak * slow / work:.1f}x here"
    )


def latency(con, retrievers, model: str, retriever: str, questions: list[str]) -> list[float]:
    """Wall ms per question for what the playground does: the top-20 hits, then the model's answer
    (for NLI-over-retrieval the model reads those hits; a question-only model does not need them)."""
    times = []
    for question in questions:
        started = time.perf_counter()
        retrievers[retriever].search(question, 20)
        live.ask(
            con,
            live.Query(
                model=model,
                task="detect",
                question=question,
                k=20,
                retriever=retriever if registry.spec(model).task == "nli" else None,
            ),
            retrievers,
            store=False,
        )
        times.append(1000 * (time.perf_counter() - started))
    return times[3:]  # the first queries warm the caches


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", default=None)
    parser.add_argument("--pairs", type=int, default=512)
    parser.add_argument("--queries", type=int, default=23)
    args = parser.parse_args()
    con = connect(args.store, read_only=True)
    items = queries.run_inputs(con, "nope").sample(args.pairs, random_state=0)
    pairs = list(zip(items["input"], items["hypothesis"]))
    with tempfile.TemporaryDirectory() as tmp:
        path, what = nli_model_path(Path(tmp))
        compare(f"1a. batch NLI, {args.pairs} NOPE pairs (~65 tokens), {what}", path, pairs)
    detector = registry.spec("minilm-fp-falseqa")
    if availability.status(detector)[0]:
        questions = list(queries.run_inputs(con, "falseqa", "test")["input"].head(args.pairs))
        compare(
            f"1b. batch detection, {len(questions)} FalseQA questions (~15 tokens), minilm-fp-falseqa",
            registry.weights_path(detector),
            questions,
        )
    retrievers = build_all(con)
    questions = list(queries.run_inputs(con, "falseqa", "test")["input"].sample(args.queries, random_state=1))
    print(
        f"2. live playground query, warm, retrieve top-20 + model, median / p95 over {len(questions) - 3} new questions"
    )
    for model, retriever in (("minilm-nli", "hybrid"), ("minilm-fp-falseqa", "bm25")):
        if not availability.status(registry.spec(model))[0]:
            print(f"   {model}: not trained yet, skipped")
            continue
        times = latency(con, retrievers, model, retriever, questions)
        print(
            f"   {retriever:6} top-20 + {model:18} median {statistics.median(times):6.0f} ms   "
            f"p95 {np.percentile(times, 95):6.0f} ms   (target < 1500 ms on CPU)"
        )


if __name__ == "__main__":
    main()
