"""(QA)² (Kim, Htut, Bowman, Petty; ACL 2023): naturally occurring questions with questionable assumptions.

Two CSVs with one header (12 columns, see ../shared/datasets/qaqa/SOURCE.md): the evaluation set
`Data/QAQA.csv` (570 rows; the release's QAQA_evaluation_set_Dec2022.csv) and the adaptation set
`Data/QAQA_adaptation_set_Dec2022.csv` (32 rows, for few-shot prompts). The detection label is
`all_assumptions_valid`: has_invalid → FP (a questionable assumption), all_valid → N. The
questionable assumption is the gold presupposition, the abstractive answer the gold answer; the
evidence, its URLs, both verification questions, the assumption's type and whether its status can
change are kept in `extra` (the last two are Explore facets). Empty cells are the README's Null.
"""

from __future__ import annotations

from backend.datasets.base import DataError, Source, read_csv
from backend.datasets.description import Description
from backend.store.bundle import Bundle

FILES = {"eval": "Data/QAQA.csv", "adaptation": "Data/QAQA_adaptation_set_Dec2022.csv"}
LABELS = {"has_invalid": "FP", "all_valid": "N"}
TYPES = ("failure", "unverifiable", "no_failure")
STATUS = ("can_change", "cannot_change", "can_change || cannot_change")
COLUMNS = (
    "idx",
    "question",
    "abstractive_answer",
    "extractive_evidence_or_answer",
    "url_extractive_evidence_or_answer",
    "all_assumptions_valid",
    "questionable_assumption",
    "yesno_verification_question",
    "type_questionable_assumption",
    "assumption_status_can_change",
    "yesno_verification_question_including_valid_qs",
)
QUESTION_WORDS = ("when", "who", "what", "where", "how", "why", "which")
DESCRIPTION = Description(
    "detect",
    ("N", "FP"),
    "FP",
    ("eval",),
    train_split="adaptation",
    facets=("assumption_type", "status_can_change"),
    normalised="fields are stripped of surrounding spaces; otherwise the text as published",
)


def load(sources: dict[str, Source]) -> Bundle:
    root = sources["qaqa"].path
    bundle = Bundle(dataset={"dataset_id": "qaqa"})
    for split, name in FILES.items():
        path = root / name
        if not path.is_file():
            bundle.notes.append(f"{name} not found: split {split} is not loaded")
            continue
        for line, row in read_csv(path, COLUMNS):
            bundle.examples.append(_example(split, row, path, line))
    return bundle


def _example(split: str, row: dict, path, line: int) -> dict:
    label = LABELS.get(row["all_assumptions_valid"].strip())
    if label is None:
        raise DataError(
            path,
            f"expected one of {sorted(LABELS)}, got {row['all_assumptions_valid']!r}",
            line,
            "all_assumptions_valid",
        )
    kind = row["type_questionable_assumption"].strip()
    if kind not in TYPES:
        raise DataError(path, f"expected one of {list(TYPES)}, got {kind!r}", line, "type_questionable_assumption")
    if (kind == "no_failure") != (label == "N"):
        raise DataError(
            path,
            f"{kind!r} contradicts all_assumptions_valid={row['all_assumptions_valid']!r}",
            line,
            "type_questionable_assumption",
        )
    status = row["assumption_status_can_change"].strip()
    if status and status not in STATUS:
        raise DataError(
            path, f"expected one of {list(STATUS)} or empty, got {status!r}", line, "assumption_status_can_change"
        )
    question = row["question"].strip()
    if not question:
        raise DataError(path, "empty question", line, "question")
    assumption = row["questionable_assumption"].strip()
    first = question.split()[0].lower()
    return {
        "example_id": f"{split}-{row['idx'].strip()}",
        "split": split,
        "input": question,
        "gold_label": label,
        "gold_labels": [label],
        "gold_answers": [row["abstractive_answer"].strip()] if row["abstractive_answer"].strip() else [],
        "gold_presuppositions": [assumption] if assumption else [],
        "question_type": first if first in QUESTION_WORDS else "other",
        "extra": {
            "assumption_type": kind,
            "status_can_change": status or None,
            "evidence": row["extractive_evidence_or_answer"].strip() or None,
            "urls": [u.strip() for u in row["url_extractive_evidence_or_answer"].split("||") if u.strip()],
            "verification_question": row["yesno_verification_question"].strip() or None,
            "verification_question_any": row["yesno_verification_question_including_valid_qs"].strip() or None,
        },
    }
