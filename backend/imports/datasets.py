"""A user's own dataset into the store: columns mapped onto `examples`, every other column kept in
`extra`, categorical columns with few values offered as facets, optional minimal pairs, baselines.

The file is read and checked completely before anything is written (`check` returns a Bundle and a
Description, or DataError naming the file, line and column); `save` then writes it like an ingest,
in one transaction, with its description, and writes the trivial baselines. Built-in dataset names
are reserved; a user dataset is replaced only when asked. Runs you imported on it are kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

import duckdb
import numpy as np
import pandas as pd

from backend.datasets import DATASETS, baselines
from backend.datasets.base import DataError
from backend.datasets.description import OPERATOR_WORDS, Description
from backend.imports import columns as cols
from backend.imports.files import Table
from backend.store import backup, queries
from backend.store.bundle import Bundle
from backend.store.queries import FACETS
from backend.store.writer import replace_dataset

NAME = re.compile(r"^[a-z][a-z0-9_-]{1,39}$")
MAX_FACET_VALUES = 20  # a text column with at most this many distinct values (and repeats) becomes a facet
DEFAULT_LABELS = {"nli": ("E", "N", "C"), "detect": ("N", "FP")}
ROLE_GUESSES = {
    "example_id": ("example_id", "id", "uid", "guid", "item_id"),
    "input": ("input", "premise", "question", "sentence1", "text", "query"),
    "hypothesis": ("hypothesis", "sentence2"),
    "context": ("context", "comment", "passage"),
    "gold_label": ("gold_label", "label", "gold", "answer_label"),
    "gold_answers": ("gold_answers", "answers", "answer"),
    "split": ("split",),
    "pair_id": ("pair_id", "pair", "family", "family_id"),
    "pair_role": ("pair_role", "role", "condition"),
}
TYPED = [f for f in FACETS if f not in ("split", "gold_label", "ambiguous")]  # facet columns a file may fill directly


@dataclass(frozen=True)
class DatasetOptions:
    name: str
    task: str  # nli | detect | qa
    columns: dict = field(default_factory=dict)  # role → file column
    labels: tuple[str, ...] = ()  # default E,N,C for nli, N,FP for detect
    positive: str | None = None  # default E for nli, FP for detect, else the first label
    label_map: dict = field(default_factory=dict)
    split: str = "all"  # the split of every row when the file has no split column
    headline_splits: tuple[str, ...] = ()  # default: every split
    train_split: str | None = None
    title: str | None = None
    license: str = "yours"
    citation: str = ""
    operator_column: str | None = None  # for the Projection page: the column naming each item's operator


def guess_task(columns: list[str]) -> str:
    """The task a dataset file is for, from its columns: NLI when it has a hypothesis, QA when it has answers but no
    gold label, detection when it has a gold label and no hypothesis; NLI (the first task) otherwise.

    >>> [guess_task(c) for c in (["premise", "hypothesis", "label"], ["question", "answer"], ["question", "label"])]
    ['nli', 'qa', 'detect']
    """
    found = cols.guess(columns, ROLE_GUESSES, {}, tuple(ROLE_GUESSES))
    if "hypothesis" in found:
        return "nli"
    if "gold_answers" in found and "gold_label" not in found:
        return "qa"
    return "detect" if "gold_label" in found else "nli"


def check(table: Table, options: DatasetOptions) -> tuple[Bundle, Description]:
    """The examples, pairs and description a file makes; DataError (file, line, column) on the first problem."""
    _check_name(table.name, options.name)
    frame = table.frame
    roles = _roles(table, options)
    description = _description(frame, roles, options, table.name)
    if options.operator_column:
        description = replace(description, projection=_projection(table, options.operator_column))
    examples = _examples(table, roles, description, options)
    pairs = _pairs(table, roles, examples) if "pair_id" in roles else []
    bundle = Bundle(
        dataset={
            "dataset_id": options.name,
            "title": options.title or options.name,
            "source": table.name,
            "sha256": table.sha256,
            "license": options.license,
            "citation": options.citation,
            "description": description.as_dict(),
            "files": [{"path": table.name, "sha256": table.sha256, "rows": len(frame)}],
        },
        examples=examples,
        pairs=pairs,
    )
    return bundle, description


def _check_name(file: str, name: str) -> None:
    if name in DATASETS:
        raise DataError(file, f"--name {name!r} is a built-in dataset; choose another name", field="name")
    if not NAME.match(name):
        raise DataError(
            file,
            f"--name {name!r}: use 2-40 lower-case letters, digits, '-' or '_', starting with a letter",
            field="name",
        )


def _roles(table: Table, options: DatasetOptions) -> dict[str, str]:
    columns = list(table.frame.columns)
    unused = {"hypothesis"} if options.task != "nli" else set()
    unused |= {"gold_label"} if options.task == "qa" else {"gold_answers"}
    try:
        roles = cols.guess(
            columns,
            {r: names for r, names in ROLE_GUESSES.items() if r not in unused},
            options.columns,
            tuple(ROLE_GUESSES),
        )
    except ValueError as exc:
        raise DataError(table.name, str(exc), field="map") from None
    needed = (
        ["input"]
        + (["hypothesis"] if options.task == "nli" else [])
        + (["gold_answers"] if options.task == "qa" else ["gold_label"])
    )
    missing = [r for r in needed if r not in roles]
    if missing:
        raise DataError(
            table.name,
            f"a {options.task} dataset needs a {missing[0]} column; the columns are {columns} "
            f"(map one with --map {missing[0]}=COLUMN)",
            field=missing[0],
        )
    return roles


def _check_splits(file: str, splits: list[str], options: DatasetOptions) -> None:
    for flag, names in (("--headline-splits", options.headline_splits), ("--train-split", (options.train_split,))):
        unknown = [s for s in names if s and s not in splits]
        if unknown:
            raise DataError(
                file, f"{flag} {unknown[0]!r} is not a split of the file; its splits are {splits}", field="split"
            )


def _description(frame: pd.DataFrame, roles: dict, options: DatasetOptions, file: str = "") -> Description:
    labels = options.labels or DEFAULT_LABELS.get(options.task, ())
    positive = options.positive or (
        {"nli": "E", "detect": "FP"}.get(options.task)
        if labels == DEFAULT_LABELS.get(options.task)
        else (labels[0] if labels else None)
    )
    splits = (
        sorted(frame[roles["split"]].dropna().astype(str).str.strip().unique()) if "split" in roles else [options.split]
    )
    _check_splits(file, splits, options)
    used = set(roles.values())
    facets = tuple(c for c in frame.columns if c not in used and c not in TYPED and _categorical(frame[c]))
    return Description(
        options.task,
        tuple(labels),
        positive if labels else None,
        tuple(options.headline_splits or splits),
        train_split=options.train_split,
        constants=tuple(labels),
        facets=facets,
        user=True,
        columns=dict(roles),
    )


def _projection(table: Table, column: str) -> dict:
    """A projection spec (backend.analysis.projection) from the operator column and the trigger_type column; the
    hypothesis is taken as the presupposition and the gold label says whether it survives."""
    frame = table.frame
    for name in (column, "trigger_type"):
        if name not in frame.columns:
            raise DataError(
                table.name,
                f"the Projection page needs a {name!r} column (--operator-column names the "
                f"operator's; triggers come from trigger_type); the columns are {list(frame.columns)}",
                field=name,
            )
    words = frame[column].astype(str).str.strip().str.lower()
    _first_bad(
        table,
        ~words.isin(OPERATOR_WORDS) | frame[column].isna(),
        lambda i: f"operator {frame[column].iloc[i]!r} is not one of {sorted(OPERATOR_WORDS)}",
        column,
    )
    values = frame[column].astype(str).str.strip()
    return {
        "trigger": "trigger_type",
        "operator": column,
        "operators": {v: OPERATOR_WORDS[v.lower()] for v in sorted(values.unique())},
    }


def _categorical(values: pd.Series) -> bool:
    present = values.dropna()
    if present.empty or present.map(lambda v: isinstance(v, (list, dict, np.ndarray))).any():
        return False
    distinct = present.astype(str).nunique()
    return 2 <= distinct <= MAX_FACET_VALUES and distinct < len(present)


def _examples(table: Table, roles: dict, description: Description, options: DatasetOptions) -> pd.DataFrame:
    frame = table.frame
    ids = (
        frame[roles["example_id"]].astype(str).str.strip()
        if "example_id" in roles
        else pd.Series([str(i + 1) for i in range(len(frame))], index=frame.index)
    )
    _first_bad(
        table,
        ids.duplicated(),
        lambda i: f"example id {ids.iloc[i]!r} is used by an earlier row",
        roles.get("example_id", "id"),
    )
    _first_bad(
        table,
        ids.eq("") | frame[roles["example_id"]].isna() if "example_id" in roles else ids.eq(""),
        lambda i: "empty example id",
        roles.get("example_id", "id"),
    )
    text = frame[roles["input"]]
    _first_bad(table, text.isna() | text.astype(str).str.strip().eq(""), lambda i: "empty text", roles["input"])
    rows = pd.DataFrame(
        {
            "example_id": ids,
            "input": text.astype(str),
            "split": frame[roles["split"]].fillna("").astype(str).str.strip() if "split" in roles else options.split,
        }
    )
    if "split" in roles:
        _first_bad(table, rows["split"].eq(""), lambda i: "empty split", roles["split"])
    for role in ("hypothesis", "context"):
        if role in roles:
            rows[role] = frame[roles[role]].astype(str).where(frame[roles[role]].notna(), None)
    if "gold_label" in roles:
        rows["gold_label"] = _gold_labels(table, frame[roles["gold_label"]], description, options, roles["gold_label"])
    if "gold_answers" in roles:
        rows["gold_answers"] = frame[roles["gold_answers"]].map(_answers)
    for facet in TYPED:
        if facet in frame.columns and facet not in roles.values():
            rows[facet] = (
                _boolean(table, facet)
                if facet == "adversarial"
                else frame[facet].astype(str).where(frame[facet].notna(), None)
            )
    kept = [c for c in frame.columns if c not in roles.values() and c not in TYPED]
    rows["extra"] = _json_rows(frame[kept]) if kept else None
    return rows.reset_index(drop=True)


def _json_rows(frame: pd.DataFrame) -> np.ndarray:
    """Each row as a JSON object (column → value, NULL for missing), built by DuckDB: a million rows in seconds."""
    fast = queries.json_rows(frame)
    if fast is not None:
        return fast
    rest = frame.astype(object).where(frame.notna(), None)  # mixed types in a column: the slow, general way
    return np.array([json.dumps(r, default=str) for r in rest.to_dict("records")], dtype=object)


def _quote(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def _boolean(table: Table, column: str) -> pd.Series:
    """A yes/no column (true/false, 1/0, yes/no) as booleans; DataError naming the first other value."""
    values = table.frame[column].astype(object).where(table.frame[column].notna(), None)
    words = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
    text = values.map(lambda v: None if v is None else str(v).strip().lower().removesuffix(".0"))
    _first_bad(
        table,
        text.notna() & ~text.isin(list(words)),
        lambda i: f"{values.iloc[i]!r} is not true/false, yes/no or 1/0",
        column,
    )
    return text.map(words).astype(object).where(text.notna(), None)


def _gold_labels(
    table: Table, values: pd.Series, description: Description, options: DatasetOptions, column: str
) -> pd.Series:
    lookup = cols.label_lookup(values, description, (), options.label_map)
    text = values.astype(str).str.strip().where(values.notna())
    labels = text.map(lookup)
    _first_bad(
        table,
        text.notna() & (text != "") & labels.isna(),
        lambda i: (
            f"gold label {text.iloc[i]!r} is not one of {list(description.labels)} (declare the label set "
            "with --labels, or map values with --label-map VALUE=LABEL)"
        ),
        column,
    )
    return labels.where(labels.notna(), None)


def _answers(value) -> list[str] | None:
    """A list, a JSON list as text, or one answer (several separated by ' | ')."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, (list, tuple, np.ndarray)):
        return [str(v) for v in value]
    text = str(value).strip()
    if text.startswith("["):
        try:
            return [str(v) for v in json.loads(text)]
        except json.JSONDecodeError:
            pass
    return [a.strip() for a in text.split(" | ") if a.strip()]


