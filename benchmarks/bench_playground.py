"""The Playground page's query, warm, on this machine (CPU or GPU): what one click on "Ask" does.

    .venv/bin/python -m benchmarks.bench_playground [--store PATH] [--queries 23]

Per question: the page's retrieval panel (`inspector.side_by_side`, top-20 of one retriever, gold
rank looked up in the top 100) plus one model's live answer (`live.ask`, stored as a live-run row,
as the page does), on a temporary copy of the store so the benchmark leaves yours unchanged.
Distinct FalseQA test questions, so nothing is answered from the cache; the first 3 warm up
(model load, index load) and are left out. Printed beside each: the same question asked again
(the cache hit a researcher gets when comparing) and the ratio to the target (< 1.5 s on CPU).
For open-book QA it also times the prefill alone (one forward pass over the prompt with its five
passages, i.e. generating one token), the part no decoding trick can shorten.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from backend.analysis import retrieval as inspector
from backend.execution import live
from backend.models import availability, loading, prompted, registry
from backend.models.prompts import templates
from backend.retrieval.index import load_all
from backend.store import queries
from backend.store.connection import connect, existing_store

TARGET_MS = 1500
CASES = [  # (model, task, retriever the page shows, retriever the model reads or None)
    ("minilm-fp-falseqa", "detect", "hybrid", None),
    ("minilm-nli", "detect", "hybrid", "hybrid"),
    ("smollm2-135m", "detect", "hybrid", None),
    ("smollm2-135m", "qa", "hybrid", "hybrid"),
]


def click(con, retrievers: dict, model: str, task: str, shown: str, read: str | None, question: str) -> float:
    started = time.perf_counter()
    inspector.side_by_side(con, {shown: retrievers[shown]}, question, 20)
    live.ask(con, live.Query(model=model, task=task, question=question, retriever=read, k=5), retrievers)
    return 1000 * (time.perf_counter() - started)


def prefill(con, retriever, model: str, questions: list[str]) -> tuple[list[float], list[int]]:
    """Per question: ms to generate one token over the open-book prompt, and the prompt's length in tokens."""
    generator, passages = loading.get(model), queries.passage_texts(con)
    times, lengths = [], []
    for question in questions:
        context = [passages[h.doc_id] for h in retriever.search(question, 5)]
        prompt = [templates.get("qa-retrieve-then-read").render(prompted.item_fields({"input": question}), (), context)]
        started = time.perf_counter()
        generator.generate(prompt, max_new_tokens=1)
        times.append(1000 * (time.perf_counter() - started))
        lengths.append(
            len(generator.tokenizer.apply_chat_template([{"role": "user", "content": prompt[0]}])["input_ids"])
        )
    return times, lengths


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", default=None)
    parser.add_argument("--queries", type=int, default=23)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "bench.duckdb"
        shutil.copy(existing_store(args.store), copy)
        con = connect(copy)
        retrievers = load_all(con)
        questions = list(queries.run_inputs(con, "falseqa", "test")["input"].sample(args.queries, random_state=2))
        print(
            f"Playground 'Ask', warm: top-20 retrieval panel + one model, stored; median / p95 over "
            f"{len(questions) - 3} new questions, then the same questions again (cache)"
        )
        for model, task, shown, read in CASES:
            if not availability.status(registry.spec(model))[0]:
                print(f"   {model:18} {task:6}: not available here, skipped")
                continue
            live.clear_cache()
            new = [click(con, retrievers, model, task, shown, read, q) for q in questions][3:]
            again = [click(con, retrievers, model, task, shown, read, q) for q in questions][3:]
            median = statistics.median(new)
            reads = f"reads {read} top-5" if read else "question only"
            print(
                f"   {model:18} {task:6} ({reads:17}) new: median {median:6.0f} ms  p95 {np.percentile(new, 95):6.0f} "
                f"ms"
                f"  = {median / TARGET_MS:.2f} of the {TARGET_MS} ms target   again: median "
                f"{statistics.median(again):5.0f} ms"
            )
            if task == "qa" and read:
                times, lengths = prefill(con, retrievers[read], model, questions[3:])
                print(
                    f"   {'':18} of which the prefill alone (prompt median {statistics.median(lengths):.0f} tokens): "
                    f"median {statistics.median(times):6.0f} ms  = {statistics.median(times) / TARGET_MS:.2f} of the "
                    f"target"
                )
        con.close()


if __name__ == "__main__":
    main()
