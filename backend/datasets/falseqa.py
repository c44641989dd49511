"""FalseQA (Hu et al., ACL 2023): questions with and without a false premise.

Official CSVs `dataset/{train,valid,test}.csv` with header `question,answer,label`; `answer` is a
Python-literal list of strings (rebuttals for false-premise questions), `label` 1 = false premise.
"""

from __future__ import annotations

import ast

from backend.datasets.base import DataError, Source, read_csv
from backend.store.bundle import Bundle

SPLITS = ("train", "valid", "test")


def load(sources: dict[str, Source]) -> Bundle:
    root = sources["falseqa"].path
    bundle = Bundle(dataset={"dataset_id": "falseqa"})
    for split in SPLITS:
        path = root / "dataset" / f"{split}.csv"
        if not path.is_file():
            bundle.notes.append(f"dataset/{split}.csv not found: split {split} is not loaded")
            continue
        for row_number, (line, row) in enumerate(read_csv(path, ("question", "answer", "label"))):
            label = {"1": "FP", "0": "N"}.get(row["label"].strip())
            if label is None:
                raise DataError(path, f"expected 0 or 1, got {row['label']!r}", line, "label")
            bundle.examples.append(
                {
                    "example_id": f"{split}-{row_number}",
                    "split": split,
                    "input": row["question"],
                    "gold_label": label,
                    "gold_labels": [label],
                    "gold_answers": parse_answers(row["answer"], path, line),
                }
            )
    return bundle


def parse_answers(raw: str, path, line: int) -> list[str]:
    """The answer field: a Python-literal list of strings, or (as in some rows) one plain string.

    >>> parse_answers("['a', 'b']", "f.csv", 2)
    ['a', 'b']
    """
    text = raw.strip()
    if not text.startswith("["):
        return [text] if text else []
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise DataError(path, f"expected a Python-literal list of strings, got {text!r:.60}", line, "answer") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataError(path, "expected a list of strings", line, "answer")
    return value
