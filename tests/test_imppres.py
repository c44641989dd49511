"""IMPPRES presupposition loader (issue 13): the real files' counts as in
../shared/datasets/nli_train/imppres/SOURCE.md, families and pairs, broken lines named by file, line, field."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest

from backend.datasets import imppres
from backend.datasets.base import DataError, Source
from tests.helpers.data import shared


def load(root):
    return imppres.load({"imppres": Source("imppres", root, "shared")})


def test_the_real_files_load_with_the_documented_counts():
    bundle = load(shared("nli_train/imppres"))
    items = bundle.examples
    assert len(items) == 17_100 and Counter(i["trigger_type"] for i in items) == dict.fromkeys(imppres.TRIGGERS, 1900)
    assert Counter(i["gold_label"] for i in items) == {"E": 4500, "N": 7200, "C": 5400}
    targets = [i for i in items if not i["extra"]["control"]]
    cells = Counter((i["extra"]["operator"], i["extra"]["hypothesis_kind"], i["gold_label"]) for i in targets)
    expected = {"positive": "E", "negated": "C", "neutral": "N"}  # the presupposition projects under every operator
    assert cells == {(op, kind, label): 900 for op in imppres.OPERATORS for kind, label in expected.items()}
    controls = Counter((i["extra"]["operator"], i["gold_label"]) for i in items if i["extra"]["control"])
    assert controls == {
        ("negated vs unembedded", "C"): 900,
        ("interrogative vs unembedded", "N"): 900,
        ("modal vs unembedded", "N"): 900,
        ("conditional vs unembedded", "N"): 900,
    }
    assert len({i["extra"]["family"] for i in items}) == 900  # 100 paradigms per trigger
    assert Counter(p["kind"] for p in bundle.pairs) == {
        "negation": 900,
        "question": 900,
        "modal": 900,
        "conditional": 900,
    }
    by_id = {i["example_id"]: i for i in items}
    pair = next(p for p in bundle.pairs if p["pair_id"] == "imppres:cleft_existence:0:negated")
    a, b = by_id[pair["example_a"]], by_id[pair["example_b"]]
    assert (
        a["input"] == "It is Douglas that did work with Tanya."
        and a["hypothesis"] == b["hypothesis"] == "Someone did work with Tanya"
    )
    assert b["extra"]["operator"] == "negated" and b["gold_label"] == "E"


@pytest.mark.parametrize(
    "field, value, problem",
    [
        ("gold_label", "maybe", "expected one of"),
        ("trigger", "embedded", "expected one of"),
        ("UID", "clefts", "the file's trigger"),
        ("paradigmID", "0", "expected int"),
    ],
)
def test_a_broken_line_names_the_file_line_and_field(tmp_path, field, value, problem):
    root = tmp_path / "imppres"
    shutil.copytree(shared("nli_train/imppres") / "dataset", root / "dataset")
    path = root / imppres.FOLDER / "cleft_existence.jsonl"
    path.chmod(0o644)
    lines = path.read_text().splitlines()
    broken = json.loads(lines[6])
    broken[field] = value
    lines[6] = json.dumps(broken)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as found:
        load(root)
    assert found.value.line == 7 and found.value.field == field and problem in found.value.problem
    assert "cleft_existence.jsonl" in str(found.value)


def test_evaluate_breaks_imppres_and_commitmentbank_down_by_operator(real_con):
    from backend.analysis import evaluation as evaluate

    for dataset, operators in (
        ("imppres", set(imppres.OPERATORS)),
        ("commitmentbank", {"negation", "modal", "question", "conditional"}),
    ):
        table = evaluate.evaluate(real_con, dataset)["Accuracy by facet"]
        by_operator = table[table["facet"] == "extra.operator"]
        assert operators <= set(by_operator["value_of_facet"]), dataset
        assert (
            by_operator.groupby("run")["n"]
            .sum()
            .eq(len(real_con.execute("SELECT 1 FROM examples WHERE dataset_id = $d", {"d": dataset}).fetchall()))
            .all()
        )
