"""The GPU backend against the card (issue 48), in one run, on a folder `benchmarks.gpu_extract` wrote: where only
torch, transformers, pandas and pyarrow are installed (sentence-transformers and faiss are measured where present,
and said to be skipped where not), with this checkout's code.

    python -m benchmarks.bench_gpu --extract data/gpu_extract [--json bench_gpu.json]     # on a GPU machine
    python -m benchmarks.bench_gpu --extract /tmp/small --cpu                              # the CPU mode (CI)

Side by side, each as a ratio: the lab's embedder against the bare forward pass (pre-tokenised, length-sorted
batches under a token budget, mean pooling on the device: what the card can do) and against sentence-transformers
at batch 64 (same weights); the lab's classifier against its bare forward; FAISS flat search on the GPU against the
CPU; and a 3-epoch NLI training (the recipe's GPU setting) with its held-out and NOPE accuracy. Targets (issue 48):
embedder ≥ 0.8× bare and ≥ 4× sentence-transformers at 64; classifier ≥ 0.8× bare; training ≤ 3 min, held-out ≥ 0.76.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from backend.models.classifier import SequenceClassifier, token_batches
from backend.models.device import dtype_for, pick
from backend.models.embed import CPU_TOKENS, GPU_TOKENS, Embedder
from backend.training.finetune import TrainConfig, nli_config, train


def timed(fn):
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    started = time.perf_counter()
    result = fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return result, time.perf_counter() - started


def bare_embed(model, tokenizer, texts: list[str], device: torch.device, budget: int) -> np.ndarray:
    """The bare forward pass: tokenised beforehand (not timed), length-sorted batches under `budget` padded tokens,
    mean pooling and normalisation on the device."""
    encoded = tokenizer(texts, truncation=True, max_length=256, padding=False)
    lengths = [len(ids) for ids in encoded["input_ids"]]
    batches = []
    for chosen in token_batches(lengths, budget, len(texts)):
        batch = tokenizer.pad({k: [v[i] for i in chosen] for k, v in encoded.items()}, return_tensors="pt")
        batches.append((chosen, {k: t.pin_memory() if device.type == "cuda" else t for k, t in batch.items()}))
    out = torch.empty((len(texts), model.config.hidden_size), device=device)

    def run():
        with torch.inference_mode():
            for chosen, batch in batches:
                batch = {k: t.to(device, non_blocking=True) for k, t in batch.items()}
                hidden = model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                out[torch.as_tensor(chosen, device=device)] = torch.nn.functional.normalize(pooled.float(), dim=-1)
        return out.cpu().numpy()

    return timed(run)


def bare_classify(model, tokenizer, pairs: list[tuple[str, str]], device: torch.device, budget: int) -> float:
    encoded = tokenizer([p for p, _ in pairs], [h for _, h in pairs], truncation=True, max_length=256)
    lengths = [len(ids) for ids in encoded["input_ids"]]
    batches = [
        tokenizer.pad({k: [v[i] for i in chosen] for k, v in encoded.items()}, return_tensors="pt")
        for chosen in token_batches(lengths, budget, len(pairs))
    ]

    def run():
        with torch.inference_mode():
            for batch in batches:
                torch.softmax(model(**batch.to(device)).logits.float(), dim=-1)

    return timed(run)[1]


def embedding(extract: Path, device: torch.device, repeat: int) -> dict:
    texts = list(pd.read_parquet(extract / "corpus.parquet")["text"]) * repeat
    minilm = extract / "minilm"
    lab = Embedder(minilm, device=str(device))
    lab.encode(texts[:256])  # warm-up: kernels, allocator
    vectors, lab_s = timed(lambda: lab.encode(texts))
    budget = GPU_TOKENS if device.type == "cuda" else CPU_TOKENS
    bare_vectors, bare_s = bare_embed(lab.model, lab.tokenizer, texts, device, budget)
    row = {"passages": len(texts), "lab_per_s": len(texts) / lab_s, "bare_per_s": len(texts) / bare_s}
    row["lab_vs_bare"] = row["lab_per_s"] / row["bare_per_s"]
    row["min_cosine_lab_vs_bare"] = float((vectors * bare_vectors).sum(axis=1).min())
    row["vectors"] = vectors
    try:
        from sentence_transformers import SentenceTransformer  # lazy: optional on the GPU machine
    except ImportError:
        return row | {"sentence_transformers": "skipped: not installed"}
    st = SentenceTransformer(str(minilm), device=str(device)).to(dtype_for(device))  # the lab's precision
    st.encode(texts[:256], batch_size=64)
    st_vectors, st_s = timed(lambda: st.encode(texts, batch_size=64, normalize_embeddings=True))
    row |= {"st64_per_s": len(texts) / st_s, "lab_vs_st64": st_s / lab_s}
    row["min_cosine_lab_vs_st"] = float((vectors * np.asarray(st_vectors, dtype=np.float32)).sum(axis=1).min())
    return row


def classification(extract: Path, device: torch.device, repeat: int, folder: Path) -> dict:
    nope = pd.read_parquet(extract / "nope.parquet")
    pairs = list(zip(nope["premise"], nope["hypothesis"])) * repeat
    model = AutoModelForSequenceClassification.from_pretrained(extract / "minilm", num_labels=3)  # a fresh head
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(extract / "minilm").save_pretrained(folder)
    lab = SequenceClassifier(folder, device=str(device), batch_size=64)
    lab.predict(pairs[:256])
    _, lab_s = timed(lambda: lab.predict(pairs))
    bare_s = bare_classify(lab.model, lab.tokenizer, pairs, device, lab.max_tokens)
    return {
        "pairs": len(pairs),
        "token_budget": lab.max_tokens,
        "lab_per_s": len(pairs) / lab_s,
        "bare_per_s": len(pairs) / bare_s,
        "lab_vs_bare": bare_s / lab_s,
    }


def search(vectors: np.ndarray) -> dict:
    try:
        import faiss  # lazy: optional on the GPU machine
    except ImportError:
        return {"faiss": "skipped: not installed"}
    queries = np.ascontiguousarray(vectors[:1000], dtype=np.float32)
    cpu = faiss.IndexFlatIP(vectors.shape[1])
    cpu.add(np.ascontiguousarray(vectors, dtype=np.float32))
    _, cpu_s = timed(lambda: cpu.search(queries, 20))
    row = {"queries": len(queries), "cpu_queries_per_s": len(queries) / cpu_s}
    if not hasattr(faiss, "StandardGpuResources") or faiss.get_num_gpus() < 1:
        return row | {"gpu": "skipped: this faiss has no GPU support or sees no GPU"}
    resources = faiss.StandardGpuResources()
    gpu = faiss.index_cpu_to_gpu(resources, 0, cpu)
    gpu.search(queries[:10], 20)
    (_, found), gpu_s = timed(lambda: gpu.search(queries, 20))
    same = float(np.mean([set(a) == set(b) for a, b in zip(found, cpu.search(queries, 20)[1])]))
    return row | {"gpu_queries_per_s": len(queries) / gpu_s, "gpu_vs_cpu": cpu_s / gpu_s, "same_top20": same}


def training(extract: Path, device: torch.device, cpu_mode: bool, folder: Path) -> dict:
    fit = pd.read_parquet(extract / "nli_train.parquet")
    heldout = pd.read_parquet(extract / "nli_heldout.parquet")
    config = TrainConfig(labels=("E", "N", "C"), epochs=1, batch_size=32) if cpu_mode else nli_config(device)
    card = train(fit, folder, config, heldout=heldout, base=extract / "minilm")
    nope = pd.read_parquet(extract / "nope.parquet")
    model = SequenceClassifier(folder, device=str(device))
    said = np.array(model.labels)[model.predict(list(zip(nope["premise"], nope["hypothesis"]))).argmax(axis=1)]
    return {
        "epochs": config.epochs,
        "pairs": len(fit),
        "minutes": card["minutes"],
        "heldout_accuracy": card["heldout_accuracy"],
        "nope_accuracy": float((said == nope["label"].to_numpy()).mean()),
        "nope_always_e": float((nope["label"] == "E").mean()),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extract", type=Path, required=True)
    parser.add_argument("--cpu", action="store_true", help="the CPU mode: the extract as it is, 1 epoch")
    parser.add_argument("--repeat", type=int, default=4, help="the corpus and NOPE this many times (GPU mode)")
    parser.add_argument("--skip-training", action="store_true")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    device = torch.device("cpu") if args.cpu else pick("auto")
    repeat = 1 if args.cpu else args.repeat
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    results = {"device": name, "torch": torch.__version__, "mode": "cpu" if args.cpu else "gpu"}
    with tempfile.TemporaryDirectory() as scratch:
        results["embedder"] = embedding(args.extract, device, repeat)
        vectors = results["embedder"].pop("vectors")
        results["classifier"] = classification(args.extract, device, repeat, Path(scratch) / "classifier")
        results["faiss"] = search(vectors)
        if not args.skip_training:
            results["training"] = training(args.extract, device, args.cpu, Path(scratch) / "trained")
    results["lab_modules_only"] = not any(m in sys.modules for m in ("duckdb", "streamlit"))
    for part, row in results.items():
        if isinstance(row, dict):
            shown = ", ".join(f"{k} {v:,.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items())
            print(f"{part}: {shown}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
