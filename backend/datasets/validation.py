"""What every reader of a user's or an official file shares: DataError (file, line, field) and
line-numbered JSON-lines parsing. Dataset loaders (via backend.datasets.base) and imports both use it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import yaml


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


def yaml_failer(text: str, path: str, error: type[DataError] = DataError) -> Callable[..., NoReturn]:
    """fail(problem, *where): raise `error` naming the file, the line of the deepest part of `where` (a key path
    into the YAML document) the text has, and `where` as the field ("conditions.0.gold")."""
    lines = yaml_lines(text, path, error)

    def fail(problem: str, *where) -> NoReturn:
        line = next((lines[where[:n]] for n in range(len(where), -1, -1) if where[:n] in lines), None)
        raise error(path, problem, line, ".".join(str(w) for w in where) or None)

    return fail


def yaml_lines(text: str, path: str, error: type[DataError] = DataError) -> dict[tuple, int]:
    """(key, ...) path → 1-based line of every mapping key and sequence item in a YAML document (a template, a
    study design), so an error can name the line of the field at fault; `error` (path, problem, line) when the
    text is not YAML."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise error(path, f"not valid YAML: {getattr(exc, 'problem', exc)}", mark.line + 1 if mark else None) from None
    found: dict[tuple, int] = {}

    def walk(node, where: tuple) -> None:
        found[where] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                found[where + (key.value,)] = key.start_mark.line + 1
                walk(value, where + (key.value,))
        elif isinstance(node, yaml.SequenceNode):
            for i, value in enumerate(node.value):
                walk(value, where + (i,))

    if root is not None:
        walk(root, ())
    return found
