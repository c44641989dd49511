"""One reader per folder of `shared/datasets/nli_train/`: each turns that folder's official files into
a DataFrame of `premise, hypothesis, label, split` with label in E / N / C.

Every folder's SOURCE.md describes its files; each reader's docstring names the format it expects.
Items without a gold label (SNLI-style "-") are dropped; any other unexpected label, a missing
field or a wrong number of tab-separated fields raises a `DataError` naming file, line and field.
`split` is the upstream split, lower-cased ("" where the source has none).
"""

from __future__ import annotations

import csv
import io
import logging
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd

from backend.datasets.base import DataError, iter_jsonl, jsonl_lines, need, read_csv, read_text

log = logging.getLogger(__name__)

COLUMNS = ["premise", "hypothesis", "label", "split"]
LABELS = {"entailment": "E", "neutral": "N", "contradiction": "C", "e": "E", "n": "N", "c": "C"}
NO_GOLD = {"-", ""}

# Short licence strings, taken from each folder's SOURCE.md.
LICENSES = {
    "sick": "CC BY-NC-SA 3.0",
    "snli_esnli": "CC BY-SA 4.0 (SNLI)",
    "mnli_dev_matched": "MultiNLI: OANC / CC BY-SA 3.0 / CC BY 3.0",
    "taxinli": "C-UDA 1.0 (pairs: MultiNLI)",
    "anli_dev": "CC BY-NC 4.0",
    "cad_snli": "Apache-2.0 (pairs: SNLI CC BY-SA 4.0)",
    "imppres": "CC BY-NC 4.0",
    "lingnli": "none stated; research use only",
    "semi_automatic_nli": "none stated; LDC/Wikipedia text; research use only",
    "semantic_fragments": "none stated; research use only",
    "conjnli": "MIT",
    "mpe": "none stated; Flickr30k captions, non-commercial research",
    "breaking_nli": "CC BY-SA 4.0",
    "control_nli": "CC BY-NC-SA 4.0",
}

Row = tuple[str, str, "str | None", str]


# ---------------------------------------------------------------- checked pieces


def _label(value: object, path: Path | str, line: int | None, field: str) -> str | None:
    """Map an upstream label (entailment/neutral/contradiction or e/n/c, any case) to E/N/C; None for "-"."""
    if not isinstance(value, str):
        raise DataError(path, f"expected a label string, got {value!r:.40}", line, field)
    key = value.strip().lower()
    if key in NO_GOLD:
        return None
    if key not in LABELS:
        raise DataError(
            path, f"unknown label {value!r:.40} (expected entailment/neutral/contradiction or e/n/c)", line, field
        )
    return LABELS[key]


def _row(record: dict, path: Path | str, line: int, keys: tuple[str, str, str], split: str) -> Row:
    """(premise, hypothesis, label, split) from a JSON object or a TSV/CSV row, checking each field."""
    premise, hypothesis, label = (need(record, k, str, path, line) for k in keys)
    return premise.strip(), hypothesis.strip(), _label(label, path, line, keys[2]), split


def _frame(rows: list[Row]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=COLUMNS)
    return frame[frame["label"].notna()].reset_index(drop=True)


def _tsv(
    path: Path,
    required: tuple[str, ...] = (),
    *,
    names: tuple[str, ...] | None = None,
    quoted: bool = False,
    encoding: str = "utf-8",
    skip_short: bool = False,
) -> Iterator[tuple[int, dict]]:
    """Yield (line, row) of a tab-separated file: header row unless `names` is given; every row must have
    as many fields as the header. `quoted`: fields are CSV-quoted ("" escapes); otherwise QUOTE_NONE."""
    quoting = csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE
    reader = csv.reader(
        io.StringIO(read_text(path, encoding), newline=""), delimiter="\t", quoting=quoting, strict=quoted
    )
    header = list(names) if names else (_next(reader, path) or [])
    missing = [c for c in required if c not in header]
    if missing:
        raise DataError(path, f"missing column(s) {missing}; header is {header}", 1)
    while (fields := _next(reader, path)) is not None:
        if len(fields) == len(header):
            yield reader.line_num, dict(zip(header, fields))
        elif skip_short and 0 < len(fields) < len(header):
            log.warning(
                "%s, line %d: skipped, %d of %d fields (upstream defect noted in SOURCE.md)",
                path,
                reader.line_num,
                len(fields),
                len(header),
            )
        elif fields:  # a blank line is skipped
            raise DataError(path, f"expected {len(header)} tab-separated fields, got {len(fields)}", reader.line_num)


def _next(reader, path: Path) -> list[str] | None:
    try:
        return next(reader)
    except StopIteration:
        return None
    except csv.Error as exc:
        raise DataError(path, f"bad quoting ({exc})", reader.line_num) from None


