"""A fresh set-up's install (issue 28 item 6): pip compiling every installed module to bytecode (its default,
the baseline) against `--no-compile` with Python writing a module's bytecode on its first import (scripts/setup.sh
now), side by side in fresh venvs, round by round. After each install, the lab's imports run twice: the first pays
for the lazy compiling, the second is what every later process pays.

    python3 -m benchmarks.bench_install [--rounds 2]

Uses pip's cache or local wheels as they are (warm, as on CI); each venv is made in a temporary folder and removed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMPORTS = (
    "import torch, transformers, streamlit, duckdb, pandas, sklearn, scipy.stats, faiss, bm25s, altair, openai, ray"
)
PIP = [
    ["-r", "requirements.txt", "-r", "requirements-dev.txt"],
    ["--no-deps", "-r", "requirements-nodeps.txt"],
]


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def one(mode: str) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if mode == "compile at install":
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # as before: pip compiled everything, nothing written at import
    flags = ["--no-compile"] if mode == "compile on import" else []
    with tempfile.TemporaryDirectory() as folder:
        python = str(Path(folder) / "bin" / "python")
        subprocess.run([sys.executable, "-m", "venv", folder], check=True)
        install = sum(timed([python, "-m", "pip", "install", "--quiet", *flags, *args], env) for args in PIP)
        first = timed([python, "-c", IMPORTS], env)
        second = timed([python, "-c", IMPORTS], env)
    return {"install": install, "first import": first, "later import": second, "install + first": install + first}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    modes = ("compile at install", "compile on import")
    for round_ in range(1, args.rounds + 1):
        results = {mode: one(mode) for mode in modes}
        print(f"round {round_}")
        for key in results[modes[0]]:
            base, now = (results[mode][key] for mode in modes)
            print(f"  {key:>16}: {base:7.1f} s at install, {now:7.1f} s on import ({now / base:.2f}x)")


if __name__ == "__main__":
    main()
