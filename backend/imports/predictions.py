"""A user's predictions as a stored run: read → columns → match → labels and probabilities → report → save.

`check(...)` does everything but write and returns a `Plan` whose `Report` lists what was read,
matched, skipped and wrong. Only a plan whose report has no problems can be saved, in one
transaction; so a rejected import writes nothing. Rows that match no example are skipped and listed
(fatal with `strict`). User runs have source 'user': an ingest never removes them; replacing one
must be asked for, and only user runs can be replaced or deleted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from backend.datasets.catalogue import describe
from backend.datasets.description import Description
from backend.datasets.validation import DataError
from backend.imports import columns as cols
from backend.imports import matching
from backend.imports.check_report import ImportRejected, Problem, Report
from backend.imports.files import Table
from backend.models import training_data
from backend.store import backup, queries, writer
from backend.store import runs as store_runs

PROB_TOLERANCE = 1e-3


@dataclass(frozen=True)
class Options:
    dataset: str
    model: str | None = None  # default: the file's name without extension
    revision: str | None = None
    notes: str | None = None
    run_id: str | None = None  # default: <dataset>/user/<model>[/<task>]
    columns: dict = field(default_factory=dict)  # role → file column (--map)
    label_order: tuple[str, ...] = ()  # what 0, 1, 2 … and list positions mean (--label-order)
    label_map: dict = field(default_factory=dict)  # file value → dataset label (--label-map)
    task: str | None = None  # default: guessed from the columns and the dataset (`columns.guess_task`)
    split: str | None = None  # match only this split's examples
    match: str = "auto"  # auto (id if the file has ids, else text) | id | text
    strict: bool = False  # rows that match no example reject the import
    trained_on: tuple[str, ...] = ()  # datasets the model was trained on (backend.models.contamination)


@dataclass
class Plan:
    report: Report
    run: dict
    predictions: pd.DataFrame  # example_id, label, answer, text (one row per matched example)
    probs: np.ndarray | None = None  # predictions × labels, in the dataset's label order


def check(table: Table, examples: pd.DataFrame, description: Description, options: Options) -> Plan:
    """Everything but the write: a plan whose report says whether it may be saved. Pure (no store)."""
    frame = table.frame
    task = options.task or cols.guess_task(list(frame.columns), description, options.columns)
    report = Report(table.name, table.sha256, table.format, options.dataset, task, rows=len(frame))
    if task != description.task:  # said also when the page's Task (its own guess, preselected) or --task chose it
        how = "as chosen" if options.task else "guessed from the file's columns"
        report.notes.append(
            f"task {task}, {how}: not the dataset's own task, {description.task} (set --task, or the page's Task, "
            "to import it as another)"
        )
    try:
        roles = cols.resolve(list(frame.columns), task, options.columns)
        order = cols.order_labels(options.label_order, description) if options.label_order else ()
        cols.label_lookup(pd.Series([], dtype=object), description, order, options.label_map)  # checks --label-map
    except ValueError as exc:
        report.problems.append(Problem("column", "options", str(exc)))
        return Plan(report, {}, pd.DataFrame())
    report.columns = roles
    scope = examples if not options.split else examples[examples["split"] == options.split]
    report.examples = len(scope)
    out = pd.DataFrame(index=frame.index)
    probs = _predictions(frame, roles, description, task, order, options, out, report, table)
    matched = _match(frame, roles, scope, task, options, lambda: _same_prediction(out, probs), report)
    if report.problems and report.problems[0].kind == "column":
        return Plan(report, {}, pd.DataFrame())
    keep = matched.example_id.notna()
    _skip(
        report, table, ~keep & matched.reason.str.startswith("ambiguous"), matched.reason, "ambiguous", options.strict
    )
    _skip(
        report, table, ~keep & ~matched.reason.str.startswith("ambiguous"), matched.reason, "unmatched", options.strict
    )
    out["example_id"] = matched.example_id
    duplicate = keep & out["example_id"].duplicated(keep=False)
    if duplicate.any():
        _flag(
            report,
            table,
            duplicate,
            "duplicate",
            "example " + out["example_id"].fillna("").astype(str) + " is matched by more than one row",
        )
    report.matched = int(keep.sum()) - int(duplicate.sum())
    if report.matched == 0 and not report.problems:
        report.problems.append(
            Problem(
                "unmatched",
                "file",
                f"no row matches an example of {options.dataset}"
                f"{' split ' + options.split if options.split else ''} by {report.match_by}",
            )
        )
    model = options.model or Path(table.name).stem
    run = _run(options, description, task, model, report)
    kept = out.loc[keep, ["example_id", "label", "answer", "text"]].reset_index(drop=True)
    return Plan(report, run, kept, None if probs is None else probs[keep.to_numpy()])


def store_rows(
    table: Table, examples: pd.DataFrame, description: Description, options: Options, run_id: str
) -> list[dict]:
    """For dataset loaders that ship predictions (NOPE's model_results, CREPE's sample outputs): the
    file's checked predictions as rows of run `run_id`; DataError at the first problem (file, line)."""
    plan = check(table, examples, description, options)
    if not plan.report.ok:
        problem = plan.report.problems[0]
        raise DataError(
            table.name,
            f"{problem.message} ({len(plan.report.problems):,} problems)",
            problem.line,
            plan.report.columns.get("label") if problem.kind == "unknown label" else None,
        )
    rows = plan.predictions.assign(run_id=run_id)
    rows["probs"] = list(plan.probs.tolist()) if plan.probs is not None else None
    return [{k: v for k, v in row.items() if v is not None} for row in rows.to_dict("records")]


