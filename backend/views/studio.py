"""Studio: what the Studio page asks of the backend — a template expanded into projection families, one
sentence's variants, Syn-(QA)²-style pairs from facts (`backend.studio`), each saved as a user dataset;
and the background jobs that train a detector or run a model on what was saved (`backend.execution.jobs`).
The page places them; it holds no model or store code."""

from __future__ import annotations

from backend.datasets.validation import DataError  # noqa: F401 — the page's names
from backend.execution.jobs import TRAINING, alive, last_line, progress, start_training, template_choices  # noqa: F401
from backend.execution.jobs import choices as model_choices  # noqa: F401
from backend.execution.jobs import read as job_log  # noqa: F401
from backend.execution.jobs import start as start_run  # noqa: F401
from backend.imports.datasets import save as save_dataset  # noqa: F401
from backend.studio.facts import SIMILARITY, STAGED  # noqa: F401
from backend.studio.facts import bundle as facts_bundle  # noqa: F401
from backend.studio.facts import generate as generate_facts  # noqa: F401
from backend.studio.templates import LABELS, Expansion, TemplateError, expand  # noqa: F401
from backend.studio.templates import example_text as example_template  # noqa: F401
from backend.studio.templates import pair_sets as template_pairs  # noqa: F401
from backend.studio.templates import save as save_template  # noqa: F401
from backend.studio.variants import CannotTransform, variants  # noqa: F401
from backend.studio.variants import template as variant_template  # noqa: F401
from backend.views.pairs import pair_sets as stored_pair_sets  # noqa: F401
