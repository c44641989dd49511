"""Command line: `python -m backend ingest | baselines | index | status | evaluate | predict | train | models
| import-run | import-dataset | delete-run | user-runs | judge | judges | rating-task | backup | backups | restore`.
Every command shares the store with a running dashboard.

    python -m backend ingest                      # every dataset, from the first place it is found
    python -m backend ingest --only nope ifqa     # some datasets
    python -m backend ingest --source crepe=~/CREPE/data/labeled_data
    python -m backend baselines                   # trivial + nearest-neighbour baseline runs
    python -m backend index                       # BM25 + dense + hybrid indexes (data/indexes/), evaluated on IfQA
    python -m backend status                      # what the store holds
    python -m backend evaluate --dataset nope     # the paper's tables as Markdown + a JSON report
    python -m backend predict --model smollm2-135m --dataset falseqa --split test
    python -m backend train nli                   # ~25 min on 2 CPU cores
    python -m backend models                      # what is registered, installed, missing (endpoints probed)
    python -m backend models add my-llm --base-url http://localhost:8000/v1 --model M --api-key-env MY_KEY
    python -m backend prompts                     # the prompt templates
    python -m backend predict --model my-llm --dataset nope --template nli-few-shot --max-cost 2
    python -m backend import-run preds.csv --dataset nope --model my-roberta   # your predictions as a run
    python -m backend judge --model my-llm --run RUN --rubric judge-crepe-writing   # an LLM scores a run's outputs
    python -m backend backup                      # your runs, ratings and datasets as Parquet (restore puts them back)
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import duckdb
import pandas as pd

from backend.actions import jobs as job_actions
from backend.actions import models as model_actions
from backend.cli import imports as import_cli
from backend.cli import judges as judges_cli
from backend.cli import people as people_cli
from backend.cli import ratings as ratings_cli
from backend.cli import store as store_cli
from backend.cli import studies as studies_cli
from backend.config import settings
from backend.datasets import DATASETS, baselines
from backend.datasets.catalogue import UnknownDataset, describe
from backend.identity.actor import terminal, use_terminal
from backend.models import registry
from backend.models.output import RunStopped
from backend.models.prompts.templates import TemplateProblem
from backend.store import queries
from backend.store import runs as store_runs
from backend.store.access import StoreBusy, session
from backend.store.connection import StoreDamaged, damaged, store_path
from backend.store.ids import JOINER
from backend.store.migrations import StoreTooNew


def _source(text: str) -> tuple[str, Path]:
    name, sep, folder = text.partition("=")
    if not sep or name not in DATASETS:
        raise argparse.ArgumentTypeError(f"expected NAME=DIR with NAME one of {sorted(DATASETS)}, got {text!r}")
    return name, Path(folder).expanduser()


def cmd_ingest(args: argparse.Namespace) -> int:
    from backend.imports.ingest import ingest  # lazy: start-up time (torch, faiss, scipy load on use)

    results = ingest(args.only, dict(args.source), args.store, progress=True)
    return 1 if any(r.status == "failed" for r in results) else 0


def cmd_baselines(args: argparse.Namespace) -> int:

    embedder = None
    if not args.no_nn:
        from backend.models.embed import Embedder  # lazy: start-up time (torch, faiss, scipy load on use)

        embedder = Embedder()
    for dataset_id, n in baselines.refresh(args.con, args.only, embedder).items():
        print(f"{dataset_id:8} {n} baseline runs")
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    from backend.execution import executors  # lazy: start-up time (torch, faiss, scipy load on use)
    from backend.retrieval.evaluate import evaluate_retrievers  # lazy: start-up time (torch, faiss, scipy load on use)
    from backend.retrieval.index import build_all  # lazy: start-up time (torch, faiss, scipy load on use)

    try:
        shards = (lambda texts: executors.embed_shards(texts, address=args.address)) if args.engine == "ray" else None
        retrievers = build_all(args.con, args.corpus, dense_kind=args.dense_kind, shards=shards)
    except LookupError as exc:
        print(exc)
        return 1
    if not args.no_evaluate:
        table = evaluate_retrievers(
            args.con, retrievers, args.dataset, tuple(args.splits), args.k, corpus_id=args.corpus
        )
        print(table.to_markdown(index=False, floatfmt=".3f"))
    return 0


def cmd_map(args: argparse.Namespace) -> int:
    from backend.views import map as embedding_map  # lazy: start-up time (torch, umap)

    try:
        with session(args.store) as con:  # read the texts; embedding and UMAP run with the store closed
            target, items = embedding_map.path(con, args.dataset, args.method), embedding_map.texts(con, args.dataset)
        if target.is_file() and not args.force:
            print(f"{args.dataset}: the {args.method} map is cached at {target}")
            return 0
        target, timing = embedding_map.build(target, items, args.method, progress=True)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}")
        return 1
    print(f"written to {target}")  # the last line is the summary the Map page shows, without a server path
    print(
        f"{args.dataset}: {timing['items']:,} items mapped by {args.method} (embed {timing['embed_s']:.1f} s, "
        f"reduce {timing['reduce_s']:.1f} s)"
    )
    return 0


def cmd_status(args: argparse.Namespace) -> int:

    print(queries.split_label_counts(args.con).to_string(index=False))
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from backend.analysis import evaluation  # lazy: start-up time (torch, faiss, scipy load on use)

    if args.compare:
        print(evaluation.compare(args.con, args.dataset, *args.compare).to_markdown(index=False, floatfmt=".4g"))
        return 0
    describe(args.con, args.dataset)  # an unknown dataset says which are loaded
    try:
        report = evaluation.evaluate(args.con, args.dataset, args.run)
    except evaluation.UnknownRuns as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(evaluation.markdown(evaluation.paper_view(report) if "summary runs" in report else report))
    path = args.json or settings().data_dir / "reports" / f"{args.dataset}.json"
    evaluation.write_json(report, path)
    print(f"JSON report: {path}")
    return 0


def cmd_predict(args: argparse.Namespace) -> int:
    from backend.execution import batch, runs  # lazy: start-up time (torch, faiss, scipy load on use)

    request = runs.Request(
        model=args.model,
        dataset=args.dataset,
        task=args.task,
        split=args.split,
        retriever=args.retriever,
        k=args.k,
        limit=args.limit,
        template=args.template,
        shots=args.shots,
        samples=args.samples,
        temperature=args.temperature,
    )
    retrievers = None
    try:
        if args.retriever and args.engine == "local":  # Ray actors load the saved indexes themselves
            from backend.retrieval.index import load_all  # lazy: start-up time (torch, faiss, scipy load on use)

            with session(args.store) as con:
                retrievers = load_all(con)
        # opens the store per chunk: the dashboard stays usable
        run_id = batch.predict(
            args.store,
            request,
            retrievers,
            engine=args.engine,
            address=args.address,
            max_cost=args.max_cost,
            allowed=job_actions.job_check("run model", f"{args.dataset}/{args.model}"),
        )
    except FileNotFoundError as exc:  # no store, or no index
        print(exc)
        return 1
    except RunStopped as exc:  # the server went away, a key was refused, a budget was reached
        print(
            f"error: the run stopped: {exc}\nWhat was done is stored; the same command resumes the run.",
            file=sys.stderr,
        )
        return 1
    except (ValueError, TemplateProblem) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    with session(args.store) as con:
        state = store_runs.status(con, run_id)
    print(
        f"run {run_id}: {state['status']}, {state['predictions']:,} predictions of which {state['parsed']:,} parsed "
        f"answers, in {state['seconds'] or 0:.1f} s"
    )
    return 0


def _training_summary(con: duckdb.DuckDBPyConnection, dataset: str, splits: list[str] | None = None) -> pd.DataFrame:
    """Accuracy of every complete run on the dataset's splits (default: all), for the closing print-out."""
    from backend.analysis import evaluation  # lazy: start-up time (torch, faiss, scipy load on use)

    table = evaluation.evaluate(con, dataset)["Accuracy and macro-F1 per run and split (95% bootstrap CI)"]
    return table[table["split"].isin(splits or table["split"])][["run", "split", "accuracy", "macro-F1", "n"]]


