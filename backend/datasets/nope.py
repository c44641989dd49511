"""NOPE (Parrish et al., CoNLL 2021): NLI items with naturally occurring presupposition triggers.

Reads the official `annotated_corpus/nli_corpus.{main,adv}.jsonl`, the per-item worker ids in
`main_corpus.nli_labels.csv`, the prior ratings, and the paper's predictions in `model_results/`.

Polarity honours `original_negated`: when the corpus sentence was already negative, the `-neg`
variant is the *non-negated* one.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pandas as pd

from backend.datasets.base import DataError, Source, iter_jsonl, need, need_str_list, read_csv
from backend.datasets.description import Description
from backend.store.bundle import Bundle, Shipped

LABELS = ("E", "N", "C")
# Projection (backend.analysis.projection): main-corpus items; the hypothesis is the presupposition; a crowd
# label E says it survives. NOPE's trigger names are the shared family vocabulary.
PROJECTION = {
    "trigger": "trigger_type",
    "operator": "polarity",
    "where": {"split": "main"},
    "operators": {"non-negated": "unembedded", "negated": "negation"},
    "human": {"criterion": "nope_label", "label": "E"},
}
DESCRIPTION = Description(
    "nli",
    LABELS,
    "E",
    ("main", "adv"),
    constants=("E",),
    projection=PROJECTION,
    normalised="nothing: the premises and hypotheses as published (odd spellings such as \"I' m\" are the data's)",
)
CORPORA = {"main": "annotated_corpus/nli_corpus.main.jsonl", "adv": "annotated_corpus/nli_corpus.adv.jsonl"}
WORKERS = "annotated_corpus/main_corpus.nli_labels.csv"
PRIORS = "annotated_corpus/priors.individual_ratings.csv"
RESULTS_FILE = re.compile(
    r"^(?P<model>[^/]+)/(?P<train>mnli|mnli-snli-anli-fever)/(?P<seed>\d+)/(?:eval_)?nope_(?P<split>main|adv)\.jsonl$"
)
META_FIELDS = (
    "context1",
    "context2",
    "target_sentence",
    "speaker_context1",
    "speaker_context2",
    "speaker_target",
    "annotator",
)


def load(sources: dict[str, Source]) -> Bundle:
    root = sources["nope"].path
    bundle = Bundle(dataset={"dataset_id": "nope"})
    for split, rel in CORPORA.items():
        if (root / rel).is_file():
            bundle.examples += [_example(root / rel, line, obj, split) for line, obj in iter_jsonl(root / rel)]
        else:
            bundle.notes.append(f"{rel} not found: the {split} corpus is not loaded")
    by_id = {e["example_id"]: e for e in bundle.examples}
    bundle.pairs = negation_pairs(by_id) + adversarial_pairs(by_id)
    bundle.ratings = crowd_ratings(bundle.examples, _worker_index(root / WORKERS)) + prior_ratings(root / PRIORS, by_id)
    bundle.runs, bundle.shipped = imported_runs(root, by_id)
    return bundle


def polarity(variant: str, original_negated: bool) -> str:
    """'negated' or 'non-negated' for a variant ('original' | 'negated') of a corpus sentence.

    >>> polarity("negated", True)
    'non-negated'
    """
    return "negated" if (variant == "negated") != original_negated else "non-negated"


def _example(path: Path, line: int, obj: dict, split: str) -> dict:
    uid = need(obj, "uid", str, path, line)
    meta = need(obj, "metadata", dict, path, line)
    label = need(obj, "label", str, path, line)
    if label not in LABELS:
        raise DataError(path, f"expected one of {list(LABELS)}, got {label!r}", line, "label")
    variant = need(meta, "type", str, path, line, "metadata.")
    if variant not in ("original", "negated"):
        raise DataError(path, f"expected 'original' or 'negated', got {variant!r}", line, "metadata.type")
    nli_labels = need_str_list(meta, "nli_labels", path, line, "metadata.")
    ratings = need(meta, "ratings", list, path, line, "metadata.")
    if len(nli_labels) != len(ratings) or not all(isinstance(r, (int, float)) for r in ratings):
        raise DataError(path, "expected as many numeric ratings as nli_labels", line, "metadata.ratings")
    original_negated = need(meta, "original_negated", bool, path, line, "metadata.")
    return {
        "example_id": uid,
        "split": split,
        "input": need(obj, "premise", str, path, line),
        "hypothesis": need(obj, "hypothesis", str, path, line),
        "gold_label": label,
        "gold_labels": [label],
        "trigger_type": need(meta, "trigger_type", str, path, line, "metadata."),
        "polarity": polarity(variant, original_negated),
        "adversarial": need(meta, "adversarial", bool, path, line, "metadata."),
        "extra": {
            **{k: meta.get(k) for k in META_FIELDS},
            "base_id": uid.split("-")[0],
            "variant": variant,
            "original_negated": original_negated,
            "trigger_data": _trigger_data(meta, path, line),
            "nli_labels": nli_labels,
            "ratings": ratings,
        },
    }


def _trigger_data(meta: dict, path: Path, line: int) -> dict:
    raw = need(meta, "trigger_data", (str, dict), path, line, "metadata.")
    if isinstance(raw, dict):
        return raw
    try:
        value = ast.literal_eval(raw) if raw.strip() else {}
    except (ValueError, SyntaxError):
        raise DataError(
            path, f"expected a Python-literal dict, got {raw!r:.60}", line, "metadata.trigger_data"
        ) from None
    if not isinstance(value, dict):
        raise DataError(path, f"expected a dict, got {type(value).__name__}", line, "metadata.trigger_data")
    return value


def negation_pairs(by_id: dict[str, dict]) -> list[dict]:
    """Non-negated ↔ negated variants of one base item, within the main and the adversarial corpus."""
    pairs = []
    for uid, ex in by_id.items():
        if "-neg" in uid:
            continue
        other = by_id.get(uid.replace("-adv", "-neg-adv") if uid.endswith("-adv") else uid + "-neg")
        if other is None:
            continue
        a, b = (ex, other) if ex["polarity"] == "non-negated" else (other, ex)
        pairs.append(_pair(f"nope:negation:{uid}", "negation", a, b, "non-negated", "negated"))
    return pairs


def adversarial_pairs(by_id: dict[str, dict]) -> list[dict]:
    """Presupposed hypothesis ↔ adversarial (minimally changed, no longer presupposed) hypothesis."""
    pairs = []
    for uid, ex in by_id.items():
        original = by_id.get(uid.removesuffix("-adv")) if uid.endswith("-adv") else None
        if original is not None:
            pairs.append(_pair(f"nope:adversarial:{uid}", "adversarial", original, ex, "presupposed", "adversarial"))
    return pairs


def _pair(pair_id: str, kind: str, a: dict, b: dict, role_a: str, role_b: str) -> dict:
    return {
        "pair_id": pair_id,
        "kind": kind,
        "example_a": a["example_id"],
        "example_b": b["example_id"],
        "role_a": role_a,
        "role_b": role_b,
    }


def _ratings_key(ratings: list, labels: list[str]) -> tuple:
    return tuple(round(float(r), 2) for r in ratings), tuple(labels)


def _worker_index(path: Path) -> dict[tuple, list[str]]:
    """(ratings, labels) → anonymised worker ids, from main_corpus.nli_labels.csv (if present)."""
    if not path.is_file():
        return {}
    index: dict[tuple, list[list[str]]] = defaultdict(list)
    for line, row in read_csv(path, ("ratings", "all_labels", "workerids")):
        try:
            ratings = [float(x) for x in row["ratings"].split(",")]
        except ValueError:
            raise DataError(
                path, f"expected comma-separated numbers, got {row['ratings']!r}", line, "ratings"
            ) from None
        index[_ratings_key(ratings, row["all_labels"].split(","))].append(row["workerids"].split(","))
    return {key: ids[0] for key, ids in index.items() if len(ids) == 1}


def crowd_ratings(examples: list[dict], workers: dict[tuple, list[str]]) -> list[dict]:
    """Five 0–100 likelihood ratings and five rater-specific E/N/C labels per example.

    Rater ids are the anonymised worker ids where the item's ratings identify its row in
    main_corpus.nli_labels.csv unambiguously, else positional ('pos1'..'pos5').
    """
    rows = []
    for ex in examples:
        labels, ratings = ex["extra"]["nli_labels"], ex["extra"]["ratings"]
        ids = workers.get(_ratings_key(ratings, labels))
        raters = (
            [f"worker{w}" for w in ids]
            if ids and len(ids) == len(ratings)
            else [f"pos{i + 1}" for i in range(len(ratings))]
        )
        for rater, value, label in zip(raters, ratings, labels):
            base = {
                "dataset_id": "nope",
                "example_id": ex["example_id"],
                "run_id": "",
                "rater_id": rater,
                "source": "crowd",
            }
            rows.append({**base, "criterion": "nope_likelihood", "value": float(value)})
            rows.append({**base, "criterion": "nope_label", "label": label})
    return rows


def prior_ratings(path: Path, by_id: dict[str, dict]) -> list[dict]:
    """Ratings of a hypothesis given the context alone (no trigger sentence), 5 raters × 200 items.

    They belong to the base item: attached to its first variant present (the original, else the
    negated, else an adversarial one), with the rated hypothesis kept in `note`.
    """
    if not path.is_file():
        return []
    rows = []
    for line, row in read_csv(path, ("id", "response", "anon_id")):
        variants = (row["id"], row["id"] + "-neg", row["id"] + "-adv", row["id"] + "-neg-adv")
        target = next((u for u in variants if u in by_id), None)
        if target is None:
            raise DataError(path, f"item {row['id']!r} is not in the corpus", line, "id")
        try:
            value = float(row["response"])
        except ValueError:
            raise DataError(path, f"expected a number 0-100, got {row['response']!r}", line, "response") from None
        rows.append(
            {
                "dataset_id": "nope",
                "example_id": target,
                "run_id": "",
                "rater_id": f"prior{row['anon_id']}",
                "source": "crowd",
                "criterion": "nope_prior_likelihood",
                "value": value,
                "note": row.get("hypothesis"),
            }
        )
    return rows


def imported_runs(root: Path, by_id: dict[str, dict]) -> tuple[list[dict], list[Shipped]]:
    """One run per model × training data × seed from model_results/, over main and adversarial; ingest reads
    its files through the same import path as a user's predictions (matched by uid; e/n/c labels; softmax
    of the logits)."""
    groups: dict[tuple, list[tuple[Path, str]]] = defaultdict(list)
    results = root / "model_results"
    for path in sorted(results.rglob("*.jsonl")) if results.is_dir() else []:
        match = RESULTS_FILE.match(path.relative_to(results).as_posix())
        if match:
            groups[(match["model"], match["train"], int(match["seed"]))].append((path, match["split"]))
    examples = pd.DataFrame(
        [{k: e.get(k) for k in ("example_id", "split", "input", "hypothesis")} for e in by_id.values()]
    )
    options = {
        "dataset": "nope",
        "columns": {"example_id": "uid", "label": "predicted_label", "logits": "logits"},
        "label_order": LABELS,
        "match": "id",
        "strict": True,
    }
    runs, shipped = [], []
    for (model, train, seed), files in sorted(groups.items()):
        run_id = f"nope/{model}/{train}/{seed}"
        runs.append(
            {
                "run_id": run_id,
                "dataset_id": "nope",
                "task": "nli",
                "model_id": model,
                "seed": seed,
                "config": {
                    "labels": list(LABELS),
                    "training_data": train,
                    "trained_on": train.split("-"),
                    "paper": "Parrish et al. 2021",
                    "in_paper_tables": train == "mnli-snli-anli-fever",
                    "probabilities": "softmax of logits",
                },
                "source": "import",
                "status": "complete",
                "provenance": ", ".join(p.relative_to(root).as_posix() for p, _ in files),
            }
        )
        shipped += [Shipped(run_id, path, str(path), examples, options) for path, _split in files]
    return runs, shipped
