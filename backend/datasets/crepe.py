"""CREPE (Yu et al., ACL 2023): false presuppositions in real Reddit ELI5 questions.

Files read from the source folder:

* Labelled data `{train,dev,test}.jsonl`, either at the folder root or under `data/labeled_data/`
  (the layout of the unzipped `CREPE_data.zip`). One object per line: `id`, `question`, `comment`
  (most-upvoted answer), `labels` (list of "normal" / "false presupposition"; the spelling
  "false_presupposition" is accepted too), `presuppositions`, `corrections` (lists of strings),
  and optionally `passages`, `raw_labels`, `raw_presuppositions`, `raw_corrections`, kept as they
  are in `extra`. Labels become 'FP' (false presupposition) and 'N' (normal).
  Label rule: `gold_labels` = every distinct label given, in release order; `ambiguous` = both
  labels present (train items where annotators disagreed); `gold_label` = the *first* entry of
  `labels`, so an ambiguous item counts under the label the release lists first.
* `sycon_bench_subset/{questions,presuppositions,corrections}.txt`: 200 CREPE test questions,
  all FP, line-aligned (from SYCON-Bench). Without test.jsonl they are loaded as the test split
  (ids `sycon-000`..`sycon-199`, no comments); with test.jsonl they only flag the matching test
  rows (`extra.sycon200`, question compared with whitespace normalised), so nothing is duplicated.
* `sample-outputs/`: the paper's gold-comment-track dev predictions. The detection logits
  (`.npy`, float32 (n_dev, 2), argmax 1 = FP) follow dev.jsonl order; the writing predictions
  (`.txt`, one line per FP dev row in file order) give a presupposition and a correction. They are
  imported as two runs, only when dev.jsonl is loaded (they cannot be aligned otherwise).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from backend.datasets.base import DataError, Source, iter_jsonl, need, need_str_list, normalise_space, read_text
from backend.datasets.description import Description
from backend.store.bundle import Bundle, Shipped

log = logging.getLogger(__name__)

LABELS = {"normal": "N", "false presupposition": "FP", "false_presupposition": "FP"}
# every false-premise dataset
DETECT = {"task": "detect", "labels": ("N", "FP"), "positive": "FP", "constants": ("FP", "N")}
DESCRIPTION = Description(
    **DETECT,
    headline_splits=("dev", "test"),
    train_split="train",
    dev_split="dev",
    normalised="nothing: the questions as published (SyCon-Bench's are matched to them with spaces collapsed)",
)
SPLITS = ("train", "dev", "test")
LABELLED_DIRS = ("", "data/labeled_data")
OPTIONAL_LISTS = ("passages", "raw_labels", "raw_presuppositions", "raw_corrections")
SYCON = ("questions", "presuppositions", "corrections")
SYCON_DIR = "sycon_bench_subset"
DETECTION = "sample-outputs/detection-gold-comment-track-combined.npy"
WRITING = {
    f: f"sample-outputs/writing-gold-comment-track-unified-{f}-predictions.txt"
    for f in ("presupposition", "correction")
}
DETECT_RUN = "crepe/gold-comment/question+comment"
WRITE_RUN = "crepe/gold-comment/writing"
HOW_TO_ADD = (
    "download CREPE_data.zip from the Google Drive folder linked in the CREPE README "
    "(github.com/velocityCavalry/CREPE), unzip it and put train/dev/test.jsonl (or data/labeled_data/) "
    "in the CREPE source folder"
)


def load(sources: dict[str, Source]) -> Bundle:
    root = sources["crepe"].path
    bundle = Bundle(dataset={"dataset_id": "crepe"})
    by_split: dict[str, list[dict]] = {}
    for split in SPLITS:
        path = labelled_file(root, split)
        if path is not None:
            by_split[split] = read_split(path, split)
            bundle.examples += by_split[split]
    if by_split:  # a partial release: say which splits are missing (all missing is said by sycon_subset)
        bundle.notes += [
            f"{s}.jsonl not found (root or data/labeled_data/): split {s} is not loaded"
            for s in SPLITS
            if s not in by_split
        ]
    _check_unique(bundle.examples, root)
    sycon_subset(root, by_split.get("test"), bundle)
    sample_output_runs(root, by_split.get("dev"), bundle)
    log.info("crepe: %s examples, %s runs", len(bundle.examples), len(bundle.runs))
    return bundle


def labelled_file(root: Path, split: str) -> Path | None:
    """`<split>.jsonl` at the root, else under data/labeled_data/, else None."""
    for folder in LABELLED_DIRS:
        path = root / folder / f"{split}.jsonl"
        if path.is_file():
            return path
    return None


def read_split(path: Path, split: str) -> list[dict]:
    return [_example(path, line, obj, split) for line, obj in iter_jsonl(path)]


def parse_labels(raw: list[str], path: Path, line: int) -> list[str]:
    """Distinct FP/N labels in release order; DataError on an empty list or an unknown spelling.

    >>> parse_labels(["false presupposition", "normal", "false_presupposition"], "f", 1)
    ['FP', 'N']
    """
    if not raw:
        raise DataError(path, "expected at least one label", line, "labels")
    unknown = [v for v in raw if v not in LABELS]
    if unknown:
        raise DataError(path, f"unknown label {unknown[0]!r}; allowed: {list(LABELS)}", line, "labels")
    return list(dict.fromkeys(LABELS[v] for v in raw))


def _example(path: Path, line: int, obj: dict, split: str) -> dict:
    labels = parse_labels(need_str_list(obj, "labels", path, line), path, line)
    extra = {key: need(obj, key, list, path, line) for key in OPTIONAL_LISTS if key in obj}
    return {
        "example_id": str(need(obj, "id", (str, int), path, line)),
        "split": split,
        "input": need(obj, "question", str, path, line),
        "context": need(obj, "comment", str, path, line),
        "gold_label": labels[0],
        "gold_labels": labels,
        "ambiguous": len(labels) > 1,
        "gold_presuppositions": need_str_list(obj, "presuppositions", path, line),
        "gold_corrections": need_str_list(obj, "corrections", path, line),
        "extra": extra,
    }


def _check_unique(examples: list[dict], root: Path) -> None:
    seen: dict[str, str] = {}
    for ex in examples:
        if ex["example_id"] in seen:
            raise DataError(
                root, f"id {ex['example_id']!r} appears in both {seen[ex['example_id']]} and {ex['split']}", None, "id"
            )
        seen[ex["example_id"]] = ex["split"]


def read_sycon(root: Path) -> list[tuple[str, str, str]] | None:
    """(question, presupposition, correction) per line, or None when questions.txt is absent."""
    folder = root / SYCON_DIR
    if not (folder / "questions.txt").is_file():
        return None
    columns = []
    for name in SYCON:
        path = folder / f"{name}.txt"
        if not path.is_file():
            raise DataError(path, "missing (questions, presuppositions and corrections are line-aligned)")
        columns.append([text.strip() for text in read_text(path).splitlines()])
    for name, column in zip(SYCON[1:], columns[1:]):
        if len(column) != len(columns[0]):
            raise DataError(folder / f"{name}.txt", f"{len(column)} lines, but questions.txt has {len(columns[0])}")
    return list(zip(*columns))


def sycon_subset(root: Path, test_rows: list[dict] | None, bundle: Bundle) -> None:
    """Load the SYCON-Bench FP questions as the test split, or flag them in the real test split."""
    items = read_sycon(root)
    if items is None:
        return
    if test_rows is None:
        bundle.examples += [_sycon_example(i, *item) for i, item in enumerate(items)]
        bundle.notes.append(
            f"the full CREPE labelled data is missing: only the {len(items)} SYCON-Bench false-presupposition "
            f"test questions ({SYCON_DIR}/) are loaded, without comments, ids or normal questions; "
            f"to add the full data, {HOW_TO_ADD}"
        )
        return
    wanted = {normalise_space(question) for question, _, _ in items}
    matched = [row for row in test_rows if normalise_space(row["input"]) in wanted]
    for row in matched:
        row["extra"]["sycon200"] = True
    bundle.notes.append(
        f"{len(matched)} test questions flagged as in the SYCON-Bench subset (extra.sycon200), of {len(items)}"
    )


def _sycon_example(i: int, question: str, presupposition: str, correction: str) -> dict:
    return {
        "example_id": f"sycon-{i:03d}",
        "split": "test",
        "input": question,
        "gold_label": "FP",
        "gold_labels": ["FP"],
        "ambiguous": False,
        "gold_presuppositions": [presupposition],
        "gold_corrections": [correction],
        "extra": {"subset": "sycon200"},
    }


def sample_output_runs(root: Path, dev_rows: list[dict] | None, bundle: Bundle) -> None:
    """Import the paper's dev sample outputs as a detection run and a writing run."""
    present = (root / DETECTION).is_file() or any((root / rel).is_file() for rel in WRITING.values())
    if not present:
        return
    if dev_rows is None:
        bundle.notes.append(
            "sample-outputs/ found but dev.jsonl is not: the paper's dev predictions "
            "will be imported once dev.jsonl is present"
        )
        return
    if (root / DETECTION).is_file():
        bundle.runs.append(_detection_run())
        bundle.shipped.append(detection_predictions(root / DETECTION, dev_rows))
    if all((root / rel).is_file() for rel in WRITING.values()):
        bundle.runs.append(_writing_run())
        bundle.shipped.append(writing_predictions(root, [r for r in dev_rows if r["gold_label"] == "FP"]))
    else:
        bundle.notes.append(f"writing predictions need both {list(WRITING.values())}: writing run not imported")


