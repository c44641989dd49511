"""NLI training data reader: every source of shared/datasets/nli_train, the combined load, the held-out split,
errors."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from backend.datasets.base import DataError
from backend.training import nli_data
from backend.training.nli_data import COLUMNS, DEFAULT, LICENSES, READERS, SEVEN, heldout_split, load, read_source
from tests.helpers.data import shared

# name: (pairs read, pairs after load()'s de-duplication within the source, splits).
# "read" is the SOURCE.md figure where it states one (cited per line); "loaded" is measured.
EXPECTED = {
    "sick": (9_840, 9_840, {"train", "trial", "test"}),  # SOURCE.md: 9,840 pairs
    "snli_esnli": (19_666, 19_664, {"dev", "test"}),  # SOURCE.md: 9,842 dev + 9,824 test
    "mnli_dev_matched": (9_815, 9_815, {"dev"}),  # SOURCE.md: 9,815 pairs
    "taxinli": (10_071, 10_071, {""}),  # SOURCE.md: 10,071 pairs
    "anli_dev": (3_198, 3_198, {"dev"}),  # SOURCE.md: 1,000 + 1,000 + 1,198
    "cad_snli": (11_330, 11_287, {"train", "dev", "test"}),  # SOURCE.md: 11,330 total
    "imppres": (25_500, 25_473, {""}),  # SOURCE.md: 17,100 + 8,400
    "lingnli": (52_354, 52_309, {"train", "val"}),  # SOURCE.md: 44,983 train + 7,371 val
    "semi_automatic_nli": (25_594, 25_594, {"train", "test"}),  # SOURCE.md: 24,464 train + 1,130 test
    # SOURCE.md: 23,999 train + 8,000 dev + 8,000 test; monotonicity_simple's train file has 3,000
    # records (2,999 newlines: no newline after the last record), hence 40,000.
    "semantic_fragments": (40_000, 39_867, {"train", "dev", "test"}),
    "conjnli": (15_623, 15_608, {"train", "dev"}),  # SOURCE.md: 15,000 + 623
    "mpe": (9_999, 9_995, {"train", "dev", "test"}),  # SOURCE.md: 10,000 less the malformed dev row
    "breaking_nli": (8_193, 8_193, {"test"}),  # SOURCE.md: 8,193 records
    "control_nli": (1_604, 1_590, {"dev", "test"}),  # SOURCE.md: 799 dev + 805 test
}


@pytest.fixture(scope="module")
def root() -> Path:
    return shared("nli_train")


@pytest.fixture(scope="module")
def frames(root):
    """Each source read once: name -> (read_source frame, load frame)."""
    cache: dict[str, tuple[pd.DataFrame, pd.DataFrame]] = {}

    def get(name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
        if name not in cache:
            cache[name] = (read_source(name, root), load(root, [name]))
        return cache[name]

    return get


@pytest.fixture(scope="module")
def default_frame(root) -> pd.DataFrame:
    return load(root)


def test_every_source_has_an_expectation_and_a_licence():
    assert set(READERS) == set(EXPECTED) == set(LICENSES)
    assert DEFAULT == SEVEN + ["lingnli"] and len(SEVEN) == 7
    assert nli_data.default_root().name == "nli_train"


@pytest.mark.parametrize("name", list(READERS))
def test_source(frames, name):
    raw, loaded = frames(name)
    n_read, n_loaded, splits = EXPECTED[name]
    assert (len(raw), len(loaded)) == (n_read, n_loaded)
    assert list(loaded.columns) == COLUMNS
    assert set(loaded["label"]) == {"E", "N", "C"}
    assert (loaded["premise"].str.strip() != "").all() and (loaded["hypothesis"].str.strip() != "").all()
    assert set(loaded["source"]) == {name} and set(loaded["license"]) == {LICENSES[name]}
    assert set(loaded["split"]) == splits
    assert not loaded.duplicated(["premise", "hypothesis"]).any()


def test_label_distributions_match_source_md(frames):
    counts = {
        name: frames(name)[0]["label"].value_counts().to_dict() for name in ("sick", "breaking_nli", "mnli_dev_matched")
    }
    assert counts["sick"] == {"N": 5_595, "E": 2_821, "C": 1_424}
    assert counts["breaking_nli"] == {"C": 7_164, "E": 982, "N": 47}
    assert counts["mnli_dev_matched"] == {"E": 3_479, "N": 3_123, "C": 3_213}


def test_taxinli_quoted_fields_are_unquoted(frames):
    # taxinli10k.tsv CSV-quotes fields holding quotes ('"""But it''s ...'); read as QUOTE_NONE they would
    # keep the quoting and miss 35 overlaps with mnli_dev_matched (see test_default_load_...).
    taxinli = frames("taxinli")[0]
    assert not taxinli["premise"].str.startswith('"""').any() and not taxinli["hypothesis"].str.startswith('"""').any()


