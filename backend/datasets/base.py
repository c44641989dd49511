"""What every loader shares: the error type, the bundle of rows it returns, and checked readers.

A loader reads the official files of one dataset and returns a `Bundle` of plain rows. It never
touches the store: `backend.imports.ingest` writes a bundle in one transaction, so a file that fails to
parse leaves the store exactly as it was.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backend.datasets.validation import DataError, jsonl_lines  # noqa: F401 — loaders import them from here
from backend.store.bundle import Bundle


@dataclass(frozen=True)
class Source:
    """A folder that holds one dataset's files, and how it was found."""

    dataset: str
    path: Path
    how: str  # "command line" | "environment" | "shared" | "data/raw" | "download"


def read_text(path: Path, encoding: str = "utf-8") -> str:
    """Read a whole file, turning undecodable bytes into a DataError that names the line."""
    data = path.read_bytes()
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataError(
            path, f"bytes are not valid {encoding} (byte {exc.start}: {data[exc.start : exc.start + 1]!r})", line
        ) from None


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object) for each non-empty line of a JSON-lines file."""
    return jsonl_lines(read_text(path), path)


def read_json(path: Path) -> Any:
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DataError(path, f"not valid JSON ({exc.msg} at column {exc.colno})", exc.lineno) from None


def read_csv(path: Path, required: tuple[str, ...], encoding: str = "utf-8") -> Iterator[tuple[int, dict]]:
    """Yield (line number, row) of a CSV file with a header, checking the required columns."""
    reader = csv.DictReader(io.StringIO(read_text(path, encoding), newline=""))
    missing = [c for c in required if c not in (reader.fieldnames or [])]
    if missing:
        raise DataError(path, f"missing column(s) {missing}; header is {reader.fieldnames}", 1)
    for row in reader:
        yield reader.line_num, row


def need(obj: dict, key: str, kind: type | tuple[type, ...], path: Path, line: int | None, prefix: str = "") -> Any:
    """Return obj[key], or raise a DataError naming the field and the expected type."""
    name = prefix + key
    if key not in obj:
        raise DataError(path, "missing", line, name)
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
        expected = " or ".join(t.__name__ for t in _as_tuple(kind))
        raise DataError(path, f"expected {expected}, got {type(value).__name__} {value!r:.60}", line, name)
    return value


def need_str_list(obj: dict, key: str, path: Path, line: int | None, prefix: str = "") -> list[str]:
    values = need(obj, key, list, path, line, prefix)
    if not all(isinstance(v, str) for v in values):
        raise DataError(path, "expected a list of strings", line, prefix + key)
    return values


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def normalise_space(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def doc_id(text: str) -> str:
    """Stable passage id from content: 'w' + 16 hex digits of SHA-1 of the normalised text."""
    return "w" + hashlib.sha1(normalise_space(text).encode("utf-8")).hexdigest()[:16]


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def describe_files(root: Path, paths: list[Path]) -> tuple[list[dict], str]:
    """Per-file {path, sha256, bytes} and one SHA-256 over all of them (sorted by path)."""
    files = sorted(
        ({"path": str(p.relative_to(root)), "sha256": file_digest(p), "bytes": p.stat().st_size} for p in paths),
        key=lambda f: f["path"],
    )
    combined = hashlib.sha256("".join(f["path"] + f["sha256"] for f in files).encode()).hexdigest()
    return files, combined


Loader = Callable[[dict[str, Source]], Bundle]
