"""Per-sample logs of the big harnesses as rows `import-run` reads: lm-evaluation-harness's `--log_samples` JSONL
(`samples_<task>_<time>.jsonl`) and Inspect AI's `.eval` logs.

A log of a task the lab exported (`tasks`) carries each example's id, split and text, so its rows match by id; a
log of any other task gives its document's fields as `doc.<field>` (lm-eval) or its `input` and `metadata.<key>`
(Inspect) for `--map` and matching by text. What each harness predicted becomes the column the import expects:
  - lm-eval multiple_choice: the choices' log-likelihoods as `logits` (the import's softmax over them is the
    distribution lm-eval's `acc` takes its argmax of), in the order of the task's choices;
  - generated text (lm-eval generate_until, every Inspect sample): `label`, the label the lab's parser reads with
    the exporting template's answer words and chain of thought (else the text itself, for `--label-map`), and
    `answer`, the short answer the lab's parser reads — the same parsers as the lab's endpoint runs; the task picks
    the column.
A response of a lab template that names no label (none, or two as in "yes, no"; empty; a refusal) is kept without
one, as the lab's own runs keep it, so it counts wrong (never guessed), as in the scorer of the Inspect task the lab
exports: the lab's accuracy of the run is Inspect's. Every prediction of a lab record keeps its response, parse and the
harness's own score as its `text`; where that score differs from the lab's (a log of another scorer, such as Inspect's
`match` in tasks exported before issue 54), the report names by how much. An Inspect sample that ended in an error
is left out and counted in the report as a skipped row. Of repeated Inspect epochs, epoch 1 is imported (a run holds
one prediction per example) and the report says so.

The `.eval` file is a zip archive of JSON members, compressed with zstandard by current Inspect versions. It is
read here with the standard library's zipfile and the `zstandard` package rather than `inspect_ai.log`: that
package brings about 45 others (boto3, s3fs, textual, fastapi …) into the dashboard's environment and
downgrades fsspec there; `tests/test_harnesses.py` checks this reader against `read_eval_log` where it is installed.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import struct
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import zstandard

from backend.datasets.validation import DataError
from backend.imports import predictions
from backend.imports.check_report import Problem
from backend.imports.files import Table, max_bytes, read
from backend.metrics import squad
from backend.models.prompts import parsers, templates

ZSTD = 93  # the zip compression method number of zstandard
LM_EVAL_KEYS = {"doc_id", "doc", "resps", "filtered_resps"}
EXPORTED = ("id", "split", "premise", "hypothesis", "question")  # fields of a lab export's records
HARNESS_VALUES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0, "True": 1.0, "False": 0.0}  # Inspect's CORRECT, INCORRECT …


@dataclass
class Log:
    table: Table  # rows for predictions.check
    harness: str  # "lm-evaluation-harness" | "Inspect AI" | "" (not a harness log)
    model: str | None = None  # the model the harness names, where it does
    skipped: list[Problem] = field(default_factory=list)  # rows left out before matching (an Inspect error)
    notes: list[str] = field(default_factory=list)
    unanswered: set[str] = field(default_factory=set)  # where (`Table.where`) a response names no label
    responses: dict[str, dict] = field(default_factory=dict)  # a lab record's id → its response, as `text` keeps it


def read_log(source: Path | str | bytes | pd.DataFrame, name: str | None = None) -> Log:
    """`files.read` for any file import-run takes; a harness log (recognised by its content) becomes its rows."""
    name = name or (str(source) if not isinstance(source, bytes | pd.DataFrame) else None)
    suffix = Path(name or "").suffix
    if isinstance(source, pd.DataFrame) or suffix not in (".eval", ".jsonl", ".ndjson"):
        return Log(read(source, name=name), "")
    raw = source if isinstance(source, bytes) else _bytes(Path(source))
    if suffix == ".eval":
        if raw[:4] != b"PK\x03\x04":
            raise DataError(
                name,
                "not an Inspect .eval log (a zip archive); a .json log converts with `inspect log convert --to eval`",
            )
        return _inspect(raw, name)
    if _is_lm_eval(raw):
        return _lm_eval(raw, name, None if isinstance(source, bytes) else Path(source))
    return Log(read(raw, name=name), "")  # the bytes already read, not the file again


def plan(con: duckdb.DuckDBPyConnection, log: Log, options: predictions.Options) -> predictions.Plan:
    """`predictions.plan` for a file read by `read_log`: a harness log's model named by the harness unless one is
    given, its provenance kept with the run, its left-out rows among the report's skipped rows."""
    if not log.harness:
        return predictions.plan(con, log.table, options)
    provenance = "; ".join([f"{log.harness} log", *log.notes])
    options = replace(options, model=options.model or log.model, notes=options.notes or provenance)
    planned = predictions.plan(con, log.table, options)
    report = planned.report
    report.rows += len(log.skipped)
    report.skipped[:0] = log.skipped
    report.notes[:0] = [provenance]
    report.problems = [p for p in report.problems if not (p.kind == "empty" and p.where in log.unanswered)]
    unlabelled = int(planned.predictions["label"].isna().sum()) if log.unanswered and len(planned.predictions) else 0
    if unlabelled:
        report.notes.append(
            f"{unlabelled:,} responses name no label (none, or two as in 'yes, no'; or empty, or a refusal): kept "
            "without one and counted wrong, as in the lab's own runs and the scorer of the task the lab exports"
        )
    if log.responses and len(planned.predictions):
        found = planned.predictions
        found["text"] = [
            json.dumps(log.responses[i]) if i in log.responses else t
            for i, t in zip(found["example_id"], found["text"])
        ]
    return planned