def cmd_train(args: argparse.Namespace) -> int:
    from backend.training import recipes  # lazy: start-up time (torch, faiss, scipy load on use)

    if args.what == "nli":
        card = recipes.train_nli(args.minutes, tuple(args.without), args.examples, args.epochs, args.base)
    else:
        with session(args.store) as con:
            frames = recipes.detector_data(con, args.dataset)
        card = recipes.train_detector(args.dataset, frames, args.minutes or 3, args.epochs)
    print(
        f"held-out accuracy {card.get('heldout_accuracy', float('nan')):.3f} on {card.get('heldout_examples')} "
        f"examples after {card['minutes']} min ({card['examples_seen']:,} examples seen)"
    )
    if args.what == "nli":  # the store is opened only now, per chunk of the evaluation runs
        done = recipes.evaluate_nli(store_path(args.store), recipes.nli_model(tuple(args.without), args.base))
        with session(args.store) as con:
            for dataset in done:
                print(f"\n{dataset}:\n" + _training_summary(con, dataset).to_markdown(index=False))
        return 0
    with session(args.store) as con:
        recipes.evaluate_detector(con, args.dataset)
        _, dev, evaluation = recipes.detect_splits(con, args.dataset)
        table = _training_summary(con, args.dataset, list(dict.fromkeys((dev, *evaluation))))
    print(table.to_markdown(index=False))
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from backend.models import availability  # lazy: start-up time (torch, faiss, scipy load on use)

    if getattr(args, "action", None) == "add":
        try:
            if store_path(args.store).exists():
                with session(args.store) as con:
                    path = _add_endpoint(con, args)
            else:  # before the first ingest: no store to audit into yet
                path = _add_endpoint(None, args)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"registered {args.name} in {path}")
    for model in registry.specs().values():
        available, line = availability.status(model)
        where = "endpoint" if model.is_endpoint else model.task
        print(f"{'ok     ' if available else 'MISSING'} {where:8} {line}")
    return 0