def _same_prediction(out: pd.DataFrame, probs: np.ndarray | None) -> pd.Series:
    """A value per row that is equal exactly when two rows store the same prediction."""
    same = (
        out["label"].fillna("").astype(str)
        + "|"
        + out["answer"].fillna("").astype(str)
        + "|"
        + out["text"].fillna("").astype(str)
    )
    if probs is not None:
        same = same + "|" + pd.Series([row.tobytes().hex() for row in probs], index=out.index)
    return same


def _match(frame, roles, scope, task, options, same, report) -> matching.Matched:
    use_id = options.match == "id" or (options.match == "auto" and "example_id" in roles)
    text_roles = ("premise", "hypothesis") if task == "nli" else ("question",)
    if use_id:
        if "example_id" not in roles:
            report.problems.append(
                Problem(
                    "column",
                    "options",
                    f"matching by id needs an id column; the file's columns are "
                    f"{list(frame.columns)} (map one with --map example_id=COLUMN)",
                )
            )
            return matching.Matched(
                pd.Series(np.nan, index=frame.index, dtype=object), pd.Series("", index=frame.index)
            )
        report.match_by = "id"
        keyed = frame[roles["example_id"]]
        if "split" in roles:
            return _by_id_within_split(keyed, frame[roles["split"]], scope)
        return matching.by_id(keyed, scope)
    missing = [r for r in text_roles if r not in roles]
    if missing:
        report.problems.append(
            Problem(
                "column",
                "options",
                f"matching by text needs {' and '.join(text_roles)} "
                f"columns; none found for {missing} among {list(frame.columns)} "
                f"(map with --map {missing[0]}=COLUMN, or give an example_id column)",
            )
        )
        return matching.Matched(pd.Series(np.nan, index=frame.index, dtype=object), pd.Series("", index=frame.index))
    report.match_by = "text (" + " + ".join(text_roles) + ")"
    store_cols = {"premise": "input", "hypothesis": "hypothesis", "question": "input"}
    keys = matching.key(frame, [roles[r] for r in text_roles], roles.get("split"))
    example_keys = matching.key(scope, [store_cols[r] for r in text_roles], "split" if "split" in roles else None)
    return matching.by_text(keys, frame.index, scope.reset_index(drop=True), example_keys, same)


def _by_id_within_split(ids, splits, scope) -> matching.Matched:
    found = matching.by_id(ids, scope)
    split_of = scope.set_index("example_id")["split"]
    wrong = found.example_id.notna() & (found.example_id.map(split_of) != splits.fillna("").astype(str).str.strip())
    reason = found.reason.mask(
        wrong,
        "id "
        + ids.fillna("").astype(str)
        + " is in split "
        + found.example_id.map(split_of).fillna("").astype(str)
        + ", not "
        + splits.fillna("").astype(str),
    )
    return matching.Matched(found.example_id.mask(wrong), reason)