def _pairs(table: Table, roles: dict, examples: pd.DataFrame) -> list[dict]:
    """Rows sharing a pair id form a minimal pair (exactly two), ordered by role ('a' before 'b')."""
    if "pair_role" not in roles:
        raise DataError(
            table.name, "a pair id column needs a pair role column too (--map pair_role=COLUMN)", field="pair_role"
        )
    frame = pd.DataFrame(
        {
            "pair": table.frame[roles["pair_id"]].astype(str),
            "role": table.frame[roles["pair_role"]].astype(str),
            "example_id": examples["example_id"].to_numpy(),
        }
    )
    frame = frame[table.frame[roles["pair_id"]].notna().to_numpy()]
    sizes = frame.groupby("pair")["pair"].transform("size")
    _first_bad(
        table,
        (sizes != 2).reindex(table.frame.index, fill_value=False),
        lambda i: f"pair {table.frame[roles['pair_id']].iloc[i]!r} has {int(sizes.get(i, 0))} rows; a pair has two",
        roles["pair_id"],
    )
    pairs = []
    for pair_id, group in frame.sort_values(["pair", "role"]).groupby("pair", sort=True):
        a, b = group.iloc[0], group.iloc[1]
        pairs.append(
            {
                "pair_id": f"{pair_id}",
                "kind": "minimal",
                "example_a": a["example_id"],
                "example_b": b["example_id"],
                "role_a": a["role"],
                "role_b": b["role"],
            }
        )
    return pairs