def _add_endpoint(con, args: argparse.Namespace):
    return model_actions.add_endpoint(
        con,
        args.name,
        actor=terminal(),
        base_url=args.base_url,
        model=args.model,
        api_key_env=args.api_key_env,
        tasks=args.task,
        max_concurrency=args.max_concurrency,
        timeout_s=args.timeout_s,
        price_in=args.price_in,
        price_out=args.price_out,
        daily_cap=args.daily_cap,
        person_daily_cap=args.person_daily_cap,
        quality=args.quality,
    )


def cmd_prompts(args: argparse.Namespace) -> int:
    from backend.models.prompts import templates  # lazy: start-up time (torch, faiss, scipy load on use)

    try:
        found = templates.all_templates()
    except TemplateProblem as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for template in sorted(found.values(), key=lambda t: (t.task, t.name)):
        shots = f", {template.shots} shots" if template.shots else ""
        print(f"{template.task:7} {template.ref:28} {template.strategy}{shots}  {template.path}")
    print(f"Add your own: a .j2 file in {templates.user_folder()} (see backend/models/prompts/templates.py)")
    return 0


def with_store(create: bool):
    """Run a command with `args.con`, a session on the store (shared with the dashboard and other
    commands: see backend.store.access); a missing store, unless `create`, says how to build it."""

    def wrap(command):
        def run(args: argparse.Namespace) -> int:
            try:
                with session(args.store, create=create) as con:
                    args.con = con
                    return command(args)
            except FileNotFoundError as exc:
                print(exc)
                return 1

        return run

    return wrap


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("faiss").setLevel(logging.WARNING)  # "Loading faiss with AVX2 support." is news, not a problem
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # the openai client's transport logs every request
    parser = argparse.ArgumentParser(prog="python -m backend", description="Presupposition Lab backend")
    parser.add_argument(
        "--store", type=Path, default=None, help="store file (default: $PLAB_STORE or data/presupposition_lab.duckdb)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("ingest", help="load the datasets into the store")
    p.add_argument("--only", nargs="+", choices=sorted(DATASETS), help="datasets to ingest (default: all)")
    p.add_argument(
        "--source",
        type=_source,
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="folder holding one dataset's files (checked before $PLAB_SOURCE_<NAME>, ../shared/datasets, data/raw)",
    )
    p.set_defaults(func=cmd_ingest)
    p = sub.add_parser("baselines", help="write the trivial and nearest-neighbour baseline runs")
    p.add_argument("--only", nargs="+", help="datasets (default: every loaded classification dataset)")
    p.add_argument("--no-nn", action="store_true", help="skip the nearest-neighbour baseline (needs the embedder)")
    p.set_defaults(func=with_store(create=True)(cmd_baselines))
    p = sub.add_parser(
        "index", help="build (or reuse) the BM25, dense and hybrid indexes of a corpus and evaluate them"
    )
    p.add_argument("--corpus", default="wiki", help="passages.corpus_id to index (default: wiki)")
    p.add_argument(
        "--dense-kind",
        choices=["flat", "hnsw", "ivfpq"],
        default="flat",
        help="FAISS index: exact (flat), HNSW, or IVF-PQ (compressed, for millions of passages)",
    )
    p.add_argument("--dataset", default="ifqa", help="dataset whose qrels score the retrievers (default: ifqa)")
    p.add_argument("--splits", nargs="+", default=["S-dev", "S-test"])
    p.add_argument("--k", type=int, default=100, help="hits per question (at most 100 are stored)")
    p.add_argument("--no-evaluate", action="store_true", help="only build the indexes")
    p.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="embed the passages here or on Ray (parallel actors; the index is built here)",
    )
    p.add_argument("--address", help="with --engine ray: a running cluster (default: a local one)")
    p.set_defaults(func=with_store(create=True)(cmd_index))
    p = sub.add_parser("map", help="the 2-D embedding map of a dataset's inputs (UMAP or PCA), cached for the Map page")
    p.add_argument("dataset")
    p.add_argument("--method", choices=["umap", "pca"], default="umap")
    p.add_argument("--force", action="store_true", help="recompute even when the map is cached")
    p.set_defaults(func=cmd_map)
    p = sub.add_parser("status", help="what the store holds: examples per dataset, split and label")
    p.set_defaults(func=with_store(create=False)(cmd_status))
    p = sub.add_parser("evaluate", help="metrics and the papers' analyses for a dataset's runs")
    p.add_argument("--dataset", required=True, help="a loaded dataset, built-in or yours")
    p.add_argument("--run", nargs="+", help="only these run ids (default: every complete run)")
    p.add_argument("--json", type=Path, help="where to write the JSON report (default: data/reports/<dataset>.json)")
    p.add_argument(
        "--compare",
        nargs=2,
        metavar=("RUN_A", "RUN_B"),
        help="compare two runs on the same items: paired bootstrap and McNemar p-values",
    )
    p.set_defaults(func=with_store(create=False)(cmd_evaluate))
    p = sub.add_parser("predict", help="run a registered model over a dataset as a stored, resumable run")
    p.add_argument("--model", required=True)
    p.add_argument("--dataset", required=True, help="a loaded dataset, built-in or yours")
    p.add_argument("--task", choices=["nli", "detect", "qa", "write"], help="default: the dataset's task")
    p.add_argument("--split")
    p.add_argument("--retriever", choices=["bm25", "dense", "hybrid"])
    p.add_argument("--k", type=int, default=5, help="passages to retrieve (default 5)")
    p.add_argument("--limit", type=int, help="only the first N examples")
    p.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="where the chunks run: here, or on Ray (one model per actor; resumes across engines)",
    )
    p.add_argument("--address", help="with --engine ray: a running cluster (e.g. HEAD:6379); default: a local one")
    p.add_argument(
        "--template",
        help="generators and endpoints: the prompt template (`python -m backend prompts`; "
        "default: the task's zero-shot one, retrieve-then-read with --retriever)",
    )
    p.add_argument("--shots", type=int, help="few-shot templates: demonstrations per item (default: the template's)")
    p.add_argument(
        "--samples",
        type=int,
        default=0,
        help="label probabilities from N sampled responses (self-consistency) instead of log-probabilities",
    )
    p.add_argument("--temperature", type=float, help="decoding temperature (default: the model's; 0.7 with --samples)")
    p.add_argument("--max-cost", type=float, help="endpoints: stop before this call's spending (USD) would pass this")
    p.set_defaults(func=cmd_predict)
    p = sub.add_parser("train", help="fine-tune the bundled MiniLM: an NLI cross-encoder or a question-only detector")
    p.add_argument("what", choices=["nli", "detect"])
    p.add_argument("--dataset", default="falseqa", help="for detect: the dataset whose train split to use")
    p.add_argument(
        "--minutes", type=float, help="wall-clock budget (default: nli 25 on a CPU, 60 as a guard on a GPU; detect 3)"
    )
    p.add_argument(
        "--epochs",
        type=float,
        help="passes over the training data (default: nli 1 on a CPU, cut by the budget, and 3 on a GPU; detect 3)",
    )
    p.add_argument(
        "--base",
        type=Path,
        help="nli: fine-tune this local encoder folder (e.g. a DeBERTa you downloaded) instead of the bundled MiniLM; "
        "the model is registered as <folder name>-nli in data/registry.local.toml",
    )
    p.add_argument(
        "--without",
        nargs="+",
        default=[],
        metavar="SOURCE",
        help="nli: leave these training sources out (e.g. imppres, to evaluate on it uncontaminated); "
        "the model is registered as minilm-nli-without-SOURCE",
    )
    p.add_argument(
        "--examples",
        type=int,
        default=0,
        help="nli: stop after this many training examples (a fixed amount of work, for fair comparisons)",
    )
    p.set_defaults(func=cmd_train)
    p = sub.add_parser("models", help="registered models and whether each can be loaded here (endpoints are probed)")
    p.set_defaults(func=cmd_models)
    models_sub = p.add_subparsers(dest="action")
    add = models_sub.add_parser("add", help="register an OpenAI-compatible endpoint in data/registry.local.toml")
    add.add_argument("name")
    add.add_argument(
        "--base-url", required=True, help="e.g. http://localhost:8000/v1 (vLLM), http://localhost:11434/v1 (Ollama)"
    )
    add.add_argument("--model", required=True, help="the model name the server serves")
    add.add_argument(
        "--api-key-env", default="", help="the NAME of the environment variable holding the key (never the key)"
    )
    add.add_argument(
        "--task", nargs="+", choices=["nli", "detect", "qa", "write"], help="tasks to offer it for (default: all)"
    )
    add.add_argument("--max-concurrency", type=int, default=4)
    add.add_argument("--timeout-s", type=float, default=60.0)
    add.add_argument("--price-in", type=float, default=0.0, help="USD per million input tokens")
    add.add_argument("--price-out", type=float, default=0.0, help="USD per million output tokens")
    add.add_argument("--daily-cap", type=float, help="USD per day (UTC) for the Playground and batch runs together")
    add.add_argument(
        "--person-daily-cap", type=float, help="USD per person per day (UTC): each signed-in person's share"
    )
    add.add_argument("--quality", help="an honest note shown beside its answers")
    add.set_defaults(func=cmd_models)
    p = sub.add_parser("prompts", help="the prompt templates (built in and yours in data/prompts/)")
    p.set_defaults(func=cmd_prompts)
    import_cli.add(sub)
    judges_cli.add(sub)
    ratings_cli.add(sub)
    store_cli.add(sub)
    people_cli.add(sub)
    studies_cli.add(sub)
    # an id copied from a page may carry the Markdown rule's invisible word joiner: no argument means one
    args = parser.parse_args([arg.replace(JOINER, "") for arg in (sys.argv[1:] if argv is None else argv)])
    use_terminal()  # a write here is the terminal user's, as the owner (the owner's tool on a server too)
    try:
        action = job_actions.batch_action(args.command, getattr(args, "action", None))
        if action is None:
            return args.func(args)
        said = " ".join(sys.argv[1:] if argv is None else argv)[:500]
        target = str(getattr(args, "dataset", None) or getattr(args, "study", None) or getattr(args, "run", None) or "")
        try:
            return job_actions.run_batch(args.store, action, target, said, lambda: args.func(args))
        except job_actions.CommandFailed as exc:
            return exc.status
    except (StoreBusy, StoreDamaged, StoreTooNew) as exc:  # busy longer than $PLAB_STORE_WAIT, or damaged
        print(f"Could not open the store: {exc}", file=sys.stderr)
        return 1
    except duckdb.Error as exc:
        problem = damaged(exc, args.store)
        if problem is None:
            raise
        print(problem, file=sys.stderr)
        return 1
    except (UnknownDataset, PermissionError) as exc:  # Forbidden: a refused write, already audited
        print(f"error: {exc}", file=sys.stderr)
        return 1