def _lines(path: Path) -> list[str]:
    """The lines of a plain-text file, split on "\\n" only (so line-aligned files stay aligned)."""
    lines = read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def _zip_jsonl(path: Path, member: str) -> Iterator[tuple[int, dict]]:
    """Yield (line, object) of a JSON-lines member of a zip archive, read in memory."""
    where = f"{path}!{member}"
    with zipfile.ZipFile(path) as archive:
        if member not in archive.namelist():
            raise DataError(path, f"archive has no member {member!r}")
        data = archive.read(member)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(
            where, f"bytes are not valid utf-8 (byte {exc.start})", data[: exc.start].count(b"\n") + 1
        ) from None
    yield from jsonl_lines(text, where)


def _jsonl(path: Path, split: str, keys: tuple[str, str, str] = ("premise", "hypothesis", "label")) -> list[Row]:
    return [_row(obj, path, line, keys, split) for line, obj in iter_jsonl(path)]


# ---------------------------------------------------------------- the readers


def _read_sick(folder: Path) -> pd.DataFrame:
    """SICK.txt: TSV with header (CRLF, QUOTE_NONE); A->B `entailment_label`; split = `SemEval_set`
    (train/trial/test)."""
    path, keys = folder / "SICK.txt", ("sentence_A", "sentence_B", "entailment_label")
    rows = _tsv(path, keys + ("SemEval_set",))
    return _frame([_row(r, path, line, keys, r["SemEval_set"].strip().lower()) for line, r in rows])


def _read_snli_esnli(folder: Path) -> pd.DataFrame:
    """dataset/eSNLI/{s1,s2,labels}.{dev,test}: three line-aligned plain-text files per split."""
    rows: list[Row] = []
    for split in ("dev", "test"):
        base = folder / "dataset" / "eSNLI"
        premises, hypotheses, labels = (_lines(base / f"{name}.{split}") for name in ("s1", "s2", "labels"))
        if not len(premises) == len(hypotheses) == len(labels):
            raise DataError(
                base / f"labels.{split}", f"s1/s2/labels have {len(premises)}/{len(hypotheses)}/{len(labels)} lines"
            )
        for number, (p, h, label) in enumerate(zip(premises, hypotheses, labels), start=1):
            rows.append((p.strip(), h.strip(), _label(label, base / f"labels.{split}", number, "label"), split))
    return _frame(rows)


def _read_mnli_dev_matched(folder: Path) -> pd.DataFrame:
    """berts_of_a_feather/mnli_development_set_number_of_correct_responses.txt: TSV, header, QUOTE_NONE."""
    path = folder / "berts_of_a_feather" / "mnli_development_set_number_of_correct_responses.txt"
    keys = ("premise", "hypothesis", "gold_label")
    return _frame([_row(r, path, line, keys, "dev") for line, r in _tsv(path, keys)])


def _read_taxinli(folder: Path) -> pd.DataFrame:
    """taxinli10k.tsv: TSV with header whose text fields are CSV-quoted; `label` = original MNLI gold label.
    The file mixes MNLI train and dev pairs without saying which, so split is ""."""
    path, keys = folder / "taxinli10k.tsv", ("prem", "hyp", "label")
    return _frame([_row(r, path, line, keys, "") for line, r in _tsv(path, keys, quoted=True)])


def _read_anli_dev(folder: Path) -> pd.DataFrame:
    """anlizinganli/anli_annot_v0.2/ANLI_analysis_r{1,2,3}_dev.csv: quoted CSV with multi-line fields."""
    keys, rows = ("context", "statement", "gold_label"), []
    for round_ in (1, 2, 3):
        path = folder / "anlizinganli" / "anli_annot_v0.2" / f"ANLI_analysis_r{round_}_dev.csv"
        rows += [_row(r, path, line, keys, "dev") for line, r in read_csv(path, keys)]
    return _frame(rows)


def _read_cad_snli(folder: Path) -> pd.DataFrame:
    """NLI/all_combined/{train,dev,test}.tsv: TSV, header `sentence1 sentence2 gold_label`, CSV-quoted fields."""
    keys, rows = ("sentence1", "sentence2", "gold_label"), []
    for split in ("train", "dev", "test"):
        path = folder / "NLI" / "all_combined" / f"{split}.tsv"
        rows += [_row(r, path, line, keys, split) for line, r in _tsv(path, keys, quoted=True)]
    return _frame(rows)


def _read_imppres(folder: Path) -> pd.DataFrame:
    """dataset/{presupposition,implicature}/*.jsonl: `sentence1`, `sentence2`; presupposition files use
    `gold_label`, implicature files the pragmatic reading `gold_label_prag`. No upstream split."""
    rows: list[Row] = []
    for part, label_key in (("presupposition", "gold_label"), ("implicature", "gold_label_prag")):
        for path in sorted((folder / "dataset" / part).glob("*.jsonl")):
            rows += _jsonl(path, "", ("sentence1", "sentence2", label_key))
    return _frame(rows)


