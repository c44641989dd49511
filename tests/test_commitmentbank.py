"""CommitmentBank loader (issue 13): the real file's counts as in ../shared/datasets/commitmentbank/SOURCE.md,
every rating kept, the derived label's rule and counts, and broken rows named by file, line and field."""

from __future__ import annotations

import csv
import io
from collections import Counter

import pytest

from backend.datasets import commitmentbank as cb
from backend.datasets.base import DataError, Source
from tests.helpers.data import shared


def load(root):
    return cb.load({"commitmentbank": Source("commitmentbank", root, "shared")})


def test_the_real_file_loads_with_the_documented_counts():
    bundle = load(shared("commitmentbank"))
    items = bundle.examples
    assert len(items) == 1200 and len({i["example_id"] for i in items}) == 1200
    extra = [i["extra"] for i in items]
    assert Counter(e["genre"] for e in extra) == {"BNC": 632, "SWBD": 464, "WSJ": 104}
    assert Counter(e["operator"] for e in extra) == {"negation": 605, "modal": 311, "question": 167, "conditional": 117}
    assert Counter(e["operator_fine"] for e in extra) == {
        "negation": 572,
        "modal": 311,
        "question": 155,
        "conditional": 116,
        "modal negation": 33,
        "negation question": 8,
        "modal question": 2,
        "conditional question": 2,
        "modal conditional": 1,
    }
    assert Counter(e["factive"] for e in extra) == {"no": 908, "yes": 292}
    assert len(bundle.ratings) == 11_545 and Counter(r["value"] for r in bundle.ratings) == {
        -3: 1509,
        -2: 2046,
        -1: 1066,
        0: 2223,
        1: 1266,
        2: 1438,
        3: 1997,
    }
    assert sum(e["mean_no_target"] is None for e in extra) == 467
    assert Counter(i["gold_label"] for i in items) == {"E": 390, "N": 424, "C": 386}  # the rule in label_of
    first = next(i for i in items if i["example_id"] == "BNC-1002")
    assert first["hypothesis"] == "the Kiwi Keith and the Mackenzie houses had prospered"
    assert first["input"] == "Indeed it could be said that they had prospered." and first["extra"]["modal_type"] == "CI"
    assert first["gold_label"] == "E" and first["extra"]["n_ratings"] == 8


def _broken(tmp_path, column: int, value: str):
    text = (shared("commitmentbank") / cb.FILE).read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    rows[5][column] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    (tmp_path / cb.FILE).write_text(out.getvalue(), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "column, value, field, problem",
    [
        (19, "2, x, 3", "Reponses", "expected integers"),
        (19, "2, 5, 3", "Reponses", "from -3 to 3"),
        (17, "2.5", "Mean", "is not the mean"),
        (12, "sometimes", "Embedding (2nd)", "expected one of"),
        (14, "maybe", "factive", "expected yes or no"),
    ],
)
def test_a_broken_row_names_the_file_line_and_field(tmp_path, column, value, field, problem):
    with pytest.raises(DataError) as found:
        load(_broken(tmp_path, column, value))
    assert found.value.field == field and problem in found.value.problem and found.value.line >= 6
    assert cb.FILE in str(found.value)
