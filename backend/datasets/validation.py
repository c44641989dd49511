"""What every reader of a user's or an official file shares: DataError (file, line, field) and
line-numbered JSON-lines parsing. Dataset loaders (via backend.datasets.base) and imports both use it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path


class DataError(ValueError):
    """A malformed input file: names the file, the line (1-based) and the field."""

    def __init__(self, path: Path | str, problem: str, line: int | None = None, field: str | None = None):
        self.path, self.line, self.field, self.problem = str(path), line, field, problem
        where = self.path + (f", line {line}" if line is not None else "")
        what = f"field '{field}': " if field else ""
        super().__init__(f"{where}: {what}{problem}")


def jsonl_lines(text: str, path: Path | str) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object) for each non-empty line of JSON-lines text read from `path`."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(path, f"not valid JSON ({exc.msg} at column {exc.colno})", number) from None
        if not isinstance(obj, dict):
            raise DataError(path, f"expected a JSON object, got {type(obj).__name__}", number)
        yield number, obj