def _first_bad(table: Table, mask: pd.Series, message, column: str) -> None:
    bad = np.flatnonzero(np.asarray(mask, dtype=bool))
    if len(bad):
        row = int(bad[0])
        where = "" if table.line(row) is not None else f"{table.where(row)}: "
        raise DataError(table.name, f"{where}{message(row)} ({len(bad):,} rows like this)", table.line(row), column)


class DatasetExists(ValueError):
    """A user dataset of that name is loaded: replacing it must be asked for."""


def save(con: duckdb.DuckDBPyConnection, bundle: Bundle, replace: bool = False) -> dict[str, int]:
    """Write the dataset in one transaction (replacing it, and its old baseline runs, only when asked), then its
    trivial baselines; BaselinesFailed if only those could not be written. As a person's act (who may import, who
    may replace): `actions.datasets.save`."""
    write(con, bundle, replace)
    return with_baselines(con, bundle)


def write(con: duckdb.DuckDBPyConnection, bundle: Bundle, replace: bool) -> None:
    """The dataset's rows, replacing a loaded one (and its baseline runs) only when asked (DatasetExists)."""
    name = bundle.dataset["dataset_id"]
    if queries.dataset_exists(con, name) and not replace:
        raise DatasetExists(
            f"dataset {name!r} is loaded; replace it (--replace; your runs on it are kept) or choose another --name"
        )
    if replace:
        backup.before(con, f"replace dataset {name}")
    replace_dataset(con, bundle, also_sources=("baseline",))  # the old label set's baselines go too


def with_baselines(con: duckdb.DuckDBPyConnection, bundle: Bundle) -> dict[str, int]:
    """The stored dataset's trivial baselines (a system write: computed from it), and what was written."""
    name = bundle.dataset["dataset_id"]
    try:
        runs = baselines.refresh(con, [name])
    except duckdb.Error as exc:
        raise BaselinesFailed(
            f"dataset {name!r} was saved, but its baseline runs could not be written ({exc}); "
            f"run `python -m backend baselines --only {name}`"
        ) from exc
    return {**{k: v for k, v in bundle.counts().items() if v}, "baseline runs": runs.get(name, 0)}


class BaselinesFailed(RuntimeError):
    """The dataset is stored; only its baselines are missing."""