def _read_lingnli(folder: Path) -> pd.DataFrame:
    """NLI_data/<protocol>/{train,val}_round*.jsonl: `premise`, `hypothesis`, `label`; split train / val."""
    rows: list[Row] = []
    for path in sorted((folder / "NLI_data").glob("*/*.jsonl")):
        rows += _jsonl(path, "train" if path.name.startswith("train") else "val")
    return _frame(rows)


def _read_semi_automatic_nli(folder: Path) -> pd.DataFrame:
    """data/<set>/{train,test}.jsonl: `premise`, `hypothesis`, `label` in e/n/c; split = file stem."""
    rows: list[Row] = []
    for path in sorted((folder / "data").glob("*/*.jsonl")):
        rows += _jsonl(path, path.stem)
    return _frame(rows)


SEMANTIC_FRAGMENT_FILES = {
    ("train", "challenge_train.tsv"): "train",
    ("train", "challenge_dev.tsv"): "dev",
    ("test", "challenge_dev.tsv"): "test",
}


def _read_semantic_fragments(folder: Path) -> pd.DataFrame:
    """data/<fragment>/{train,test}/challenge_*.tsv: TSV, no header, `id premise hypothesis LABEL`.
    Skips test/challenge_train.tsv (a byte-identical copy) and the extra quantifier_*.tsv files."""
    names, keys, rows = ("id", "premise", "hypothesis", "label"), ("premise", "hypothesis", "label"), []
    for fragment in sorted(p for p in (folder / "data").iterdir() if p.is_dir()):
        for (sub, name), split in SEMANTIC_FRAGMENT_FILES.items():
            path = fragment / sub / name
            rows += [_row(r, path, line, keys, split) for line, r in _tsv(path, names=names)]
    return _frame(rows)


def _read_conjnli(folder: Path) -> pd.DataFrame:
    """adversarial_train_15k.tsv (train) and conj_dev.tsv (dev): TSV with BOM + header
    `Premise Hypothesis Label`, QUOTE_NONE."""
    keys, rows = ("Premise", "Hypothesis", "Label"), []
    for name, split in (("adversarial_train_15k.tsv", "train"), ("conj_dev.tsv", "dev")):
        path = folder / name
        rows += [_row(r, path, line, keys, split) for line, r in _tsv(path, keys, encoding="utf-8-sig")]
    return _frame(rows)


MPE_COLUMNS = ("premise1", "premise2", "premise3", "premise4", "hypothesis", "gold_label")


def _read_mpe(folder: Path) -> pd.DataFrame:
    """mpe_{train,dev,test}.txt: TSV with header; four `<flickr id>/<caption>` premises joined into one.
    Rows with a missing column (mpe_dev.txt ID 467, per SOURCE.md) are skipped with a warning."""
    rows: list[Row] = []
    for split in ("train", "dev", "test"):
        path = folder / f"mpe_{split}.txt"
        for line, r in _tsv(path, MPE_COLUMNS, skip_short=True):
            premise = " ".join(_caption(r, f"premise{i}", path, line) for i in range(1, 5))
            rows.append((premise, r["hypothesis"].strip(), _label(r["gold_label"], path, line, "gold_label"), split))
    return _frame(rows)


def _caption(record: dict, field: str, path: Path, line: int) -> str:
    value = record[field]
    if "/" not in value:
        raise DataError(path, f"expected '<flickr id>/<caption>', got {value!r:.60}", line, field)
    return value.split("/", 1)[1].strip()


def _read_breaking_nli(folder: Path) -> pd.DataFrame:
    """breaking_nli_dataset.zip, member data/dataset.jsonl (read in memory): `sentence1`, `sentence2`,
    `gold_label`. Upstream presents the whole set as a test set, so split = "test"."""
    path, member = folder / "breaking_nli_dataset.zip", "data/dataset.jsonl"
    keys = ("sentence1", "sentence2", "gold_label")
    return _frame([_row(obj, f"{path}!{member}", line, keys, "test") for line, obj in _zip_jsonl(path, member)])


def _read_control_nli(folder: Path) -> pd.DataFrame:
    """{dev,test}.jsonl: `premise` (long multi-paragraph passage), `hypothesis`, `label` in e/n/c."""
    return _frame([row for split in ("dev", "test") for row in _jsonl(folder / f"{split}.jsonl", split)])


Reader = Callable[[Path], pd.DataFrame]
READERS: dict[str, Reader] = {
    "sick": _read_sick,
    "snli_esnli": _read_snli_esnli,
    "mnli_dev_matched": _read_mnli_dev_matched,
    "taxinli": _read_taxinli,
    "anli_dev": _read_anli_dev,
    "cad_snli": _read_cad_snli,
    "imppres": _read_imppres,
    "lingnli": _read_lingnli,
    "semi_automatic_nli": _read_semi_automatic_nli,
    "semantic_fragments": _read_semantic_fragments,
    "conjnli": _read_conjnli,
    "mpe": _read_mpe,
    "breaking_nli": _read_breaking_nli,
    "control_nli": _read_control_nli,
}