def _predictions(frame, roles, description, task, order, options, out, report, table) -> np.ndarray | None:
    """Fill out['label', 'answer', 'text'] from the file and return the probabilities (rows × labels);
    problems go into the report."""
    out["label"], out["answer"], out["text"] = None, None, None
    probs = None
    if task in ("nli", "detect"):
        probs = _probabilities(frame, roles, description, order, report, table)
        if "label" in roles:
            lookup = cols.label_lookup(frame[roles["label"]], description, order, options.label_map)
            raw = frame[roles["label"]]
            text = raw.astype(str).str.strip().where(raw.notna())
            out["label"] = text.map(lookup)
            unknown = text.notna() & (text != "") & out["label"].isna()
            allowed = f"{list(description.labels)} (or entailment/neutral/…, yes/no for two labels, numbers with "
            allowed += "--label-order)"
            if unknown.any():
                _flag(
                    report,
                    table,
                    unknown,
                    "unknown label",
                    f"column '{roles['label']}': "
                    + text.fillna("")
                    + f" is not one of {allowed}; map it with --label-map VALUE=LABEL",
                )
            _flag(report, table, text.isna() | (text == ""), "empty", f"column '{roles['label']}' is empty")
        if probs is not None and "label" not in roles:
            out["label"] = np.asarray(description.labels, dtype=object)[np.nan_to_num(probs, nan=-1).argmax(axis=1)]
            report.notes.append("labels are the most probable class of each row")
        if "label" not in roles and probs is None:
            report.problems.append(
                Problem(
                    "column",
                    "options",
                    f"no prediction column: give a label column "
                    f"({', '.join(cols.GUESSES['label'][:4])}, …), probabilities or logits "
                    f"(a list, or one column per label such as prob_{description.labels[0]}); "
                    f"the file's columns are {list(frame.columns)}",
                )
            )
    elif task == "qa":
        _text_column(frame, roles, "answer", out, "answer", report, table)
    else:
        for role in ("presupposition", "correction"):
            if role not in roles:
                report.problems.append(
                    Problem(
                        "column",
                        "options",
                        f"a writing run needs a {role} column; the file's columns are {list(frame.columns)}",
                    )
                )
                return None
        out["text"] = [
            json.dumps({"presupposition": p, "correction": c})
            for p, c in zip(
                frame[roles["presupposition"]].fillna("").astype(str), frame[roles["correction"]].fillna("").astype(str)
            )
        ]
    return probs


def _text_column(frame, roles, role, out, target, report, table) -> None:
    if role not in roles:
        report.problems.append(
            Problem(
                "column",
                "options",
                f"no {role} column; the file's columns are {list(frame.columns)} (map one with --map {role}=COLUMN)",
            )
        )
        return
    out[target] = frame[roles[role]].astype(str).where(frame[roles[role]].notna())


def _probabilities(frame, roles, description, order, report, table) -> np.ndarray | None:
    """rows × labels in the dataset's label order, validated; logits go through a softmax (recorded)."""
    labels = description.labels
    position = [list(order or labels).index(label) for label in labels]
    for kind in ("probs", "logits"):
        per_label = None if kind in roles else cols.per_label_columns(list(frame.columns), labels, kind)
        if kind in roles:
            matrix, bad_length = _list_matrix(frame[roles[kind]], len(labels))
            matrix = matrix[:, position]
            _flag(
                report,
                table,
                bad_length,
                "bad probabilities",
                f"column '{roles[kind]}': expected a list of "
                f"{len(labels)} numbers in the order {list(order or labels)}",
            )
        elif per_label is not None:
            report.columns.update({f"{kind}[{label}]": column for label, column in per_label.items()})
            matrix = np.column_stack(
                [pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=float) for c in per_label.values()]
            )
            bad_length = np.zeros(len(frame), dtype=bool)
        else:
            continue
        if kind == "logits":
            report.probabilities = "softmax of logits"
            shifted = np.exp(matrix - np.nanmax(matrix, axis=1, keepdims=True))
            matrix = shifted / shifted.sum(axis=1, keepdims=True)
        else:
            report.probabilities = "given"
        _check_probabilities(matrix, bad_length, report, table)
        return matrix
    return None


