"""Reading a user's file into a DataFrame: CSV, TSV, JSONL, JSON (a list of records) or Parquet.

Every problem is a `DataError` naming the file (and the line where there is one): an empty file, a
file over the size cap (PLAB_IMPORT_MAX_MB, default 1024 MiB), bytes that are not UTF-8, a line that
does not parse. `Table.line(i)` gives the file line of data row i where the format has lines
(CSV/TSV: one record per line after the header; JSONL: the non-blank lines), else None.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from backend.datasets.validation import DataError, jsonl_lines

FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
}


def max_bytes() -> int:
    return int(float(os.environ.get("PLAB_IMPORT_MAX_MB", "1024")) * 2**20)


@dataclass(frozen=True)
class Table:
    name: str  # the file's name, as errors and provenance show it
    format: str
    frame: pd.DataFrame
    sha256: str
    lines: np.ndarray | None  # file line of each data row, where the format has lines

    def line(self, row: int) -> int | None:
        return None if self.lines is None else int(self.lines[row])

    def where(self, row: int) -> str:
        """'line 12' where the format has lines, else 'record 11' (1-based)."""
        line = self.line(row)
        return f"line {line}" if line is not None else f"record {row + 1}"


def read(source: Path | str | bytes | pd.DataFrame, name: str | None = None, fmt: str | None = None) -> Table:
    """A path, the bytes of an upload (with its file `name`), or a DataFrame (from a notebook)."""
    if isinstance(source, pd.DataFrame):
        frame = source.reset_index(drop=True)
        digest = hashlib.sha256(pd.util.hash_pandas_object(frame.astype(str), index=False).values.tobytes()).hexdigest()
        return Table(name or "DataFrame", "dataframe", frame, digest, None)
    if isinstance(source, bytes):
        raw, name = source, name or "upload"
    else:
        path = Path(source)
        name = name or str(path)
        if not path.is_file():
            raise DataError(name, "no such file")
        if path.stat().st_size > max_bytes():
            raise DataError(
                name,
                f"{path.stat().st_size / 2**20:,.0f} MiB is over the import cap of "
                f"{max_bytes() / 2**20:,.0f} MiB (set PLAB_IMPORT_MAX_MB to raise it)",
            )
        raw = path.read_bytes()
    if len(raw) > max_bytes():
        raise DataError(
            name,
            f"{len(raw) / 2**20:,.0f} MiB is over the import cap of {max_bytes() / 2**20:,.0f} MiB "
            "(set PLAB_IMPORT_MAX_MB to raise it)",
        )
    fmt = fmt or FORMATS.get(Path(name).suffix.lower())
    if fmt is None:
        raise DataError(name, f"unknown file type {Path(name).suffix!r}; expected one of {sorted(FORMATS)}")
    if not raw.strip():
        raise DataError(name, "the file is empty")
    frame, lines = READERS[fmt](raw, name)
    if frame.empty:
        raise DataError(name, "the file has no data rows")
    return Table(name, fmt, frame, hashlib.sha256(raw).hexdigest(), lines)


def _text(raw: bytes, name: str) -> bytes:
    """The bytes without a UTF-8 byte-order mark, after checking they are UTF-8 (DataError naming the line)."""
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataError(name, f"byte {exc.start} is not UTF-8 ({exc.reason}); save the file as UTF-8", line) from None
    return raw


def _delimited(raw: bytes, name: str, delimiter: str) -> tuple[pd.DataFrame, np.ndarray | None]:
    """Every column as text (so ids like 007 and a column with a blank cell keep their values); an
    empty cell is missing. TSV has no quoting. A malformed row is named by its line."""
    raw = _text(raw, name)
    header = next(
        csv.reader(io.StringIO(raw[:65536].decode("utf-8", "ignore").split("\n", 1)[0]), delimiter=delimiter), []
    )
    try:
        table = pacsv.read_csv(
            io.BytesIO(raw),
            parse_options=pacsv.ParseOptions(
                delimiter=delimiter, newlines_in_values=delimiter == ",", quote_char='"' if delimiter == "," else False
            ),
            convert_options=pacsv.ConvertOptions(
                column_types={c: pa.string() for c in header}, null_values=[""], strings_can_be_null=True
            ),
        )
    except pa.ArrowInvalid as exc:
        raise DataError(
            name, f"not valid {'TSV' if delimiter == chr(9) else 'CSV'}: {exc}", _bad_line(raw, delimiter)
        ) from None
    n, newlines = table.num_rows, raw.count(b"\n") - (1 if raw.endswith(b"\n") else 0)
    lines = np.arange(2, n + 2) if newlines == n else _record_lines(raw, delimiter, n)
    return table.to_pandas(), lines


def _bad_line(raw: bytes, delimiter: str) -> int | None:
    """The first line whose record has another number of fields than the header (the slow way, on error only)."""
    reader = csv.reader(
        io.StringIO(raw.decode("utf-8"), newline=""),
        delimiter=delimiter,
        quoting=csv.QUOTE_MINIMAL if delimiter == "," else csv.QUOTE_NONE,
    )
    width = None
    for record in reader:
        width = len(record) if width is None else width
        if record and len(record) != width:
            return reader.line_num
    return None


def _record_lines(raw: bytes, delimiter: str, n: int) -> np.ndarray | None:
    """The line each record starts on, when some values span lines (the slow way: Python's csv module)."""
    reader = csv.reader(io.StringIO(raw.decode("utf-8"), newline=""), delimiter=delimiter)
    starts, previous_end = [], 0
    for _ in reader:
        starts.append(previous_end + 1)
        previous_end = reader.line_num
    return np.array(starts[1:]) if len(starts) == n + 1 else None


def _jsonl(raw: bytes, name: str) -> tuple[pd.DataFrame, np.ndarray]:
    raw = _text(raw, name)
    numbered = [(i + 1, line) for i, line in enumerate(raw.split(b"\n")) if line.strip()]
    try:
        table = pajson.read_json(io.BytesIO(b"\n".join(line for _, line in numbered)))
        frame = table.to_pandas()
    except pa.ArrowInvalid:  # the slow way, to name the line that does not parse
        frame = pd.DataFrame.from_records([obj for _, obj in jsonl_lines(raw.decode("utf-8"), name)])
    return frame, np.array([number for number, _ in numbered])


def _json(raw: bytes, name: str) -> tuple[pd.DataFrame, None]:
    raw = _text(raw, name)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DataError(name, f"not JSON: {exc.msg}", exc.lineno) from None
    if isinstance(data, dict):  # {"data": [...]} or {"predictions": [...]}: the one list of records inside
        lists = [v for v in data.values() if isinstance(v, list)]
        data = lists[0] if len(lists) == 1 else data
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise DataError(name, 'expected a list of records (objects), e.g. [{"id": ..., "label": ...}, ...]')
    return pd.DataFrame.from_records(data), None


def _parquet(raw: bytes, name: str) -> tuple[pd.DataFrame, None]:
    try:
        return pq.read_table(io.BytesIO(raw)).to_pandas(), None
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(name, f"not a Parquet file: {exc}") from None


READERS = {
    "csv": lambda raw, name: _delimited(raw, name, ","),
    "tsv": lambda raw, name: _delimited(raw, name, "\t"),
    "jsonl": _jsonl,
    "json": _json,
    "parquet": _parquet,
}