def _detection_run() -> dict:
    return {
        "run_id": DETECT_RUN,
        "dataset_id": "crepe",
        "task": "detect",
        "model_id": "CREPE question+comment (gold comment)",
        "config": {"labels": ["N", "FP"], "track": "gold-comment", "paper": "Yu et al. 2023"},
        "source": "import",
        "status": "complete",
        "provenance": DETECTION,
    }


def _writing_run() -> dict:
    return {
        "run_id": WRITE_RUN,
        "dataset_id": "crepe",
        "task": "write",
        "model_id": "CREPE unified writer (gold comment)",
        "config": {"track": "gold-comment", "paper": "Yu et al. 2023", "fields": list(WRITING)},
        "source": "import",
        "status": "complete",
        "provenance": ", ".join(WRITING.values()),
    }


def _examples(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([{k: r.get(k) for k in ("example_id", "split", "input", "hypothesis")} for r in rows])


def detection_predictions(path: Path, dev_rows: list[dict]) -> Shipped:
    """The logits (order N, FP), row i ↔ dev.jsonl row i; ingest checks them by the same import path as a
    user's predictions (softmax, argmax label)."""
    try:
        logits = np.load(path, allow_pickle=False)
    except ValueError as exc:
        raise DataError(path, f"not a numeric .npy array ({exc})") from None
    if logits.ndim != 2 or logits.shape[1] != 2:
        raise DataError(path, f"expected shape (n, 2), got {logits.shape}")
    if logits.shape[0] != len(dev_rows):
        raise DataError(path, f"{logits.shape[0]} rows of logits, but dev.jsonl has {len(dev_rows)} examples")
    frame = pd.DataFrame({"example_id": [r["example_id"] for r in dev_rows], "logits": list(logits.astype(np.float64))})
    options = {"dataset": "crepe", "label_order": ("N", "FP"), "match": "id", "strict": True}
    return Shipped(DETECT_RUN, frame, str(path), _examples(dev_rows), options)


def writing_predictions(root: Path, fp_rows: list[dict]) -> Shipped:
    """One {presupposition, correction} per FP dev row, in file order."""
    columns = {}
    for field, rel in WRITING.items():
        lines = read_text(root / rel).splitlines()
        if len(lines) != len(fp_rows):
            raise DataError(
                root / rel, f"{len(lines)} lines, but dev.jsonl has {len(fp_rows)} false-presupposition examples"
            )
        columns[field] = lines
    frame = pd.DataFrame({"example_id": [r["example_id"] for r in fp_rows], **columns})
    options = {"dataset": "crepe", "task": "write", "match": "id", "strict": True}
    return Shipped(WRITE_RUN, frame, ", ".join(WRITING.values()), _examples(fp_rows), options)
