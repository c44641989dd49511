"""A stored dataset as a task for lm-evaluation-harness (YAML + JSONL + a loader) and for Inspect AI (a task file +
JSONL), so a researcher runs the big harness on a cluster and brings the per-sample logs back (`logs`).

Each record carries the lab's own prompt for the item (the dataset task's default zero-shot template, or the one
asked for), so a harness asks exactly what a lab run asks; classification items carry the template's answer words
in the dataset's label order as `choices` and the gold's position as `gold` (-1 where an example has no gold
label, as in the graded projective-probability items: lm-eval's `acc` means nothing there, its choices'
log-likelihoods still come back as the run's probabilities). Every record keeps its example id,
split, gold, facets and its minimal pairs (`pairs`: pair id, kind, its role and the other member), so nothing the
lab knows about an item is lost on the way out, and the logs that come back match by id. The Inspect task scores a
classification or QA response with the lab's own code (its parser and SQuAD metric, copied beside the task file), so
Inspect's score of every sample is the lab's once the log is imported.
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import yaml

from backend.datasets.catalogue import describe
from backend.datasets.description import Description
from backend.metrics import squad
from backend.models.prompted import item_fields
from backend.models.prompts import parsers, templates
from backend.store import queries

LM_EVAL_LOADER = (
    '"""Written by Presupposition Lab: loads the records beside this file, wherever the folder is copied."""\n'
    + """
from pathlib import Path

import datasets


def load(**_):
    return datasets.load_dataset("json", data_files={"test": str(Path(__file__).with_name("{records}"))})
"""
)

INSPECT_TASK = '''"""Written by Presupposition Lab: the dataset {dataset} as an Inspect AI task (`inspect eval {file}`).

