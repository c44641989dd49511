"""Studio: what the Studio page asks of the backend — a template expanded into projection families, one
sentence's variants, Syn-(QA)²-style pairs from facts (`backend.studio`), each saved as a user dataset;
and the background jobs that train a detector or run a model on what was saved (`backend.execution.jobs`).
The page places them; it holds no model or store code."""

from __future__ import annotations

import duckdb
import pandas as pd

from backend.actions import datasets as dataset_actions
from backend.actions import jobs as job_actions
from backend.analysis import pairs
from backend.datasets.validation import DataError  # noqa: F401 — the page's names
from backend.execution import jobs
from backend.execution.jobs import (
    TRAINING,  # noqa: F401
    Path,
)
from backend.identity.actor import Actor
from backend.models import registry
from backend.store.bundle import Bundle
from backend.store.sessions import DATA, reads
from backend.studio import facts, templates
from backend.studio import variants as studio_variants
from backend.studio.facts import SIMILARITY, STAGED, Generated  # noqa: F401
from backend.studio.templates import LABELS, MAX_EXAMPLES, Expansion, TemplateError  # noqa: F401
from backend.studio.variants import CannotTransform  # noqa: F401


def alive(run_id: str) -> bool:
    return jobs.alive(run_id)


def last_line(key: str) -> str:
    """The job's log's last non-empty line (progress bars' carriage returns split lines)."""
    return jobs.last_line(key)


def progress(con: duckdb.DuckDBPyConnection, run_id: str, dataset: str) -> dict:
    """status (not started | running | complete | interrupted | stopped), done, parsed (of done: answers, not errors or
    responses that did not parse), total, seconds, eta (seconds left at the rate so far), and the log's last line."""
    return jobs.progress(con, run_id, dataset)


def start_training(store: Path | str, task: str, *, actor: Actor) -> str:
    """Start `train` for `task` (the bundled MiniLM fine-tuned here, see TRAINING) in a process of its own; its key."""
    return job_actions.start_training(store, task, actor=actor)


def template_choices(model: str, task: str) -> list[str]:
    """The prompt templates a model can be run with on a task ([] for a model that is not prompted); few-shot ones draw
    their demonstrations from the dataset (its training split, else other folds)."""
    return jobs.template_choices(model, task)


@reads(DATA)
def model_choices(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, list[str]]]:
    """Your datasets → (their task, the models that can be loaded here and run on them without a retriever)."""
    return jobs.choices(con)


def quality(model: str) -> str:
    """The registry's note on what a model is good for (e.g. that it is tiny and weak), '' when it has none."""
    return registry.spec(model).quality or ""


def job_log(run_id: str) -> dict | None:
    return jobs.read(run_id)


def start_run(
    store: Path | str,
    model: str,
    dataset: str,
    task: str = "nli",
    template: str | None = None,
    *,
    actor: Actor,
) -> str:
    """Start (or resume) `predict --model M --dataset D --task T [--template X]` in a process of its own; the run id (a
    generator's names its prompt template)."""
    return job_actions.start_run(store, model, dataset, task, template, actor=actor)


def save_dataset(
    con: duckdb.DuckDBPyConnection, bundle: Bundle, replace: bool = False, *, actor: Actor
) -> dict[str, int]:
    """Write the dataset in one transaction (replacing it, and its old baseline runs, only when asked), then its
    trivial baselines; BaselinesFailed if only those could not be written; Forbidden if the actor may not import
    datasets (or replace someone else's)."""
    return dataset_actions.save(con, bundle, replace, actor=actor)


def facts_bundle(generated: Generated, name: str, source: str) -> Bundle:
    """The pairs as a user detection dataset (N: the assumption holds; FP: it does not), one pair each."""
    return facts.bundle(generated, name, source)


def generate_facts(
    source: str,
    threshold: float = SIMILARITY,
    upload: bytes | None = None,
    upload_name: str = "triples.csv",
    embedder=None,
) -> Generated:
    """One source's pairs: the staged HotpotQA or MuSiQue file, or your triples CSV given as bytes."""
    return facts.generate(source, threshold, upload, upload_name, embedder)


def expand(text: str, path: str = "template.yaml", limit: int = MAX_EXAMPLES) -> Expansion:
    """The template's items × conditions; TemplateError (line, field) on the first problem."""
    return templates.expand(text, path, limit)


def example_template() -> str:
    """The worked example template shipped in data/templates (what the Studio page starts from)."""
    return templates.example_text()


def template_pairs(expansion: Expansion) -> list[str]:
    """The Minimal pairs page's pair-set ids the stored expansion will have (one per non-base condition)."""
    return templates.pair_sets(expansion)


def save_template(con, expansion: Expansion, source: str, replace: bool = False, *, actor: Actor) -> dict[str, int]:
    """Store the expansion as a user dataset (one transaction; DatasetExists unless `replace`; Forbidden unless the
    actor may import datasets)."""
    return dataset_actions.save(con, templates.bundle(expansion, source), replace, actor=actor)


def variants(sentence: str) -> dict[str, str]:
    """{operator: sentence} for unembedded, negation, question, modal and conditional; an operator the rules cannot do
    for this sentence maps to a CannotTransform (the others are still made)."""
    return studio_variants.variants(sentence)


def variant_template(name: str, trigger: str, rows: list[dict]) -> str:
    """A one-item template (YAML, for `templates.expand`) from edited variants: each row's operator, premise,
    hypothesis and gold label; the first row is the family's base. Braces are kept literal."""
    return studio_variants.template(name, trigger, rows)


@reads(DATA)
def stored_pair_sets(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per (dataset, kind, split of member a): pair_set id 'dataset/kind/split', roles, count."""
    return pairs.pair_sets(con)