def _responses(log: Log) -> Log:
    """The generated responses as `label` (read with the exporting template's answer words, else the text itself)
    and `answer` (the short answer), each read as the lab reads its own runs' responses (`parsers`, with the
    template's answer words and chain of thought). A response that names none of its template's labels, or two,
    keeps no label (`unanswered`: the plan stores it so, counted wrong); a lab record's response, its parse and the
    harness's own score are kept as the prediction's `text`, as a prompted run keeps them."""
    frame = log.table.frame
    if "response" not in frame:
        return log
    response, chosen = frame.pop("response").astype(str), list(frame.pop("lab_template"))
    scores = list(frame.pop("harness_score")) if "harness_score" in frame else [None] * len(frame)
    labels = [
        parsers.label(text, t.verbalisers, t.reasons) if t and t.task in ("nli", "detect") else None
        for text, t in zip(response, chosen)
    ]
    answers = [parsers.short_answer(text, t.reasons if t else False) for text, t in zip(response, chosen)]
    frame["label"] = [p.label if p else text.strip() for p, text in zip(labels, response)]
    frame["answer"] = [a.answer or "" for a in answers]
    log.unanswered = {log.table.where(i) for i, p in enumerate(labels) if p and p.status != "ok"}
    for i, text, t, named, said, score in zip(frame.get("id", []), response, chosen, labels, answers, scores):
        if t is not None:
            read = {"label": named.label} if named else {"answer": said.answer}
            kept = {"template": t.ref, "generation": text, "parse": (named or said).status} | read
            log.responses[str(i)] = kept | ({"harness_score": score} if score is not None else {})
    return log


def _bytes(path: Path) -> bytes:
    if not path.is_file():
        raise DataError(str(path), "no such file")
    if path.stat().st_size > max_bytes():
        raise DataError(str(path), f"over the import cap of {max_bytes() / 2**20:,.0f} MiB (set PLAB_IMPORT_MAX_MB)")
    return path.read_bytes()


def _is_lm_eval(raw: bytes) -> bool:
    first = raw.lstrip().split(b"\n", 1)[0]
    try:
        record = json.loads(first)
    except ValueError:
        return False
    return isinstance(record, dict) and set(record) >= LM_EVAL_KEYS