def _list_matrix(values: pd.Series, width: int) -> tuple[np.ndarray, np.ndarray]:
    """A column of lists (or JSON text like '[0.1, 0.9]') as rows × width floats, and which rows had another length."""

    def as_list(v):
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except json.JSONDecodeError:
                return None
        return v if isinstance(v, (list, tuple, np.ndarray)) else None

    lists = values.map(as_list)
    lengths = lists.map(lambda v: len(v) if v is not None else -1).to_numpy()
    good = lengths == width
    matrix = np.full((len(values), width), np.nan)
    if good.any():
        try:
            matrix[good] = np.array([np.asarray(v, dtype=float) for v in lists[good]])
        except (TypeError, ValueError):
            matrix[good] = np.array(
                [pd.to_numeric(pd.Series(list(v)), errors="coerce").to_numpy() for v in lists[good]]
            )
    return matrix, ~good


def _check_probabilities(matrix: np.ndarray, skip: np.ndarray, report: Report, table: Table) -> None:
    nan = ~skip & np.isnan(matrix).any(axis=1)
    negative = ~skip & ~nan & (matrix < 0).any(axis=1)
    sums = np.nansum(matrix, axis=1)
    off = ~skip & ~nan & ~negative & (np.abs(sums - 1) > PROB_TOLERANCE)
    _flag(report, table, nan, "bad probabilities", "a probability is missing or not a number")
    _flag(report, table, negative, "bad probabilities", "a probability is negative")
    if off.any():
        _flag(
            report,
            table,
            off,
            "bad probabilities",
            pd.Series(sums).map(lambda s: f"probabilities sum to {s:.4f}, not 1 (± {PROB_TOLERANCE:g})"),
        )


def _flag(report: Report, table: Table, mask, kind: str, message) -> None:
    _list(report.problems, table, mask, kind, message)


def _skip(report: Report, table: Table, mask, reason: pd.Series, kind: str, strict: bool) -> None:
    _list(report.problems if strict else report.skipped, table, mask, kind, reason)


def _list(target: list, table: Table, mask, kind: str, message) -> None:
    rows = np.flatnonzero(np.asarray(mask, dtype=bool))
    if not len(rows):
        return
    messages = message.to_numpy() if isinstance(message, pd.Series) else None
    target.extend(
        Problem(kind, table.where(int(i)), str(messages[i]) if messages is not None else message, table.line(int(i)))
        for i in rows
    )


def _run(options: Options, description: Description, task: str, model: str, report: Report) -> dict:
    run_id = options.run_id or f"{options.dataset}/user/{model}" + (f"/{task}" if task != description.task else "")
    return {
        "run_id": run_id,
        "dataset_id": options.dataset,
        "task": task,
        "model_id": model,
        "model_revision": options.revision,
        "source": "user",
        "status": "complete",
        "config": {
            "labels": list(description.labels) if task in ("nli", "detect") else None,
            "notes": options.notes,
            "file": report.file,
            "sha256": report.sha256,
            "format": report.format,
            "columns": report.columns,
            "match_by": report.match_by,
            "probabilities": report.probabilities,
            "label_order": list(options.label_order),
            "label_map": options.label_map,
            "split": options.split,
            "rows": report.rows,
            "matched": report.matched,
            "coverage": round(report.coverage, 6),
            "trained_on": list(training_data.names(list(options.trained_on))),
        },
        "provenance": f"imported from {Path(report.file).name} (SHA-256 {report.sha256})",
        "device": None,
        "code_version": "backend.imports",
    }


