"""Syn-(QA)² loader: single- and multi-hop minimal pairs from the three (inferred) CSV files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from backend.datasets import synqa2
from backend.datasets.base import DataError, Source

FIXTURE = Path(__file__).parent / "fixtures" / "synqa2"
FILES = {
    "Singlehop_question.csv": "Singlehop_question.csv",
    "singlehop_unperturbed.csv": "singlehop_unperturbed.csv",
    "Hotpot_Questions.csv": "Datasets/Hotpot_Questions.csv",
}


def load(folder: Path):
    return synqa2.load({"synqa2": Source("synqa2", folder, "command line")})


def copy_fixture(tmp_path: Path, drop: tuple[str, ...] = ()) -> Path:
    folder = tmp_path / "synqa2"
    shutil.copytree(FIXTURE, folder)
    for name in drop:
        (folder / FILES[name]).unlink()
    return folder


@pytest.fixture(scope="module")
def bundle():
    return load(FIXTURE)


def by_id(bundle) -> dict[str, dict]:
    return {e["example_id"]: e for e in bundle.examples}


@pytest.mark.parametrize("hop, n_pairs", [("single", 3), ("multi", 2)])
def test_counts_per_hop_and_label(bundle, hop, n_pairs):
    rows = [e for e in bundle.examples if e["hop"] == hop]
    assert sum(e["gold_label"] == "N" for e in rows) == n_pairs
    assert sum(e["gold_label"] == "FP" for e in rows) == n_pairs
    assert sum(p["pair_id"].startswith(f"synqa2:minimal:{hop}-") for p in bundle.pairs) == n_pairs
    assert {e["split"] for e in rows} == {"test"} and bundle.notes == []


def test_pairs_put_the_valid_member_first(bundle):
    examples = by_id(bundle)
    for pair in bundle.pairs:
        a, b = examples[pair["example_a"]], examples[pair["example_b"]]
        assert (pair["kind"], pair["role_a"], pair["role_b"]) == ("minimal", "valid", "false_assumption")
        assert (a["gold_label"], b["gold_label"]) == ("N", "FP") and a["hop"] == b["hop"]
    pair = next(p for p in bundle.pairs if p["pair_id"] == "synqa2:minimal:single-0")
    assert examples[pair["example_a"]]["input"] == "Who did Barack Obama marry in 1992?"
    assert examples[pair["example_b"]]["input"] == "Who did Joe Biden marry in 1992?"


@pytest.mark.parametrize(
    "example_id, question, yes_no",
    [
        (
            "single-1-false",
            "In which city was Pierre Curie, the chemist, born in 1867?",
            "Was Pierre Curie born in 1867?",
        ),
        ("single-1-valid", "In which city was Marie Curie, the physicist, born?", "Was Marie Curie born in 1867?"),
        (
            "multi-0-false",
            "Which magazine was started first Arthur's Magazine or Women's Health?",
            "Was Women's Health started before Arthur's Magazine?",
        ),
    ],
)
def test_question_column_and_yes_no_question(bundle, example_id, question, yes_no):
    ex = by_id(bundle)[example_id]
    assert ex["input"] == question and ex["gold_labels"] == [ex["gold_label"]]
    assert ex["extra"]["yes_no_question"] == yes_no


def test_other_columns_go_to_extra(bundle):
    false = by_id(bundle)["single-0-false"]
    assert false["extra"]["original_question"] == "Who did Barack Obama marry in 1992?"  # 'question' wins
    assert false["extra"]["relation"] == "P26" and "question" not in false["extra"]
    multi = by_id(bundle)["multi-0-valid"]
    assert multi["extra"]["Supporting Facts"] == ["Arthur's Magazine", "First for Women"]
    assert len(multi["extra"]["Context Titles"]) == 4


def test_multi_hop_answer_belongs_to_the_valid_member(bundle):
    examples = by_id(bundle)
    assert examples["multi-1-valid"]["gold_answers"] == ["Greenwich Village"]
    assert not examples["multi-1-false"].get("gold_answers")
    assert (
        examples["multi-1-false"]["input"]
        == 'The director of the romantic comedy "Serendipity" is based in what New York city?'
    )


@pytest.mark.parametrize(
    "missing, n_examples, n_pairs",
    [
        ("Singlehop_question.csv", 7, 2),
        ("singlehop_unperturbed.csv", 7, 2),
        ("Hotpot_Questions.csv", 6, 3),
    ],
)
def test_missing_file_is_noted_and_the_rest_loaded(tmp_path, missing, n_examples, n_pairs):
    loaded = load(copy_fixture(tmp_path, drop=(missing,)))
    assert (len(loaded.examples), len(loaded.pairs)) == (n_examples, n_pairs)
    assert len(loaded.notes) == 1 and missing in loaded.notes[0]


def test_files_are_found_at_any_depth_and_in_any_case(tmp_path):
    folder = tmp_path / "archive" / "data" / "Syn-QA2 data"  # deeper than the __MACOSX copy
    folder.mkdir(parents=True)
    for name, rel in FILES.items():
        shutil.copy(FIXTURE / rel, folder / name.lower())
    (tmp_path / "archive" / "__MACOSX").mkdir()
    (tmp_path / "archive" / "__MACOSX" / "Hotpot_Questions.csv").write_bytes(b"\x00\x05junk")
    loaded = load(tmp_path / "archive")
    assert len(loaded.examples) == 10 and len(loaded.pairs) == 5


def test_single_hop_row_count_mismatch_names_both_files(tmp_path):
    folder = copy_fixture(tmp_path)
    path = folder / "singlehop_unperturbed.csv"
    path.write_text("\n".join(path.read_text().splitlines()[:3]) + "\n")
    with pytest.raises(DataError) as err:
        load(folder)
    message = str(err.value)
    assert "Singlehop_question.csv" in message and "singlehop_unperturbed.csv" in message
    assert "3 rows" in message and "2 rows" in message


@pytest.mark.parametrize(
    "rel, old, new, expected",
    [
        (
            "Datasets/Hotpot_Questions.csv",
            '"The director of the romantic comedy ""Serendipity"" is based in what New York city?"',
            '""',
            "Hotpot_Questions.csv, line 3: field 'New Question': empty question text",
        ),
        (
            "Singlehop_question.csv",
            "Who wrote Sense and Sensibility in 1813?",
            "  ",
            "Singlehop_question.csv, line 4: field 'question': empty question text",
        ),
        ("singlehop_unperturbed.csv", "original_question", "text", "singlehop_unperturbed.csv, line 1: missing column"),
        (
            "Datasets/Hotpot_Questions.csv",
            "Old Question",
            "Original",
            "Hotpot_Questions.csv, line 1: missing column(s) ['Old Question']",
        ),
    ],
)
def test_bad_rows_name_file_line_and_column(tmp_path, rel, old, new, expected):
    folder = copy_fixture(tmp_path)
    path = folder / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(DataError) as err:
        load(folder)
    assert expected in str(err.value)
