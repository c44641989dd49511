"""Command line: `python -m backend ingest | baselines | status | evaluate`.

    python -m backend ingest                      # every dataset, from the first place it is found
    python -m backend ingest --only nope ifqa     # some datasets
    python -m backend ingest --source crepe=~/CREPE/data/labeled_data
    python -m backend baselines                   # trivial + nearest-neighbour baseline runs
    python -m backend status                      # what the store holds
    python -m backend evaluate --dataset nope     # the paper's tables as Markdown + a JSON report
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from backend.datasets import DATASETS


def _source(text: str) -> tuple[str, Path]:
    name, sep, folder = text.partition("=")
    if not sep or name not in DATASETS:
        raise argparse.ArgumentTypeError(f"expected NAME=DIR with NAME one of {sorted(DATASETS)}, got {text!r}")
    return name, Path(folder).expanduser()


def cmd_ingest(args: argparse.Namespace) -> int:
    from backend.ingest import ingest

    results = ingest(args.only, dict(args.source), args.store)
    for r in results:
        counts = ", ".join(f"{v:,} {k}" for k, v in r.counts.items())
        print(f"{r.dataset:8} {r.status:7} {r.message}" + (f"\n         {counts} in {r.seconds:.1f} s" if counts else ""))
    return 1 if any(r.status == "failed" for r in results) else 0


def cmd_baselines(args: argparse.Namespace) -> int:
    from backend import baselines
    from backend.store.connection import connect

    embedder = None
    if not args.no_nn:
        from backend.models.embed import Embedder
        embedder = Embedder()
    con = connect(args.store)
    try:
        for dataset_id, n in baselines.refresh(con, args.only, embedder).items():
            print(f"{dataset_id:8} {n} baseline runs")
    finally:
        con.close()
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from backend.store import queries

    print(queries.split_label_counts(args.con).to_string(index=False))
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from backend import evaluate
    from backend.config import settings

    if args.compare:
        print(evaluate.compare(args.con, args.dataset, *args.compare).to_markdown(index=False, floatfmt=".4g"))
        return 0
    report = evaluate.evaluate(args.con, args.dataset, args.run)
    print(evaluate.markdown(evaluate.paper_view(report) if "summary runs" in report else report))
    path = args.json or settings().data_dir / "reports" / f"{args.dataset}.json"
    evaluate.write_json(report, path)
    print(f"JSON report: {path}")
    return 0


def reading(command):
    """Run `command` with `args.con` open read-only on the store; say how to build it if missing."""
    def run(args: argparse.Namespace) -> int:
        from backend.store.connection import connect

        try:
            args.con = connect(args.store, read_only=True)
        except FileNotFoundError as exc:
            print(exc)
            return 1
        try:
            return command(args)
        finally:
            args.con.close()
    return run


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    parser = argparse.ArgumentParser(prog="python -m backend", description="Presupposition Lab backend")
    parser.add_argument("--store", type=Path, default=None, help="store file (default: $PLAB_STORE or data/presupposition_lab.duckdb)")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("ingest", help="load the datasets into the store")
    p.add_argument("--only", nargs="+", choices=sorted(DATASETS), help="datasets to ingest (default: all)")
    p.add_argument("--source", type=_source, action="append", default=[], metavar="NAME=DIR",
                   help="folder holding one dataset's files (checked before $PLAB_SOURCE_<NAME>, ../shared/datasets, data/raw)")
    p.set_defaults(func=cmd_ingest)
    p = sub.add_parser("baselines", help="write the trivial and nearest-neighbour baseline runs")
    p.add_argument("--only", nargs="+", choices=sorted(DATASETS), help="datasets (default: all loaded)")
    p.add_argument("--no-nn", action="store_true", help="skip the nearest-neighbour baseline (needs the embedder)")
    p.set_defaults(func=cmd_baselines)
    p = sub.add_parser("status", help="what the store holds: examples per dataset, split and label")
    p.set_defaults(func=reading(cmd_status))
    p = sub.add_parser("evaluate", help="metrics and the papers' analyses for a dataset's runs")
    p.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    p.add_argument("--run", nargs="+", help="only these run ids (default: every complete run)")
    p.add_argument("--json", type=Path, help="where to write the JSON report (default: data/reports/<dataset>.json)")
    p.add_argument("--compare", nargs=2, metavar=("RUN_A", "RUN_B"),
                   help="compare two runs on the same items: paired bootstrap and McNemar p-values")
    p.set_defaults(func=reading(cmd_evaluate))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
