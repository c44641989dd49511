"""The GPU benchmark cannot rot (issue 48, item 4): a small extract from the real store and the NLI sources, and the
benchmark's CPU mode run on it in a process of its own, as on an air-gapped GPU machine: it measures every part,
says what it skipped, and imports nothing of the lab beyond its model and training code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks import gpu_extract

ROOT = Path(__file__).resolve().parents[1]


def test_a_small_extract_and_the_cpu_mode_of_the_benchmark(real_store, tmp_path):
    manifest = gpu_extract.write(tmp_path / "extract", str(real_store), small=True)
    assert manifest["rows"] == {"corpus": 200, "nope": 100, "nli_train": 300, "nli_heldout": 100}
    assert manifest["bytes"] <= gpu_extract.LIMIT and "minilm/model.safetensors" in manifest["files"]
    assert (tmp_path / "extract" / "minilm" / "modules.json").is_file()  # sentence-transformers reads the same
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.bench_gpu",
            "--extract",
            str(tmp_path / "extract"),
            "--cpu",
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["mode"] == "cpu" and results["lab_modules_only"]
    embedder = results["embedder"]
    assert embedder["passages"] == 200 and embedder["min_cosine_lab_vs_bare"] >= 0.999
    assert embedder["min_cosine_lab_vs_st"] >= 0.999 and embedder["lab_vs_st64"] > 0  # the same weights
    assert results["classifier"]["pairs"] == 100 and results["classifier"]["lab_vs_bare"] > 0
    assert "skipped" in results["faiss"]["gpu"] and results["faiss"]["cpu_queries_per_s"] > 0
    assert 0 <= results["training"]["heldout_accuracy"] <= 1 and results["training"]["pairs"] == 300
    assert "embedder: passages 200" in done.stdout
