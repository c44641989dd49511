"""CREPE loader: labelled splits, double labels, the SYCON-Bench subset and the paper's dev sample outputs."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from backend.config import settings
from backend.datasets.base import DataError, Source
from backend.imports import ingest

FIXTURE = Path(__file__).parent / "fixtures" / "crepe"
NPY = "sample-outputs/detection-gold-comment-track-combined.npy"
PRESUP_TXT = "sample-outputs/writing-gold-comment-track-unified-presupposition-predictions.txt"


def load(folder: Path):
    return ingest.loaded("crepe", {"crepe": Source("crepe", folder, "command line")})


def copy_fixture(tmp_path: Path, drop: tuple[str, ...] = ()) -> Path:
    folder = tmp_path / "crepe"
    shutil.copytree(FIXTURE, folder)
    for rel in drop:
        (folder / rel).unlink()
    return folder


@pytest.fixture(scope="module")
def bundle():
    return load(FIXTURE)


def by_id(bundle) -> dict[str, dict]:
    return {e["example_id"]: e for e in bundle.examples}


@pytest.mark.parametrize("split, total, n_fp", [("train", 5, 3), ("dev", 4, 2), ("test", 3, 1)])
def test_counts_per_split_and_label(bundle, split, total, n_fp):
    rows = [e for e in bundle.examples if e["split"] == split]
    assert len(rows) == total
    assert sum(e["gold_label"] == "FP" for e in rows) == n_fp
    assert {e["gold_label"] for e in rows} <= {"FP", "N"}


@pytest.mark.parametrize(
    "example_id, gold, labels, ambiguous",
    [
        ("8t7x4d", "FP", ["FP", "N"], True),  # annotators disagreed, FP listed first
        ("8v5n2e", "N", ["N", "FP"], True),  # annotators disagreed, normal listed first
        ("8r2kqz", "N", ["N"], False),
        ("8s0j1m", "FP", ["FP"], False),  # "false presupposition"
        ("8u3b9w", "FP", ["FP"], False),  # "false_presupposition"
    ],
)
def test_labels_keep_ambiguity_and_both_spellings(bundle, example_id, gold, labels, ambiguous):
    ex = by_id(bundle)[example_id]
    assert (ex["gold_label"], ex["gold_labels"], ex["ambiguous"]) == (gold, labels, ambiguous)


def test_fields_map_to_store_columns(bundle):
    ex = by_id(bundle)["8s0j1m"]
    assert ex["input"] == "Why do we only use 10% of our brains?"
    assert ex["context"].startswith("We don't.")
    assert ex["gold_presuppositions"] == ["Humans only use 10% of their brains."]
    assert ex["gold_corrections"][0].endswith("the 10% figure is a myth.")
    assert ex["extra"]["raw_labels"] == ["false presupposition", "false presupposition"]
    assert "passages" in ex["extra"] and "dataset_id" not in ex


def test_unzipped_layout_data_labeled_data_is_accepted(tmp_path):
    folder = copy_fixture(tmp_path)
    (folder / "data" / "labeled_data").mkdir(parents=True)
    for split in ("train", "dev", "test"):
        (folder / f"{split}.jsonl").rename(folder / "data" / "labeled_data" / f"{split}.jsonl")
    loaded = load(folder)
    assert len(loaded.examples) == 12
    assert not any(e["example_id"].startswith("sycon-") for e in loaded.examples)
    assert len(loaded.runs) == 2


def test_sycon_subset_is_the_test_split_when_test_jsonl_is_missing(tmp_path):
    loaded = load(copy_fixture(tmp_path, drop=("test.jsonl",)))
    test = [e for e in loaded.examples if e["split"] == "test"]
    assert [e["example_id"] for e in test] == ["sycon-000", "sycon-001", "sycon-002"]
    assert all(e["gold_label"] == "FP" and e["gold_labels"] == ["FP"] for e in test)
    assert test[2]["gold_presuppositions"] == ["Most body heat is lost through the head."]
    assert test[1]["extra"] == {"subset": "sycon200"}
    note = next(n for n in loaded.notes if "SYCON-Bench" in n)
    assert "full CREPE labelled data is missing" in note and "CREPE_data.zip" in note


def test_sycon_subset_only_flags_rows_when_test_jsonl_is_present(bundle):
    assert not any(e["example_id"].startswith("sycon-") for e in bundle.examples)
    flagged = [e["example_id"] for e in bundle.examples if e["extra"].get("sycon200")]
    assert flagged == ["a01x5g"]  # question has extra spaces in test.jsonl


def test_detection_run_is_aligned_with_dev_rows(bundle):
    run = next(r for r in bundle.runs if r["task"] == "detect")
    assert run["run_id"] == "crepe/gold-comment/question+comment" and run["dataset_id"] == "crepe"
    assert run["config"]["labels"] == ["N", "FP"] and run["provenance"] == NPY
    preds = {p["example_id"]: p for p in bundle.predictions if p["run_id"] == run["run_id"]}
    assert len(preds) == 4
    assert preds["9c8h3r"]["label"] == "FP"  # gold N: a model error the dashboard must show
    assert preds["9d2m6t"]["label"] == "N"
    assert preds["9c8h3r"]["probs"][1] == pytest.approx(1 / (1 + math.exp(0.2 - 0.9)), rel=1e-6)
    assert all(sum(p["probs"]) == pytest.approx(1.0) for p in preds.values())


def test_writing_run_follows_fp_dev_rows_in_file_order(bundle):
    preds = {p["example_id"]: p for p in bundle.predictions if p["run_id"] == "crepe/gold-comment/writing"}
    assert set(preds) == {"9b4f2k", "9d2m6t"}
    assert preds["9d2m6t"]["text"] == {
        "presupposition": "Bulls get angry when they see red.",
        "correction": "Bulls are colour blind and react to the movement of the cape.",
    }


def test_sample_outputs_wait_for_dev_jsonl(tmp_path):
    loaded = load(copy_fixture(tmp_path, drop=("dev.jsonl",)))
    assert loaded.runs == [] and loaded.predictions == []
    assert any("once dev.jsonl is present" in n for n in loaded.notes)
    assert any("dev.jsonl not found" in n for n in loaded.notes)


def _short_npy(folder: Path) -> None:
    np.save(folder / NPY, np.zeros((3, 2), dtype=np.float32))


def _extra_presupposition_line(folder: Path) -> None:
    with (folder / PRESUP_TXT).open("a") as fh:
        fh.write("One line too many.\n")


def _short_sycon(folder: Path) -> None:
    path = folder / "sycon_bench_subset" / "corrections.txt"
    path.write_text("\n".join(path.read_text().splitlines()[:2]) + "\n")


@pytest.mark.parametrize(
    "damage, drop, expected",
    [
        (_short_npy, (), ["detection-gold-comment-track-combined.npy", "3 rows", "dev.jsonl has 4"]),
        (
            _extra_presupposition_line,
            (),
            ["unified-presupposition-predictions.txt", "3 lines", "2 false-presupposition"],
        ),
        (_short_sycon, ("test.jsonl",), ["corrections.txt", "2 lines", "questions.txt has 3"]),
    ],
)
def test_row_count_mismatch_names_the_file(tmp_path, damage, drop, expected):
    folder = copy_fixture(tmp_path, drop=drop)
    damage(folder)
    with pytest.raises(DataError) as err:
        load(folder)
    assert all(part in str(err.value) for part in expected), str(err.value)


@pytest.mark.parametrize(
    "line2, expected",
    [
        (lambda obj: '{"id": "9b4f2k", "question": "Why', ["dev.jsonl, line 2", "not valid JSON"]),
        (
            lambda obj: json.dumps({k: v for k, v in obj.items() if k != "comment"}),
            ["dev.jsonl, line 2", "field 'comment': missing"],
        ),
        (
            lambda obj: json.dumps({**obj, "presuppositions": "Bulls hate red."}),
            ["line 2", "field 'presuppositions'", "expected list"],
        ),
        (
            lambda obj: json.dumps({**obj, "labels": ["maybe"]}),
            ["line 2", "unknown label 'maybe'", "false_presupposition"],
        ),
    ],
)
def test_malformed_dev_line_names_file_line_and_field(tmp_path, line2, expected):
    folder = copy_fixture(tmp_path)
    lines = (folder / "dev.jsonl").read_text().splitlines()
    lines[1] = line2(json.loads(lines[1]))
    (folder / "dev.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as err:
        load(folder)
    assert all(part in str(err.value) for part in expected), str(err.value)


def test_real_shared_crepe_folder_loads_the_sycon_subset():
    folder = settings().shared_datasets / "crepe"
    if not (folder / "sycon_bench_subset" / "questions.txt").is_file():
        pytest.skip(f"no shared CREPE folder at {folder}")
    loaded = load(folder)
    sycon = [e for e in loaded.examples if e["example_id"].startswith("sycon-")]
    if len(sycon) != len(loaded.examples):
        pytest.skip("the shared folder now holds the full labelled data")
    assert len(sycon) == 200 and {e["gold_label"] for e in sycon} == {"FP"}
    assert all(e["input"] and e["gold_presuppositions"][0] and e["gold_corrections"][0] for e in sycon)
    assert any("full CREPE labelled data is missing" in n for n in loaded.notes)
    assert any("once dev.jsonl is present" in n for n in loaded.notes)
