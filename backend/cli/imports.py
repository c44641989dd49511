"""The import commands of `python -m backend`: import-run, import-dataset, generate, generate-pairs, delete-run,
user-runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from backend.actions import datasets as dataset_actions
from backend.actions import runs as run_actions
from backend.datasets.base import DataError
from backend.datasets.description import Description
from backend.harnesses import logs, tasks
from backend.identity.actor import terminal
from backend.imports import datasets, predictions
from backend.imports.files import read
from backend.models import training_data
from backend.store.access import session


def pairs(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key or not value:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def add(sub) -> None:
    p = sub.add_parser(
        "import-run",
        help="import your model's predictions (CSV/TSV/JSONL/JSON/Parquet, an lm-eval --log_samples JSONL or an "
        "Inspect .eval log) as a run",
        description="Match each row to an example (by id, or by normalised text), map labels and "
        "probabilities, print a validation report, and store the run unless the report has problems. "
        "An lm-evaluation-harness samples file or an Inspect log is recognised by its content.",
    )
    p.add_argument("file", type=Path)
    p.add_argument("--dataset", required=True, help="the stored dataset the predictions are for")
    p.add_argument("--model", help="model name (default: the file name)")
    p.add_argument("--revision", help="model revision or checkpoint, kept as provenance")
    p.add_argument("--notes", help="free text kept with the run")
    p.add_argument(
        "--trained-on",
        default="",
        metavar="DATASETS",
        help="datasets the model was trained on, comma-separated (name, or name:split); a run on one "
        "of them is flagged as contaminated and left out of default comparisons",
    )
    p.add_argument("--run-id", help="default: <dataset>/user/<model>")
    p.add_argument(
        "--map",
        type=pairs,
        action="append",
        default=[],
        metavar="ROLE=COLUMN",
        help="which column plays a role: example_id, premise, hypothesis, question, split, label, probs, "
        "logits, answer, presupposition, correction",
    )
    p.add_argument(
        "--label-order",
        help="comma-separated labels for 0,1,2… and for probability/logit lists, e.g. entailment,neutral,contradiction",
    )
    p.add_argument(
        "--label-map",
        type=pairs,
        action="append",
        default=[],
        metavar="VALUE=LABEL",
        help="map a file value onto a dataset label, e.g. --label-map yes=FP",
    )
    p.add_argument(
        "--task",
        choices=["nli", "detect", "qa", "write"],
        help="default: guessed from the columns (question,answer: qa; presupposition,correction: write; "
        "premise,hypothesis: nli), else the dataset's task",
    )
    p.add_argument("--split", help="match only this split's examples")
    p.add_argument("--match", choices=["auto", "id", "text"], default="auto", help="auto: by id when the file has ids")
    p.add_argument("--strict", action="store_true", help="reject the import when any row matches no example")
    p.add_argument("--replace", action="store_true", help="replace your earlier run with the same run id")
    p.add_argument("--dry-run", action="store_true", help="print the report; write nothing")
    p.set_defaults(func=cmd_import_run)
    p = sub.add_parser(
        "import-dataset",
        help="import your own dataset (CSV/TSV/JSONL/JSON/Parquet)",
        description="Map columns onto examples (others are kept; categorical ones become facets), "
        "optionally form minimal pairs, store it with its description and baselines.",
    )
    p.add_argument("file", type=Path)
    p.add_argument("--name", required=True, help="the dataset id (lower case; built-in names are reserved)")
    p.add_argument("--task", required=True, choices=["nli", "detect", "qa"])
    p.add_argument(
        "--map",
        type=pairs,
        action="append",
        default=[],
        metavar="ROLE=COLUMN",
        help="example_id, input, hypothesis, context, gold_label, gold_answers, split, pair_id, pair_role",
    )
    p.add_argument("--labels", help="the label set, comma-separated (default E,N,C for nli, N,FP for detect)")
    p.add_argument("--positive", help="the positive label (default E for nli, FP for detect)")
    p.add_argument("--label-map", type=pairs, action="append", default=[], metavar="VALUE=LABEL")
    p.add_argument("--split", default="all", help="the split of every row when the file has no split column")
    p.add_argument("--headline-splits", help="comma-separated splits the Overview scores (default: all)")
    p.add_argument("--train-split", help="the split majority and nearest-neighbour baselines learn from")
    p.add_argument(
        "--operator-column",
        metavar="COLUMN",
        help="for the Projection page: the column naming each item's operator (negation, question, modal, "
        "conditional, unembedded, or a synonym); triggers come from the trigger_type column",
    )
    p.add_argument("--title")
    p.add_argument("--license", default="yours")
    p.add_argument("--replace", action="store_true", help="replace your dataset of the same name (your runs are kept)")
    p.add_argument("--dry-run", action="store_true", help="check the file and print what would be stored")
    p.set_defaults(func=cmd_import_dataset)
    p = sub.add_parser("delete-run", help="delete a run you imported")
    p.add_argument("run_id")
    p.set_defaults(func=cmd_delete_run)
    p = sub.add_parser(
        "generate",
        help="expand a template (items × conditions, slots and fillers) into a dataset "
        "of projection families and minimal pairs (backend/studio/templates.py)",
    )
    p.add_argument("template", type=Path, help="the YAML template")
    p.add_argument("--replace", action="store_true", help="replace your dataset of the same name (your runs are kept)")
    p.add_argument("--dry-run", action="store_true", help="check and count; write nothing")
    p.set_defaults(func=cmd_generate)
    p = sub.add_parser(
        "generate-pairs",
        help="Syn-(QA)²-style false-assumption question pairs from facts: HotpotQA "
        "bridge questions, MuSiQue single-hop questions, or your triples CSV",
    )
    p.add_argument("source", choices=["hotpotqa", "musique", "triples"])
    p.add_argument(
        "file",
        type=Path,
        nargs="?",
        help="default for hotpotqa/musique: the staged file under "
        "../shared/datasets/corpus/hipporag_legacy_data; triples: your CSV (subject, relation, object, template)",
    )
    p.add_argument("--name", required=True, help="the dataset id to store the pairs as")
    p.add_argument("--threshold", type=float, default=None, help="least similarity of the swapped entity (default 0.3)")
    p.add_argument("--replace", action="store_true", help="replace your dataset of the same name")
    p.add_argument("--dry-run", action="store_true", help="generate and count; write nothing")
    p.set_defaults(func=cmd_generate_pairs)
    p = sub.add_parser(
        "export-task",
        help="a dataset as an lm-evaluation-harness task (YAML + JSONL) and an Inspect AI task, to run elsewhere; "
        "bring the logs back with import-run",
    )
    p.add_argument("dataset")
    p.add_argument("folder", type=Path, help="where the task files are written")
    p.add_argument("--harness", choices=["lm-eval", "inspect", "both"], default="both")
    p.add_argument(
        "--template", help="the lab prompt template the items are asked with (default: the task's zero-shot)"
    )
    p.set_defaults(func=cmd_export_task)
    p = sub.add_parser("user-runs", help="list the runs you imported, with their provenance")
    p.add_argument("--dataset")
    p.set_defaults(func=cmd_user_runs)


def cmd_import_run(args: argparse.Namespace) -> int:
    options = predictions.Options(
        dataset=args.dataset,
        model=args.model,
        revision=args.revision,
        notes=args.notes,
        run_id=args.run_id,
        columns=dict(args.map),
        label_order=tuple(x.strip() for x in args.label_order.split(",")) if args.label_order else (),
        label_map=dict(args.label_map),
        task=args.task,
        split=args.split,
        match=args.match,
        strict=args.strict,
        trained_on=training_data.names(args.trained_on),
    )
    try:
        log = logs.read_log(args.file)  # read and parsed before the store is opened
        with session(args.store) as con:
            plan = logs.plan(con, log, options)
            print(plan.report.summary())
            if not plan.report.table().empty:
                print(plan.report.table().to_markdown(index=False))
            if not plan.report.ok or args.dry_run:
                return 0 if args.dry_run and plan.report.ok else 1
            run_id = run_actions.save(con, plan, args.replace, actor=terminal())
    except (DataError, FileNotFoundError, LookupError, predictions.RunExists) as exc:
        print(f"error: {exc}")
        return 1
    print(f"stored run {run_id}: {len(plan.predictions):,} predictions")
    return 0


def cmd_export_task(args: argparse.Namespace) -> int:
    chosen = ("lm-eval", "inspect") if args.harness == "both" else (args.harness,)
    try:
        with session(args.store) as con:
            done = tasks.export(con, args.dataset, args.folder, chosen, args.template)
    except (LookupError, ValueError) as exc:
        print(f"error: {exc}")
        return 1
    for harness, exported in zip(chosen, done):
        files = ", ".join(str(f) for f in exported.files)
        print(f"{harness}: task {exported.name}, {exported.records:,} items, {exported.pairs:,} minimal pairs: {files}")
    folder = args.folder
    print(f"run: lm_eval --include_path {folder} --tasks {done[0].name} --log_samples --output_path OUT --model ...")
    print(f"     (cd {folder} && inspect eval {done[0].name}.py --model ...)")
    print(f"back: python -m backend import-run LOG --dataset {args.dataset}")
    return 0


def _csv(text: str | None) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip()) if text else ()


def cmd_import_dataset(args: argparse.Namespace) -> int:
    options = datasets.DatasetOptions(
        name=args.name,
        task=args.task,
        columns=dict(args.map),
        labels=_csv(args.labels),
        positive=args.positive,
        label_map=dict(args.label_map),
        split=args.split,
        headline_splits=_csv(args.headline_splits),
        train_split=args.train_split,
        title=args.title,
        license=args.license,
        operator_column=args.operator_column,
    )
    return _store_dataset(args, lambda: datasets.check(read(args.file), options))


def cmd_generate(args: argparse.Namespace) -> int:
    from backend.studio import templates  # lazy: start-up time (yaml, lemminflect)

    def made():
        expansion = templates.expand(args.template.read_text(), str(args.template))
        bundle = templates.bundle(expansion, args.template.name)
        return bundle, Description.from_json(bundle.dataset["description"])

    return _store_dataset(args, made)


def cmd_generate_pairs(args: argparse.Namespace) -> int:
    from backend.studio import facts  # lazy: start-up time (torch)

    if args.file is None and args.source not in facts.STAGED:
        print("error: triples needs your CSV file (subject, relation, object, template)")
        return 1
    path = args.file or facts.staged(args.source)

    def made():
        threshold = facts.SIMILARITY if args.threshold is None else args.threshold
        generated = getattr(facts, args.source)(path, threshold=threshold)
        for what, n in generated.steps:
            print(f"{n:>7,}  {what}")
        bundle = facts.bundle(generated, args.name, path.name)
        return bundle, Description.from_json(bundle.dataset["description"])

    return _store_dataset(args, made)


def _store_dataset(args: argparse.Namespace, make) -> int:
    """Check (make() → bundle, description), print what it holds, and store it unless --dry-run."""
    try:
        bundle, description = make()
        facets = ", ".join(description.facets) or "none"
        print(
            f"{bundle.dataset['source']}: {len(bundle.examples):,} examples, {len(bundle.pairs):,} pairs; task "
            f"{description.task}, labels {list(description.labels)}, splits {list(description.headline_splits)}; "
            f"facets: {facets}"
        )
        if args.dry_run:
            return 0
        with session(args.store, create=True) as con:
            counts = dataset_actions.save(con, bundle, args.replace, actor=terminal())
    except (DataError, ValueError, datasets.BaselinesFailed) as exc:
        print(f"error: {exc}")
        return 1
    print(f"stored dataset {bundle.dataset['dataset_id']}: " + ", ".join(f"{n:,} {k}" for k, n in counts.items()))
    return 0


def cmd_delete_run(args: argparse.Namespace) -> int:
    try:
        with session(args.store) as con:
            run_actions.delete(con, args.run_id, actor=terminal())
    except (FileNotFoundError, LookupError, ValueError) as exc:
        print(f"error: {exc}")
        return 1
    print(f"deleted run {args.run_id}")
    return 0


def cmd_user_runs(args: argparse.Namespace) -> int:
    with session(args.store) as con:
        print(predictions.user_runs(con, args.dataset).to_markdown(index=False))
    return 0