def examples_for(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    return queries.examples_to_match(con, dataset_id)


def plan(con: duckdb.DuckDBPyConnection, table: Table, options: Options) -> Plan:
    """`check` a file read with `files.read` against the stored dataset (read it before opening the store)."""
    return check(table, examples_for(con, options.dataset), describe(con, options.dataset), options)


def dataset_from_name(file_name: str, datasets: list[str]) -> str | None:
    """The dataset a file's name names as a word (`roberta_nope.csv` → nope; the longest when several do).

    >>> dataset_from_name("preds/roberta_nope-main.csv", ["commitmentbank", "nope"])
    'nope'
    >>> dataset_from_name("x.csv", ["nope"]) is None
    True
    """
    stem = Path(file_name).stem.lower()
    named = [d for d in datasets if re.search(rf"(?<![a-z0-9]){re.escape(d.lower())}(?![a-z0-9])", stem)]
    return max(named, key=len) if named else None


def best_dataset(
    con: duckdb.DuckDBPyConnection, table: Table, options: Options, datasets: list[str]
) -> tuple[str, int] | None:
    """When a file matches none of `options.dataset`'s examples: the other dataset whose examples most of its rows
    match (each checked as `plan` would, with that dataset's task), and how many; None when none matches."""
    best = None
    for name in datasets:
        if name == options.dataset:
            continue
        try:
            matched = plan(
                con, table, replace(options, dataset=name, task=None, run_id=None, split=None)
            ).report.matched
        except (ValueError, LookupError):
            continue
        if matched and (best is None or matched > best[1]):
            best = (name, matched)
    return best


class RunExists(ValueError):
    """The run id is taken: replacing it must be asked for (and only user runs can be replaced)."""


def save(con: duckdb.DuckDBPyConnection, plan_: Plan, replace: bool = False) -> str:
    """Write a checked plan as one run, in one transaction; ImportRejected if its report has problems, RunExists
    when the id is taken (by a run not imported, or without `replace`). As a person's act (who may import, who may
    replace): `actions.runs.save`."""
    if not plan_.report.ok:
        raise ImportRejected(plan_.report)
    run_id = plan_.run["run_id"]
    source = existing_run(con, run_id)
    if source not in (None, "user"):
        raise RunExists(f"run {run_id!r} is a {source} run, not one of yours; choose another run id (--run-id)")
    if source and not replace:
        raise RunExists(
            f"run {run_id!r} exists (one of yours); replace it (--replace) or choose another run id (--run-id)"
        )
    if source:
        backup.before(con, f"replace run {run_id}")
    now = datetime.now(UTC).replace(tzinfo=None)
    writer.replace_run_table(con, {**plan_.run, "created_at": now}, _arrow(run_id, plan_))
    return run_id


def _arrow(run_id: str, plan_: Plan) -> pa.Table:
    frame = plan_.predictions
    return writer.prediction_table(
        run_id, frame["example_id"], frame["label"], plan_.probs, frame["answer"], frame["text"]
    )


def existing_run(con: duckdb.DuckDBPyConnection, run_id: str) -> str | None:
    """The source of the run with this id ('user', 'import', 'batch', …), or None when the id is free."""
    return store_runs.field(con, run_id, "source")


def deletable(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """LookupError or ValueError unless the run is one a user imported (the others belong to ingest, baselines or
    batch runs)."""
    source = existing_run(con, run_id)
    if source is None:
        raise LookupError(f"no run {run_id!r}")
    if source != "user":
        raise ValueError(f"run {run_id!r} is a {source} run; only runs you imported can be deleted here")


def delete(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """Remove a user run and its predictions (after a backup). As a person's act: `actions.runs.delete`."""
    deletable(con, run_id)
    backup.before(con, f"delete run {run_id}")
    writer.replace_run_table(con, None, None, delete=run_id)


def user_runs(con: duckdb.DuckDBPyConnection, dataset_id: str | None = None) -> pd.DataFrame:
    """The user's imported runs with their provenance, newest first."""
    frame = store_runs.listing(con, dataset_id, status=None, sources=("user",), order="newest")
    return frame[
        [
            "run_id",
            "dataset_id",
            "task",
            "model_id",
            "model_revision",
            "created_at",
            "predictions",
            "coverage",
            "file",
            "sha256",
            "notes",
        ]
    ]
