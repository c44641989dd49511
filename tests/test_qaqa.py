"""(QA)² loader (issue 13): the real files' counts as in ../shared/datasets/qaqa/SOURCE.md, and broken rows
named by file, line and field."""

from __future__ import annotations

import csv
import shutil
from collections import Counter

import pytest

from backend.datasets import qaqa
from backend.datasets.base import DataError, Source
from tests.helpers.data import shared


def load(root):
    return qaqa.load({"qaqa": Source("qaqa", root, "shared")})


def test_the_real_files_load_with_the_documented_counts():
    bundle = load(shared("qaqa"))
    rows = bundle.examples
    assert Counter((r["split"], r["gold_label"]) for r in rows) == {
        ("eval", "FP"): 285,
        ("eval", "N"): 285,
        ("adaptation", "FP"): 16,
        ("adaptation", "N"): 16,
    }
    evaluation = [r for r in rows if r["split"] == "eval"]
    kinds = Counter(r["extra"]["assumption_type"] for r in evaluation)
    assert kinds == {"failure": 230, "unverifiable": 55, "no_failure": 285}
    status = Counter(r["extra"]["status_can_change"] for r in evaluation)
    assert status == {None: 285, "can_change": 170, "cannot_change": 114, "can_change || cannot_change": 1}
    words = Counter(r["question_type"] for r in evaluation)
    assert (words["when"], words["who"], words["what"], words["where"], words["how"], words["why"]) == (
        224,
        144,
        62,
        59,
        42,
        32,
    )
    assert words["which"] + words["other"] == 7
    first = next(r for r in rows if r["example_id"] == "eval-0")
    assert first["input"] == "what did pete burns die of" and first["gold_label"] == "N"
    assert first["gold_answers"] == ["Pete Burns died following a sudden cardiac arrest."]
    assert all(bool(r["gold_presuppositions"]) == (r["gold_label"] == "FP") for r in rows)  # has_invalid ⇔ assumption
    assert sum(len(r["extra"]["urls"]) > 1 for r in evaluation) == 30  # rows citing several URLs
    assert not {r["input"] for r in rows if r["split"] == "eval"} & {
        r["input"] for r in rows if r["split"] == "adaptation"
    }


@pytest.mark.parametrize(
    "column, value, problem",
    [
        ("all_assumptions_valid", "maybe", "expected one of"),
        ("type_questionable_assumption", "no_failure", "contradicts"),
        ("assumption_status_can_change", "sometimes", "expected one of"),
        ("question", " ", "empty question"),
    ],
)
def test_a_broken_row_names_the_file_line_and_field(tmp_path, column, value, problem):
    root = tmp_path / "qaqa"
    shutil.copytree(shared("qaqa"), root)
    path = root / "Data" / "QAQA.csv"
    path.chmod(0o644)
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    rows[3][column] = value  # row idx 3 has an invalid assumption ("who owns the rights of the bible")
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(DataError) as found:
        load(root)
    assert problem in str(found.value) and "QAQA.csv" in str(found.value) and column in str(found.value)
    assert found.value.line is not None and found.value.line > 4  # the header is line 1, rows may span lines
