"""Syn-(QA)² (Daswani, Sawant, Kim 2024): minimal pairs of questions with and without a false assumption.

The format is *inferred* from the official generation and evaluation scripts
(github.com/ashwindaswanibu/QAQA-Synthetic-Dataset) and is unverified until the password-protected
archive is opened. Files are found by name anywhere under the source folder (case-insensitive;
`__MACOSX/` and hidden entries skipped; the shallowest match wins):

* `Singlehop_question.csv`: false-assumption single-hop questions; question text in `question`,
  else `original_question`; optional `yes_no_question`.
* `singlehop_unperturbed.csv`: the valid counterparts, row-aligned with the first file (same
  question-column rule); optional `unperturbed_yes_no_question`. Both files must have as many rows.
* `Hotpot_Questions.csv`: multi-hop pairs in one row: `Old Question` (valid), `New Question`
  (false assumption), optional `Answer` (the original HotpotQA answer, given as `gold_answers` of
  the valid member only), `Supporting Facts` and `Context Titles` ('; '-joined titles, stored as
  de-duplicated lists), `yes_no_question`.

Examples are all split 'test': `single-{i}-valid`, `single-{i}-false`, `multi-{i}-valid`,
`multi-{i}-false` (i = 0-based data row); 'N' for the valid member, 'FP' for the false one. Every
other column of the row goes to `extra` as a string (the two title columns as lists); `extra.yes_no_question` holds the
member's
yes/no question where the scripts name one (for valid single-hop rows, the
`unperturbed_yes_no_question`). Pairs: kind 'minimal', a = valid, b = false assumption.
"""

from __future__ import annotations

import logging
from pathlib import Path

from backend.datasets.base import DataError, Source, read_csv
from backend.store.bundle import Bundle

log = logging.getLogger(__name__)

SINGLE_FALSE = "Singlehop_question.csv"
SINGLE_VALID = "singlehop_unperturbed.csv"
MULTI = "Hotpot_Questions.csv"
FILES = (SINGLE_FALSE, SINGLE_VALID, MULTI)
QUESTION_COLUMNS = ("question", "original_question")
YES_NO = {SINGLE_FALSE: "yes_no_question", SINGLE_VALID: "unperturbed_yes_no_question"}
LIST_COLUMNS = ("Supporting Facts", "Context Titles")


def load(sources: dict[str, Source]) -> Bundle:
    root = sources["synqa2"].path
    bundle = Bundle(dataset={"dataset_id": "synqa2"})
    found = find_files(root)
    for name in FILES:
        if name not in found:
            bundle.notes.append(f"{name} not found under {root}: its questions are not loaded")
    single_hop(found.get(SINGLE_VALID), found.get(SINGLE_FALSE), bundle)
    if MULTI in found:
        multi_hop(found[MULTI], bundle)
    log.info("synqa2: %s examples, %s pairs", len(bundle.examples), len(bundle.pairs))
    return bundle


def find_files(root: Path) -> dict[str, Path]:
    """Official file name → the shallowest file of that name (any case) under root."""
    wanted = {name.lower(): name for name in FILES}
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*"), key=lambda p: (len(p.parts), str(p))):
        rel = path.relative_to(root).parts
        if any(part.startswith(".") or part == "__MACOSX" for part in rel) or not path.is_file():
            continue
        name = wanted.get(path.name.lower())
        if name and name not in found:
            found[name] = path
    return found


def read_questions(path: Path, yes_no: str) -> list[tuple[int, str, dict]]:
    """(line, question text, extra) per row of a single-hop file; `yes_no` = its yes/no column."""
    rows = list(read_csv(path, ()))
    if not rows:
        return []
    header = [k for k in rows[0][1] if k is not None]
    column = next((c for c in QUESTION_COLUMNS if c in header), None)
    if column is None:
        raise DataError(path, f"missing column: expected one of {list(QUESTION_COLUMNS)}; header is {header}", 1)
    out = []
    for line, row in rows:
        extra = _extra(row, (column,))
        if yes_no in extra:
            extra["yes_no_question"] = extra[yes_no]
        out.append((line, _question(row, column, path, line), extra))
    return out


def single_hop(valid_path: Path | None, false_path: Path | None, bundle: Bundle) -> None:
    valid = read_questions(valid_path, YES_NO[SINGLE_VALID]) if valid_path else []
    false = read_questions(false_path, YES_NO[SINGLE_FALSE]) if false_path else []
    if valid_path and false_path and len(valid) != len(false):
        raise DataError(
            false_path,
            f"{len(false)} rows in {SINGLE_FALSE} but {len(valid)} rows in {valid_path} "
            f"({SINGLE_VALID}); the two files must be row-aligned",
        )
    for i, (_line, text, extra) in enumerate(valid):
        bundle.examples.append(_example(f"single-{i}-valid", "single", "N", text, extra))
    for i, (_line, text, extra) in enumerate(false):
        bundle.examples.append(_example(f"single-{i}-false", "single", "FP", text, extra))
    if valid_path and false_path:
        bundle.pairs += [_pair("single", i) for i in range(len(valid))]


def multi_hop(path: Path, bundle: Bundle) -> None:
    for i, (line, row) in enumerate(read_csv(path, ("Old Question", "New Question"))):
        extra = _extra(row, ("Old Question", "New Question"))
        for column in LIST_COLUMNS:
            if column in extra:
                extra[column] = split_titles(extra[column])
        answer = (row.get("Answer") or "").strip()
        valid = _example(f"multi-{i}-valid", "multi", "N", _question(row, "Old Question", path, line), extra)
        valid["gold_answers"] = [answer] if answer else []
        bundle.examples.append(valid)
        bundle.examples.append(
            _example(f"multi-{i}-false", "multi", "FP", _question(row, "New Question", path, line), extra)
        )
        bundle.pairs.append(_pair("multi", i))


def split_titles(text: str) -> list[str]:
    """'; '-joined titles → list, without empties or repeats.

    >>> split_titles("Ed Wood; Scott Derrickson; Ed Wood")
    ['Ed Wood', 'Scott Derrickson']
    """
    return list(dict.fromkeys(t.strip() for t in text.split(";") if t.strip()))


def _question(row: dict, column: str, path: Path, line: int) -> str:
    text = (row.get(column) or "").strip()
    if not text:
        raise DataError(path, "empty question text", line, column)
    return text


def _extra(row: dict, skip: tuple[str, ...]) -> dict:
    return {k: (v if v is not None else "") for k, v in row.items() if k is not None and k not in skip}


def _example(example_id: str, hop: str, label: str, text: str, extra: dict) -> dict:
    return {
        "example_id": example_id,
        "split": "test",
        "input": text,
        "gold_label": label,
        "gold_labels": [label],
        "hop": hop,
        "extra": dict(extra),
    }


def _pair(hop: str, i: int) -> dict:
    return {
        "pair_id": f"synqa2:minimal:{hop}-{i}",
        "kind": "minimal",
        "example_a": f"{hop}-{i}-valid",
        "example_b": f"{hop}-{i}-false",
        "role_a": "valid",
        "role_b": "false_assumption",
    }
