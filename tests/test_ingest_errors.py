"""A malformed file stops its dataset with an error naming file, line and field; the store is unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backend.imports.ingest import ingest
from backend.store.connection import connect
from tests.helpers.data import shared

MAIN = "annotated_corpus/nli_corpus.main.jsonl"


def small_nope(tmp_path: Path, lines: int = 6) -> Path:
    """The first `lines` main-corpus items of the real NOPE release, as a dataset folder."""
    root = tmp_path / "nope"
    (root / "annotated_corpus").mkdir(parents=True)
    head = (shared("nope") / MAIN).read_text().splitlines()[:lines]
    (root / MAIN).write_text("\n".join(head) + "\n")
    return root


def small_falseqa(tmp_path: Path) -> Path:
    root = tmp_path / "falseqa" / "dataset"
    root.mkdir(parents=True)
    head = (shared("falseqa") / "dataset/test.csv").read_text().splitlines()[:5]
    (root / "test.csv").write_text("\n".join(head) + "\n")
    return root.parent


def corrupt_line(path: Path, number: int, change) -> None:
    lines = path.read_text().splitlines()
    lines[number - 1] = change(lines[number - 1])
    path.write_text("\n".join(lines) + "\n")


def edit_json(key_path: list[str], value=None, delete=False):
    def change(line: str) -> str:
        obj = json.loads(line)
        target = obj
        for key in key_path[:-1]:
            target = target[key]
        if delete:
            del target[key_path[-1]]
        else:
            target[key_path[-1]] = value
        return json.dumps(obj)

    return change


NOPE_BREAKS = [
    ("bad JSON line", lambda line: line[:40], "line 3: not valid JSON"),
    ("missing field", edit_json(["hypothesis"], delete=True), "line 3: field 'hypothesis': missing"),
    ("wrong type", edit_json(["metadata", "adversarial"], "no"), "line 3: field 'metadata.adversarial': expected bool"),
    ("bad label", edit_json(["label"], "X"), "line 3: field 'label': expected one of ['E', 'N', 'C']"),
    ("bad trigger data", edit_json(["metadata", "trigger_data"], "{'a': "), "line 3: field 'metadata.trigger_data'"),
]


def snapshot(store: Path):
    con = connect(store, read_only=True)
    rows = con.execute("SELECT dataset_id, example_id, input, gold_label FROM examples ORDER BY ALL").fetchall()
    loaded = con.execute("SELECT dataset_id, sha256 FROM datasets ORDER BY ALL").fetchall()
    con.close()
    return rows, loaded


@pytest.mark.parametrize("name, change, expected", NOPE_BREAKS, ids=[b[0] for b in NOPE_BREAKS])
def test_malformed_nope_names_file_line_field_and_keeps_store(tmp_path, name, change, expected):
    store = tmp_path / "s.duckdb"
    good = small_nope(tmp_path)
    assert ingest(["nope"], {"nope": good}, store)[0].status == "loaded"
    before = snapshot(store)
    broken = small_nope(tmp_path / "broken")
    corrupt_line(broken / MAIN, 3, change)
    (result,) = ingest(["nope"], {"nope": broken}, store)
    assert result.status == "failed"
    assert str(broken / MAIN) in result.message and expected in result.message
    assert snapshot(store) == before
    assert len(before[0]) == 6


def test_undecodable_bytes_name_the_line(tmp_path):
    broken = small_nope(tmp_path)
    path = broken / MAIN
    path.write_bytes(path.read_bytes().replace(b"headlights", b"headl\x85ghts", 1))
    (result,) = ingest(["nope"], {"nope": broken}, tmp_path / "s.duckdb")
    assert result.status == "failed"
    assert f"{path}, line 1: bytes are not valid utf-8" in result.message


@pytest.mark.parametrize(
    "bad_row, expected",
    [
        ('"Why is the sky green?","[\'It is not.\']",7', "line 2: field 'label': expected 0 or 1, got '7'"),
        ('"Why is the sky green?","[\'unclosed",1', "line 2: field 'answer': expected a Python-literal list"),
    ],
)
def test_malformed_falseqa(tmp_path, bad_row, expected):
    root = small_falseqa(tmp_path)
    corrupt_line(root / "dataset/test.csv", 2, lambda _: bad_row)
    (result,) = ingest(["falseqa"], {"falseqa": root}, tmp_path / "s.duckdb")
    assert result.status == "failed" and expected in result.message


def test_malformed_ifqa_names_item_and_field(tmp_path):
    root = tmp_path / "ifqa"
    (root / "dataset/full_split").mkdir(parents=True)
    items = json.loads((shared("ifqa") / "dataset/full_split/dev.json").read_text())[:3]
    items[1]["answers"] = "4"
    (root / "dataset/full_split/dev.json").write_text(json.dumps(items))
    (result,) = ingest(["ifqa"], {"ifqa": root}, tmp_path / "s.duckdb")
    assert result.status == "failed" and "field '[1].answers': expected list, got str" in result.message


def test_a_failed_dataset_does_not_stop_the_others(tmp_path):
    broken = small_nope(tmp_path)
    corrupt_line(broken / MAIN, 2, lambda line: "{")
    results = {
        r.dataset: r.status
        for r in ingest(
            ["nope", "falseqa"], {"nope": broken, "falseqa": small_falseqa(tmp_path)}, tmp_path / "s.duckdb"
        )
    }
    assert results == {"nope": "failed", "falseqa": "loaded"}


def test_a_failed_baseline_refresh_does_not_claim_the_store_is_unchanged(tmp_path, monkeypatch):
    import duckdb

    from backend.datasets import baselines

    def fail(con, dataset_ids=None, embedder=None):
        raise duckdb.IOException("simulated: disk full")

    monkeypatch.setattr(baselines, "refresh", fail)
    (result,) = ingest(["falseqa"], {"falseqa": small_falseqa(tmp_path)}, tmp_path / "s.duckdb")
    assert result.status == "failed" and "unchanged" not in result.message
    assert "loaded, but its trivial baselines could not be rewritten" in result.message
    assert "python -m backend baselines" in result.message
    assert snapshot(tmp_path / "s.duckdb")[1][0][0] == "falseqa"  # the examples are in, as the message says