def _lm_eval(raw: bytes, name: str, path: Path | None) -> Log:
    rows, lines, docs = [], [], []
    for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except ValueError as exc:
            raise DataError(name, f"not JSON: {exc}", number) from None
        missing = LM_EVAL_KEYS - set(sample) if isinstance(sample, dict) else LM_EVAL_KEYS
        if missing:
            raise DataError(name, f"an lm-eval sample needs {sorted(LM_EVAL_KEYS)}; {sorted(missing)} missing", number)
        doc, responses = sample["doc"], sample["filtered_resps"]
        docs.append(doc)
        row = _document(doc, "doc.")
        if responses and all(isinstance(r, list) and len(r) == 2 for r in responses):  # multiple_choice
            row["logits"] = [float(r[0]) for r in responses]
        else:
            row["response"] = responses[0] if responses else ""
            row["lab_template"] = _template(doc.get("template"))
            metric = next(iter(sample.get("metrics") or []), None)
            row["harness_score"] = {"scorer": metric, "value": sample[metric]} if metric in sample else None
        rows.append(row)
        lines.append(number)
    frame = pd.DataFrame(rows)
    table = Table(name, "lm-eval samples", frame, _sha256(raw), np.asarray(lines))
    model, notes = _lm_eval_model(name, path)
    log = Log(table, "lm-evaluation-harness", model, notes=notes)
    if "logits" in frame:
        log.notes.append("probabilities: the softmax of each choice's log-likelihood, as lm-eval scored it")
    log = _responses(log)
    golds = {str(doc["id"]): doc for doc in docs if isinstance(doc, dict) and "id" in doc}
    log.notes += _differences(
        log.responses,
        golds,
        "lm-eval's exact_match compares the whole response, case aside, with the first gold answer; the lab, its "
        "short answer with any gold answer after SQuAD's normalisation",
    )
    return log


def _lm_eval_model(name: str, path: Path | None) -> tuple[str | None, list]:
    """The model and harness version from the results file lm-eval writes beside the samples (same timestamp)."""
    stamp = re.search(r"_(\d{4}-\d\d-\d\dT[\d.-]+)\.jsonl$", name)
    results = path.with_name(f"results_{stamp.group(1)}.json") if path and stamp else None
    if not results or not results.is_file():
        return None, []
    info = json.loads(results.read_text())
    model = Path(str(info.get("model_name") or "")).name or None
    return model, [
        f"lm-eval {info.get('lm_eval_version', '?')}, model arguments {info.get('config', {}).get('model_args')}"
    ]