Each sample's input is the lab's prompt ({template}); its metadata keeps the example id, gold, facets and minimal
pairs, so `python -m backend import-run LOG.eval --dataset {dataset}` brings the log back to the lab.{scoring}
"""

from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import FieldSpec, json_dataset
from inspect_ai.model import GenerateConfig
{imports}
from inspect_ai.solver import generate
{lab_imports}
RECORDS = Path(__file__).with_name("{records}")
FIELDS = FieldSpec(input="prompt", target="target", id="id", metadata={metadata}){scorer}


@task
def {name}():
    return Task(
        dataset=json_dataset(str(RECORDS), FIELDS),
        solver=generate(),
        scorer={scorer_call},
        config=GenerateConfig(max_tokens={max_tokens}, temperature=0.0),
    )
'''

# A task whose responses the lab reads back (classification, QA) is scored by the lab's own reading of them: the
# task file imports copies of the lab's parser (and for QA its SQuAD metric), written beside it from the lab's own
# modules (COPIES), so the score Inspect gives a sample is the one the lab gives it once the log is imported. A
# writing task keeps Inspect's `match` (the lab does not read writing back as a label or an answer).
COPIES = {"plab_parsers.py": parsers, "plab_squad.py": squad}
LAB_SCORER = '''
VERBALISERS = {verbalisers}  # the answer words of {template}
REASONS = {reasons}  # chain of thought: the answer is read after the last "Answer:"


@scorer(metrics=[accuracy(), stderr()])
def plab_answer():
    """The lab's score of a response: {rule}."""

    async def score(state, target):
{body}

    return score'''


@dataclass(frozen=True)
class Scoring:
    rule: str  # what the scorer's docstring says
    copies: tuple[str, ...]  # the lab's modules it imports (COPIES)
    imports: str
    body: str


LAB_SCORING = {
    "classify": Scoring(
        "the one label it names (plab_parsers.label: one that\n    names none, or two as in 'yes, no', is wrong) "
        "against the gold label",
        ("plab_parsers.py",),
        "from plab_parsers import label",
        """        gold = state.metadata["label"]
        if gold not in VERBALISERS:
            return None  # an item without a gold label is not scored
        parsed = label(state.output.completion, VERBALISERS, REASONS)
        right = parsed.status == "ok" and parsed.label == gold
        return Score(value=CORRECT if right else INCORRECT, answer=parsed.label or "", explanation=parsed.status)""",
    ),
    "qa": Scoring(
        "its short answer (plab_parsers.short_answer) matched\n    exactly with any gold answer after SQuAD's "
        "normalisation (plab_squad.exact_match)",
        ("plab_parsers.py", "plab_squad.py"),
        "from plab_parsers import short_answer\nfrom plab_squad import exact_match",
        """        parsed = short_answer(state.output.completion, REASONS)
        right = exact_match(parsed.answer, state.metadata["gold_answers"]) == 1.0
        return Score(value=CORRECT if right else INCORRECT, answer=parsed.answer or "", explanation=parsed.status)""",
    ),
}


@dataclass(frozen=True)
class Exported:
    name: str  # the task's name in the harness
    files: tuple[Path, ...]
    records: int
    pairs: int


def task_name(dataset_id: str) -> str:
    """The harness task's name: `plab_` and the dataset id with anything but letters, digits and _ as _."""
    return "plab_" + re.sub(r"\W", "_", dataset_id.lower())


def records(con: duckdb.DuckDBPyConnection, dataset_id: str, template: str | None = None) -> tuple[list[dict], str]:
    """One JSON-ready record per example, and the template's ref (name@version)."""
    description = describe(con, dataset_id)
    chosen = templates.get(template or templates.DEFAULTS[description.task], description.task)
    rows = queries.examples_to_export(con, dataset_id)
    pairs = _pairs(queries.pairs_frame(con, dataset_id))
    words = [chosen.answer_word(label) for label in description.labels] if description.classifies else []
    out = []
    for row in rows.to_dict("records"):
        row = {key: _plain(value) for key, value in row.items()}
        record = {"id": row["example_id"], "split": row["split"], "prompt": chosen.render(item_fields(row))}
        if description.task == "nli":
            record |= {"premise": row["input"], "hypothesis": row["hypothesis"]}
        else:
            record["question"] = row["input"]
        if row.get("context"):
            record["context"] = row["context"]
        if description.classifies:
            gold = row["gold_label"]
            record |= {"choices": words, "label": gold}
            record["gold"] = description.labels.index(gold) if gold in description.labels else -1
            record["target"] = words[record["gold"]] if record["gold"] >= 0 else ""
        else:
            answers = row.get("gold_answers") or []
            record |= {"gold_answers": answers, "target": answers[0] if answers else ""}
        facets = {k: v for k in queries.FACETS if k not in ("split", "gold_label") and (v := row.get(k)) is not None}
        record |= {"facets": facets, "pairs": pairs.get(row["example_id"], []), "template": chosen.ref}
        out.append(record)
    return out, chosen.ref


def export(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    folder: Path,
    harnesses: tuple[str, ...] = ("lm-eval", "inspect"),
    template: str | None = None,
) -> list[Exported]:
    """The dataset's records rendered and written once (`folder`/NAME.jsonl), and each harness's task files beside
    them: lm-eval's NAME.yaml and NAME_loader.py, Inspect's NAME.py."""
    written = _written(con, dataset_id, folder, template)
    files = {"lm-eval": _lm_eval_files, "inspect": _inspect_files}
    return [files[harness](dataset_id, folder, *written) for harness in harnesses]


def lm_eval_task(
    con: duckdb.DuckDBPyConnection, dataset_id: str, folder: Path, template: str | None = None
) -> Exported:
    """`folder`/NAME.yaml, NAME.jsonl and NAME_loader.py: run with `lm_eval --include_path folder --tasks NAME`."""
    return export(con, dataset_id, folder, ("lm-eval",), template)[0]


def inspect_task(
    con: duckdb.DuckDBPyConnection, dataset_id: str, folder: Path, template: str | None = None
) -> Exported:
    """`folder`/NAME.py and NAME.jsonl: run with `inspect eval folder/NAME.py --model ...`."""
    return export(con, dataset_id, folder, ("inspect",), template)[0]


def _lm_eval_files(
    dataset_id: str, folder: Path, rows: list[dict], ref: str, name: str, description: Description, data: Path
) -> Exported:
    loader, config = folder / f"{name}_loader.py", folder / f"{name}.yaml"
    loader.write_text(LM_EVAL_LOADER.replace("{records}", data.name))
    spec = {
        "task": name,
        "custom_dataset": f"!function {loader.stem}.load",
        "test_split": "test",
        "doc_to_text": "{{prompt}}",
    }
    if description.classifies:
        spec |= {"output_type": "multiple_choice", "doc_to_choice": "choices", "doc_to_target": "gold"}
        spec["metric_list"] = [{"metric": "acc", "aggregation": "mean", "higher_is_better": True}]
    else:
        spec |= {"output_type": "generate_until", "doc_to_target": "target"}
        spec["generation_kwargs"] = {"until": ["\n"], "max_gen_toks": 32, "do_sample": False}
        spec["metric_list"] = [
            {"metric": "exact_match", "aggregation": "mean", "higher_is_better": True, "ignore_case": True}
        ]
    spec["metadata"] = {"version": 1, "plab_dataset": dataset_id, "plab_template": ref}
    text = yaml.safe_dump(spec, sort_keys=False, allow_unicode=True, width=10_000)
    text = text.replace(f"'!function {loader.stem}.load'", f"!function {loader.stem}.load")  # a YAML tag, unquoted
    config.write_text(f"# Presupposition Lab: {dataset_id} ({len(rows):,} items, prompts from {ref})\n{text}")
    return Exported(name, (config, data, loader), len(rows), _pair_count(rows))


def _inspect_files(
    dataset_id: str, folder: Path, rows: list[dict], ref: str, name: str, description: Description, data: Path
) -> Exported:
    code = folder / f"{name}.py"
    metadata = [key for key in rows[0] if key not in ("id", "prompt", "target")] if rows else []
    chosen = templates.get(ref)
    scoring = LAB_SCORING.get("classify" if description.classifies else chosen.task)
    text = INSPECT_TASK.format(
        file=code.name,
        template=ref,
        dataset=dataset_id,
        records=data.name,
        metadata=json.dumps(metadata),
        name=name,
        max_tokens=(256 if chosen.reasons else 8 if description.classifies else 32),
        **(_lab_scoring(chosen, scoring) if scoring else _match_scoring()),
    )
    code.write_text(text)
    copies = [folder / file for file in scoring.copies] if scoring else []
    for copy in copies:
        copy.write_text(Path(COPIES[copy.name].__file__).read_text())
    return Exported(name, (code, data, *copies), len(rows), _pair_count(rows))


def _lab_scoring(chosen: templates.Template, scoring: Scoring) -> dict:
    """The task file's parts that score a sample as the lab does."""
    verbalisers = json.dumps({label: list(words) for label, words in chosen.verbalisers.items()})
    scorer = LAB_SCORER.format(
        verbalisers=verbalisers, template=chosen.ref, reasons=chosen.reasons, rule=scoring.rule, body=scoring.body
    )
    if not chosen.verbalisers:
        scorer = scorer.replace(f"\nVERBALISERS = {verbalisers}  # the answer words of {chosen.ref}", "")
    said = (
        f"Its scorer is the lab's own: the lab's code that reads and scores a response is copied beside this file "
        f"({', '.join(scoring.copies)}), so Inspect scores each sample as the lab scores it once the log is imported."
    )
    return {
        "scoring": "\n\n" + textwrap.fill(said, 117),
        "imports": "from inspect_ai.scorer import CORRECT, INCORRECT, Score, accuracy, scorer, stderr",
        "lab_imports": scoring.imports + "\n",
        "scorer": scorer,
        "scorer_call": "plab_answer()",
    }


def _match_scoring() -> dict:
    """Inspect's own `match` (a writing task: the lab does not read its responses back as a label or answer)."""
    return {
        "scoring": "\n\nIts scorer is Inspect's `match`, not the lab's measure of writing.",
        "imports": "from inspect_ai.scorer import match",
        "lab_imports": "",
        "scorer": "",
        "scorer_call": 'match(location="any", ignore_case=True)',
    }


def _written(con: duckdb.DuckDBPyConnection, dataset_id: str, folder: Path, template: str | None) -> tuple:
    """The records written to `folder`/NAME.jsonl: (records, template ref, task name, description, the file)."""
    rows, ref = records(con, dataset_id, template)
    name = task_name(dataset_id)
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / f"{name}.jsonl"
    with data.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return rows, ref, name, describe(con, dataset_id), data


def _pairs(frame: pd.DataFrame) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for p in frame.itertuples(index=False):
        for me, other, role in ((p.example_a, p.example_b, p.role_a), (p.example_b, p.example_a, p.role_b)):
            out.setdefault(me, []).append({"pair_id": p.pair_id, "kind": p.kind, "role": role, "other": other})
    return out


def _pair_count(rows: list[dict]) -> int:
    return len({pair["pair_id"] for row in rows for pair in row["pairs"]})


def _plain(value):
    """A stored value as JSON has it (numpy arrays and scalars, NaN and NA as lists, numbers and null)."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None or (not isinstance(value, str | list | dict) and pd.isna(value)):
        return None
    return value.item() if isinstance(value, np.generic) else value
