"""The lab's batch run over an OpenAI-compatible endpoint against a bare `openai` asyncio loop, and a
cached re-run against the first run, on llama.cpp's server serving SmolLM2 (`scripts/llm_server.sh`).

    .venv/bin/python -m benchmarks.bench_endpoints [--store PATH] [--items 120] [--cached-items 1000] [--concurrency 2]

1. Overhead: the same FalseQA test prompts (detect-zero-shot: short questions, 8 tokens, top-10
   logprobs, temperature 0) sent by
   a bare loop (`AsyncOpenAI`, a semaphore of `--concurrency`, nothing stored) and by the lab's
   `batch.predict` (plan, template, parse, cache, store each chunk), in the order bare, lab, bare; the
   ratio is the lab's items/s over the bare loops' mean. Each side starts with nothing cached.
   Target ≥ 0.9×.
2. Cache: a run of `--cached-items` items, then the same run again in a fresh copy of the store with
   the response cache kept (the server's request count must not move). Target ≥ 50×.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import openai

from backend.execution import batch, runs
from backend.models import loading, prompted, registry
from backend.models.prompts import templates
from backend.store import queries
from backend.store.connection import connect, existing_store
from benchmarks import llama_server

NAME, KEY_ENV = "bench-llama", "PLAB_BENCH_LLM_KEY"


async def bare(url: str, key: str, prompts: list[str], concurrency: int) -> float:
    """Seconds for a plain asyncio loop to get every completion (what a notebook would write)."""
    client = openai.AsyncOpenAI(base_url=url, api_key=key, max_retries=3, timeout=60)
    gate = asyncio.Semaphore(concurrency)

    async def one(prompt: str):
        async with gate:
            return await client.chat.completions.create(
                model="smollm2",
                messages=[{"role": "user", "content": prompt}],
                max_tokens=prompted.MAX_TOKENS["detect"],
                temperature=0,
                logprobs=True,
                top_logprobs=prompted.TOP_LOGPROBS,
            )

    started = time.perf_counter()
    await asyncio.gather(*(one(p) for p in prompts))
    await client.close()
    return time.perf_counter() - started


def lab(store: Path, items: int, label: str) -> tuple[float, str]:
    loading.unload(NAME)
    started = time.perf_counter()
    run_id = batch.predict(
        store, runs.Request(NAME, "falseqa", "detect", split="test", limit=items, chunk=64), progress=False
    )
    seconds = time.perf_counter() - started
    print(f"  lab {label}: {items} items in {seconds:.1f} s ({items / seconds:.2f} items/s)")
    return seconds, run_id


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", type=Path)
    parser.add_argument("--items", type=int, default=120)
    parser.add_argument("--cached-items", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-endpoints-"))
    key = uuid.uuid4().hex
    os.environ.update({"PLAB_DATA_DIR": str(work / "data"), KEY_ENV: key})
    server = llama_server.Server(work / "server.log", key)
    server.start()
    try:
        registry.add_endpoint(
            NAME, base_url=server.url, model="smollm2", api_key_env=KEY_ENV, max_concurrency=args.concurrency
        )
        pristine = existing_store(args.store)
        con = connect(pristine, read_only=True)
        rows = queries.run_inputs(con, "falseqa", "test")
        con.close()
        template = templates.get("detect-zero-shot")
        prompts = [
            template.render(prompted.item_fields(r))
            for r in rows.head(max(args.items, args.cached_items)).to_dict("records")
        ]
        print(
            f"llama.cpp server (llama-cpp-python, one slot: requests are served one at a time), SmolLM2-135M Q4_1, "
            f"2 threads; concurrency {args.concurrency}; FalseQA test, detect-zero-shot"
        )

        # 1. Overhead: bare, lab, bare on the first --items prompts; the lab's cache starts empty.
        overhead = prompts[: args.items]
        first = asyncio.run(bare(server.url, key, overhead, args.concurrency))
        print(f"  bare loop 1: {args.items / first:.2f} items/s")
        store = work / "lab-1.duckdb"
        shutil.copy(pristine, store)
        lab_s, _ = lab(store, args.items, "(nothing cached)")
        second = asyncio.run(bare(server.url, key, overhead, args.concurrency))
        print(f"  bare loop 2: {args.items / second:.2f} items/s")
        ratio = (args.items / lab_s) / (2 * args.items / (first + second))
        print(f"overhead: lab items/s ÷ bare items/s = {ratio:.3f} (target ≥ 0.9)")

        # 2. Cache: a run of --cached-items with an empty cache, then the same run in a fresh store copy.
        shutil.rmtree(work / "data" / "cache")
        store = work / "lab-2.duckdb"
        shutil.copy(pristine, store)
        before = server.completions()
        first_s, _ = lab(store, args.cached_items, "first run")
        sent, stats = server.completions() - before, loading.get(NAME).stats
        store = work / "lab-3.duckdb"
        shutil.copy(pristine, store)
        before = server.completions()
        again_s, _ = lab(store, args.cached_items, "re-run (cached)")
        print(
            f"cache: first {first_s:.1f} s ({sent} requests), re-run {again_s:.2f} s "
            f"({server.completions() - before} requests): {first_s / again_s:.0f}× faster (target ≥ 50×)"
        )
        print(
            f"tokens in the first run: {stats.tokens_in:,} in, {stats.tokens_out:,} out over {sent} requests: "
            f"{stats.tokens_in / first_s:.0f} prompt tokens/s, {stats.tokens_out / first_s:.1f} generated tokens/s; "
            f"latency p50 {stats.latency_ms(0.5):.0f} ms, p95 {stats.latency_ms(0.95):.0f} ms"
        )
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
