"""What `benchmarks.bench_gpu` needs, in one folder of at most 60 MiB, for a GPU machine that cannot reach the package
index or this lab's store (issue 48): the bundled MiniLM in bf16 (weights, tokenizer, sentence-transformers
configuration), the wiki corpus, NOPE's main pairs and the NLI training pairs with their held-out split, as
zstd-compressed Parquet, and a manifest (counts, sizes, SHA-256 of each file).

    .venv/bin/python -m benchmarks.gpu_extract --out data/gpu_extract [--store data/presupposition_lab.duckdb]
    .venv/bin/python -m benchmarks.gpu_extract --out /tmp/small --small      # a few hundred items (CI)

`data/` is ignored by git: copy the folder (and the checkout) to the GPU machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import torch
from transformers import AutoModel, AutoTokenizer

from backend.models.embed import packaged_minilm
from backend.store.access import session
from backend.store.passages import corpus_passages
from backend.store.queries import examples_frame
from backend.training import nli_data
from backend.training.recipes import HELDOUT_CAP

LIMIT = 60 * 2**20
SMALL = {"corpus": 200, "nope": 100, "train": 300, "heldout": 100}
SENTENCE_TRANSFORMERS = ("modules.json", "sentence_bert_config.json", "config_sentence_transformers.json", "1_Pooling")


def write(out: Path, store: str | None, small: bool) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    source = packaged_minilm()
    AutoModel.from_pretrained(source, local_files_only=True).to(torch.bfloat16).save_pretrained(out / "minilm")
    AutoTokenizer.from_pretrained(source, local_files_only=True).save_pretrained(out / "minilm")
    for name in SENTENCE_TRANSFORMERS:  # so sentence-transformers loads the same weights with the same pooling
        found = source / name
        if found.is_dir():
            shutil.copytree(found, out / "minilm" / name, dirs_exist_ok=True)
        elif found.is_file():
            shutil.copy(found, out / "minilm" / name)
    with session(store) as con:
        doc_ids, texts = corpus_passages(con, "wiki")
        nope = examples_frame(con, "nope")
    corpus = pd.DataFrame({"doc_id": doc_ids, "text": texts})
    nope = nope[nope["split"] == "main"].reset_index()[["example_id", "input", "hypothesis", "gold_label"]]
    pairs = nli_data.load()
    fit, heldout = nli_data.heldout_split(pairs, 0.05)
    heldout = heldout.sample(min(HELDOUT_CAP, len(heldout)), random_state=0)
    if small:
        corpus, nope = corpus.head(SMALL["corpus"]), nope.head(SMALL["nope"])
        fit, heldout = fit.sample(SMALL["train"], random_state=0), heldout.head(SMALL["heldout"])
    frames = {
        "corpus": corpus,
        "nope": nope.rename(columns={"input": "premise", "gold_label": "label"}),
        "nli_train": fit[["premise", "hypothesis", "label", "source"]],
        "nli_heldout": heldout[["premise", "hypothesis", "label", "source"]],
    }
    for name, frame in frames.items():
        frame.reset_index(drop=True).to_parquet(out / f"{name}.parquet", compression="zstd", index=False)
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.name != "manifest.json")
    manifest = {
        "rows": {name: len(frame) for name, frame in frames.items()},
        "small": small,
        "files": {
            str(p.relative_to(out)): {"bytes": p.stat().st_size, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
            for p in files
        },
    }
    manifest["bytes"] = sum(f["bytes"] for f in manifest["files"].values())
    if manifest["bytes"] > LIMIT:
        raise SystemExit(f"the extract is {manifest['bytes'] / 2**20:.1f} MiB, over its {LIMIT / 2**20:.0f} MiB")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("data/gpu_extract"))
    parser.add_argument("--store", help="the lab's store (default: $PLAB_STORE or data/presupposition_lab.duckdb)")
    parser.add_argument("--small", action="store_true", help="a few hundred items: the benchmark's CPU mode in CI")
    args = parser.parse_args()
    manifest = write(args.out, args.store, args.small)
    rows = ", ".join(f"{name} {n:,}" for name, n in manifest["rows"].items())
    print(f"wrote {args.out}: {manifest['bytes'] / 2**20:.1f} MiB ({rows})")


if __name__ == "__main__":
    main()