def inspect_log(raw: bytes, name: str) -> tuple[dict, list[dict]]:
    """An Inspect .eval log's header and its samples, as the JSON members of the archive hold them."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        header = json.loads(_member(archive, raw, "header.json"))
        members = sorted(n for n in archive.namelist() if n.startswith("samples/") and n.endswith(".json"))
        return header, [json.loads(_member(archive, raw, n)) for n in members]
    except (zipfile.BadZipFile, KeyError, ValueError, zstandard.ZstdError) as exc:
        raise DataError(name, f"not a readable Inspect .eval log: {exc}") from None


def _inspect(raw: bytes, name: str) -> Log:
    header, samples = inspect_log(raw, name)
    samples.sort(key=lambda s: (int(s.get("epoch", 1)), str(s.get("id"))))
    epochs = {int(s.get("epoch", 1)) for s in samples}
    kept = [s for s in samples if int(s.get("epoch", 1)) == min(epochs, default=1)]
    rows = []
    for sample in kept:
        metadata = sample.get("metadata") or {}
        row = _document({"id": sample.get("id"), **metadata}, "metadata.")
        prompt = sample.get("input")
        row["input"] = prompt if isinstance(prompt, str) else _last_user_text(prompt)
        row["response"] = ((sample.get("output") or {}).get("completion")) or ""
        row["lab_template"] = _template(metadata.get("template"))
        row["harness_score"] = _score(sample.get("scores"))
        row["error"] = (sample.get("error") or {}).get("message") if sample.get("error") else None
        rows.append(row)
    if not rows:
        raise DataError(name, "the log holds no samples (was it written with --no-log-samples?)")
    frame = pd.DataFrame(rows)
    evaluated = header.get("eval", {})
    table = Table(name, "Inspect .eval", frame.drop(columns="error"), _sha256(raw), None)
    version = evaluated.get("packages", {}).get("inspect_ai", "?")
    model = str(evaluated.get("model") or "")
    notes = [f"Inspect {version}, task {evaluated.get('task')}, model {model}"]
    log = Log(table, "Inspect AI", model.rsplit("/", 1)[-1] or None, notes=notes)
    if len(epochs) > 1:
        log.notes.append(f"{len(epochs)} epochs in the log: epoch {min(epochs)} imported (one prediction per example)")
    errors = frame["error"].notna().to_numpy()
    _leave_out(log, errors, "error", [f"the sample ended in an error: {e}" for e in frame["error"]])
    log = _responses(log)
    golds = {str(s.get("id")): s.get("metadata") or {} for s in kept}
    log.notes += _differences(log.responses, golds, "an Inspect task the lab exports today scores as the lab does")
    return log


def _differences(responses: dict[str, dict], golds: dict[str, dict], why: str) -> list[str]:
    """A note naming how far the harness's own per-sample scores differ from the lab's scoring of the same
    responses against the gold the record carries ([] where they agree); `why` says where the difference comes from.
    """
    pairs, scorers = [], set()
    for i, kept in responses.items():
        harness, gold = kept.get("harness_score"), golds.get(i, {})
        value = harness["value"] if harness else None
        value = float(value) if isinstance(value, int | float) else HARNESS_VALUES.get(str(value))
        if value is None:
            continue
        if "answer" in kept and "gold_answers" in gold:
            lab = squad.exact_match(kept["answer"], list(gold["gold_answers"] or []))
        elif "label" in kept and gold.get("label") is not None:
            lab = float(kept["label"] == gold["label"])
        else:
            continue
        pairs.append((value, lab))
        scorers.add(str(harness["scorer"]))
    differ = sum(value != lab for value, lab in pairs)
    if not differ:
        return []
    harness, lab = (sum(p[k] for p in pairs) / len(pairs) for k in (0, 1))
    return [
        f"the harness's scorer {', '.join(sorted(scorers))} scored {differ:,} of {len(pairs):,} samples otherwise "
        f"than the lab scores their responses (mean {harness:.3f}, the lab's {lab:.3f}): the run holds the lab's "
        f"reading of each response; {why}"
    ]


def _member(archive: zipfile.ZipFile, raw: bytes, name: str) -> bytes:
    """A member's bytes; zstandard ones decompressed from the raw stream (zipfile before Python 3.14 cannot)."""
    info = archive.getinfo(name)
    if info.compress_type != ZSTD:
        return archive.read(info)
    start = info.header_offset
    name_length, extra_length = struct.unpack("<HH", raw[start + 26 : start + 30])
    data = raw[start + 30 + name_length + extra_length :][: info.compress_size]
    return zstandard.ZstdDecompressor().decompress(data, max_output_size=info.file_size)


def _document(doc: dict, prefix: str) -> dict:
    """A lab export's fields as the import's columns; any other task's scalar fields as prefix + name."""
    if isinstance(doc, dict) and "id" in doc and "template" in doc:
        return {key: doc[key] for key in EXPORTED if key in doc}
    return {prefix + key: value for key, value in (doc or {}).items() if isinstance(value, str | int | float | bool)}


def _template(ref: str | None) -> templates.Template | None:
    """The lab template a record was exported with (`name@version`); None for another task's."""
    if not ref:
        return None
    try:
        return templates.get(str(ref).split("@")[0])
    except (LookupError, ValueError):
        return None


def _score(scores: dict | None) -> dict | None:
    """The sample's score by the task's (first) scorer, as Inspect logged it: {scorer, value, answer}."""
    if not scores:
        return None
    name, score = next(iter(scores.items()))
    return {"scorer": name, "value": score.get("value"), "answer": score.get("answer")}


def _last_user_text(messages) -> str:
    for message in reversed(messages or []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else " ".join(c.get("text", "") for c in content or [])
    return ""


def _leave_out(log: Log, mask: np.ndarray, kind: str, reasons: list[str]) -> None:
    """Move the rows under `mask` from the table into log.skipped, each named by its line or record."""
    table = log.table
    for i in np.flatnonzero(mask):
        where = table.where(int(i)) if table.lines is not None else f"sample {table.frame['id'].iloc[i]}"
        log.skipped.append(Problem(kind, where, reasons[i], table.line(int(i))))
    keep = ~np.asarray(mask, dtype=bool)
    log.table = Table(
        table.name,
        table.format,
        table.frame[keep].reset_index(drop=True),
        table.sha256,
        None if table.lines is None else table.lines[keep],
    )


def _sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()