def test_default_load_deduplicates_across_sources(default_frame):
    assert len(default_frame) == 137_819
    assert not default_frame.duplicated(["premise", "hypothesis"]).any()
    per_source = default_frame["source"].value_counts()
    assert per_source["taxinli"] == 6_238  # 3,833 TaxiNLI pairs are MNLI dev-matched pairs read earlier
    assert list(per_source.sort_index().index) == sorted(DEFAULT)


def test_heldout_split_is_deterministic_grouped_and_stratified(default_frame):
    train, heldout = heldout_split(default_frame, fraction=0.05, seed=0)
    again_train, again_heldout = heldout_split(default_frame, fraction=0.05, seed=0)
    assert train.index.equals(again_train.index) and heldout.index.equals(again_heldout.index)
    assert len(train) + len(heldout) == len(default_frame)
    assert not set(train["premise"]) & set(heldout["premise"])
    share = heldout["source"].value_counts() / default_frame["source"].value_counts()
    assert share.between(0.045, 0.07).all(), share
    other = heldout_split(default_frame, fraction=0.05, seed=1)[1]
    assert not other.index.equals(heldout.index)


def test_heldout_split_fraction_bounds(default_frame):
    assert heldout_split(default_frame, fraction=0.0)[1].empty
    with pytest.raises(ValueError):
        heldout_split(default_frame, fraction=1.0)


def test_unknown_source_lists_allowed_values(tmp_path):
    with pytest.raises(ValueError, match="allowed: sick, snli_esnli"):
        load(tmp_path, ["nope"])


# ------------------------------------------------------------------ malformed files (no shared data needed)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_broken_jsonl_names_file_and_line(tmp_path):
    good = '{"premise": "A dog runs.", "hypothesis": "An animal moves.", "label": "entailment"}\n'
    path = _write(
        tmp_path / "lingnli" / "NLI_data" / "1_Baseline_protocol" / "train_round1_baseline.jsonl",
        good + '{"premise": "A cat sits.", "hypothesis": \n',
    )
    with pytest.raises(DataError) as err:
        load(tmp_path, ["lingnli"])
    assert (err.value.path, err.value.line) == (str(path), 2)


def test_missing_jsonl_field_and_unknown_label(tmp_path):
    path = _write(tmp_path / "control_nli" / "dev.jsonl", '{"premise": "P.", "label": "e"}\n')
    _write(tmp_path / "control_nli" / "test.jsonl", "")
    with pytest.raises(DataError) as err:
        load(tmp_path, ["control_nli"])
    assert (err.value.path, err.value.line, err.value.field) == (str(path), 1, "hypothesis")
    path.write_text('{"premise": "P.", "hypothesis": "H.", "label": "maybe"}\n')
    with pytest.raises(DataError, match="unknown label") as err:
        load(tmp_path, ["control_nli"])
    assert err.value.field == "label"


def test_broken_tsv_names_file_and_line(tmp_path):
    _write(tmp_path / "conjnli" / "conj_dev.tsv", "\ufeffPremise\tHypothesis\tLabel\nA b.\tA.\tentailment\n")
    path = _write(
        tmp_path / "conjnli" / "adversarial_train_15k.tsv",
        '\ufeffPremise\tHypothesis\tLabel\nA b.\tA.\tentailment\n"Quoted\tonly two fields\n',
    )
    with pytest.raises(DataError, match="expected 3 tab-separated fields, got 2") as err:
        load(tmp_path, ["conjnli"])
    assert (err.value.path, err.value.line) == (str(path), 3)


def test_snli_dash_labels_are_dropped_and_misaligned_files_fail(tmp_path):
    base = tmp_path / "snli_esnli" / "dataset" / "eSNLI"
    for split in ("dev", "test"):
        _write(base / f"s1.{split}", "A man sleeps .\nA man sleeps .\nA dog barks .\n")
        _write(base / f"s2.{split}", f"A person rests .\nA man runs .\nA {split} animal is loud .\n")
        _write(base / f"labels.{split}", "entailment\n-\nneutral\n")
    frame = load(tmp_path, ["snli_esnli"])
    assert list(frame["label"]) == ["E", "N", "N"] and list(frame["split"]) == ["dev", "dev", "test"]
    _write(base / "labels.test", "entailment\n")
    with pytest.raises(DataError, match="lines"):
        load(tmp_path, ["snli_esnli"])


def test_broken_zip_member_names_member_and_line(tmp_path):
    (tmp_path / "breaking_nli").mkdir()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(
            "data/dataset.jsonl", '{"sentence1": "A.", "sentence2": "B.", "gold_label": "neutral"}\r\n[1]\r\n'
        )
    (tmp_path / "breaking_nli" / "breaking_nli_dataset.zip").write_bytes(buffer.getvalue())
    with pytest.raises(DataError, match="expected a JSON object") as err:
        load(tmp_path, ["breaking_nli"])
    assert err.value.path.endswith("breaking_nli_dataset.zip!data/dataset.jsonl") and err.value.line == 2


def test_missing_folder_is_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match="sick"):
        load(tmp_path, ["sick"])
