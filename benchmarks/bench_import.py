"""Time bringing your own work in: a 1,000,000-example dataset, 1,000,000 predictions from Parquet and
CSV, 100,000 rows matched by text, and Explore over the imported 1M-row run.

    .venv/bin/python -m benchmarks.bench_import [--store PATH] [--rows 1000000] [--text-rows 100000]

Works on a copy of the store in a temporary folder (the original is only read). The synthetic
dataset has NOPE-like premise/hypothesis pairs with unique texts, E/N/C gold labels, a split and a
genre facet; the predictions have word labels and one probability column per label. Each line
prints seconds, the target and the ratio (measured / target), and beside it the baseline: reading
the same file with pyarrow alone, the floor any import has to pay.
Targets (issue 11): Parquet < 10 s, CSV < 20 s, 100k rows by text < 5 s, Explore slice < 100 ms.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from backend.config import settings
from backend.imports import datasets as user_datasets
from backend.imports import predictions
from backend.imports.files import read
from backend.store.access import session
from backend.store.examples import Slice
from backend.views import explore

WORDS = np.array(["entailment", "neutral", "contradiction"])


def synthetic(rows: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    ids = np.char.add("x", np.arange(rows).astype(str))
    dataset = pd.DataFrame(
        {
            "id": ids,
            "premise": np.char.add("The lab stopped counting item number ", ids),
            "hypothesis": np.char.add("The lab counted item ", ids),
            "label": WORDS[rng.integers(0, 3, rows)],
            "split": np.where(rng.random(rows) < 0.5, "dev", "test"),
            "genre": rng.choice(["news", "fiction", "spoken", "academic"], rows),
        }
    )
    probs = rng.dirichlet([1, 1, 1], rows)
    preds = pd.DataFrame(
        {
            "id": ids,
            "predicted_label": WORDS[probs.argmax(axis=1)],
            "prob_entailment": probs[:, 0],
            "prob_neutral": probs[:, 1],
            "prob_contradiction": probs[:, 2],
        }
    )
    return dataset, preds


def timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def import_run(store: Path, path: Path, model: str) -> predictions.Report:
    """What `python -m backend import-run` does: read, check against the store, save in one transaction."""
    table = read(path)
    with session(store) as con:
        plan = predictions.plan(con, table, predictions.Options(dataset="bench", model=model))
        assert plan.report.ok, plan.report.summary()
        predictions.save(con, plan)
    return plan.report


def line(what: str, seconds: float, target: float, baseline: float | None = None) -> None:
    floor = f"  (pyarrow read alone {baseline:6.2f} s, import / read {seconds / baseline:4.1f}×)" if baseline else ""
    print(f"{what:46} {seconds:7.2f} s  target {target:5.1f} s  ratio {seconds / target:4.2f}{floor}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", default=str(settings().store_path))
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--text-rows", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        store = root / "bench.duckdb"
        shutil.copyfile(args.store, store)
        dataset, preds = synthetic(args.rows)
        pq.write_table(pa.Table.from_pandas(dataset), root / "dataset.parquet")
        pq.write_table(pa.Table.from_pandas(preds), root / "preds.parquet")
        preds.to_csv(root / "preds.csv", index=False)
        text = preds.head(args.text_rows).merge(dataset[["id", "premise", "hypothesis"]], on="id").drop(columns="id")
        text.sample(frac=1, random_state=0).to_csv(root / "text.csv", index=False)
        print(
            f"{args.rows:,} examples and predictions; files: Parquet "
            f"{(root / 'preds.parquet').stat().st_size / 2**20:.0f} MiB, "
            f"CSV {(root / 'preds.csv').stat().st_size / 2**20:.0f} MiB"
        )

        seconds, _ = timed(lambda: _import_dataset(store, root / "dataset.parquet"))
        print(f"{'import-dataset, ' + format(args.rows, ',') + ' examples (Parquet)':46} {seconds:7.2f} s  (no target)")
        parquet_read, _ = timed(lambda: pq.read_table(root / "preds.parquet"))
        seconds, report = timed(lambda: import_run(store, root / "preds.parquet", "from-parquet"))
        assert report.matched == args.rows
        line(f"import-run {args.rows:,} rows from Parquet (by id)", seconds, 10, parquet_read)
        csv_read, _ = timed(lambda: pacsv.read_csv(root / "preds.csv"))
        seconds, report = timed(lambda: import_run(store, root / "preds.csv", "from-csv"))
        assert report.matched == args.rows
        line(f"import-run {args.rows:,} rows from CSV (by id)", seconds, 20, csv_read)
        text_read, _ = timed(lambda: pacsv.read_csv(root / "text.csv"))
        seconds, report = timed(lambda: import_run(store, root / "text.csv", "by-text"))
        assert report.matched == args.text_rows and report.match_by.startswith("text")
        line(f"import-run {args.text_rows:,} rows matched by text", seconds, 5, text_read)
        explore_slices(store)


def _import_dataset(store: Path, path: Path) -> None:
    bundle, _ = user_datasets.check(read(path), user_datasets.DatasetOptions(name="bench", task="nli"))
    with session(store) as con:
        user_datasets.save(con, bundle)


def explore_slices(store: Path, repeat: int = 5) -> None:
    run = "bench/user/from-parquet"
    slices = {
        "whole dataset": (),
        "split test, gold N": (("split", ("test",)), ("gold_label", ("N",))),
        "genre news (a facet of the file), predicted E": (("extra.genre", ("news",)), ("label_a", ("E",))),
    }
    with session(store) as con:
        for name, filters in slices.items():
            for what, fn in (
                ("rows", lambda f=filters: explore.slice_frame(con, Slice("bench", f, run_a=run))),
                ("count", lambda f=filters: explore.slice_count(con, Slice("bench", f, run_a=run))),
                ("summary", lambda f=filters: explore.slice_summary(con, Slice("bench", f, run_a=run))),
            ):
                times = [timed(fn)[0] * 1000 for _ in range(repeat)]
                median = statistics.median(times)
                print(
                    f"Explore, 1M-row run: {name + ' (' + what + ')':58} median {median:6.1f} ms  target 100 ms  "
                    f"ratio {median / 100:4.2f}"
                )


if __name__ == "__main__":
    main()
