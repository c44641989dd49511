"""Prompt templates: Jinja2 files with a YAML header, built in (`templates/`) or yours (`data/prompts/`).

A template file is a Jinja2 comment holding its header, then the prompt:

    {#
    name: nli-zero-shot          # what runs and pages call it; a file in data/prompts/ with the same name wins
    version: 1                   # part of the run id: change it when the text changes
    task: nli                    # nli | detect | qa | write
    strategy: zero-shot          # zero-shot | few-shot | few-shot-cot | zero-shot-cot | retrieve-then-read | crepe
    shots: 4                     # few-shot: demonstrations drawn per item (the run may ask for another k)
    verbalisers: {E: ["yes"], N: ["maybe"], C: ["no"]}   # label → words that say it, quoted (YAML reads a bare yes as
    true)
    #}
    Premise: {{ item.premise }} ...

The prompt sees `item` (premise, hypothesis, question), `demos` (the same fields plus `answer`) and
`passages` (texts, best first). A judge's rubric has `task: judge`, `strategy: score | pairwise`,
`criteria` (criteria of `backend.metrics.rubrics`, each judged by its own prompt) and `judges` (the
run tasks whose outputs it scores); its prompt sees `item` (also gold_answers, gold_presuppositions,
gold_corrections, gold_label), `criterion` (name, low, high, levels: [[score, meaning], ...]) and
`output` (a score) or `output_a` / `output_b` (pairwise). Rendering is sandboxed and strict (an unknown
variable is an error naming the template), so a user's file cannot reach into Python.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml
from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

from backend.config import settings
from backend.metrics.rubrics import RUBRIC

BUILT_IN = Path(__file__).with_name("templates")
STRATEGIES = ("zero-shot", "few-shot", "few-shot-cot", "zero-shot-cot", "retrieve-then-read", "crepe")
TASKS = ("nli", "detect", "qa", "write")
JUDGE_STRATEGIES = ("score", "pairwise")  # a judge's rubric (task: judge): one output scored, or two compared
PAIRWISE_WORDS = ("first", "second", "tie")  # a pairwise judge's verdicts, in the order the answers were shown
DEFAULTS = {"nli": "nli-zero-shot", "detect": "detect-zero-shot", "qa": "qa-zero-shot", "write": "write-two-lines"}
RETRIEVAL_DEFAULT = "qa-retrieve-then-read"
_HEADER = re.compile(r"\A\s*\{#(.*?)#\}\n?", re.DOTALL)
_ENV = SandboxedEnvironment(undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, autoescape=False)


class TemplateProblem(ValueError):
    """A template file that cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Template:
    name: str
    version: int
    task: str
    strategy: str
    body: str
    path: str
    source: str = ""  # the whole file, header included
    shots: int = 0
    verbalisers: dict = field(default_factory=dict)  # label → tuple of words
    criteria: tuple[str, ...] = ()  # a judge's: the criteria it scores, one prompt each
    judges: tuple[str, ...] = ()  # a judge's: the run tasks whose outputs it scores

    @property
    def ref(self) -> str:
        """How a run id names it: name@version."""
        return f"{self.name}@{self.version}"

    @property
    def sha256(self) -> str:
        """Of the whole file: a change of wording, verbalisers or shots changes it."""
        return hashlib.sha256(self.source.encode()).hexdigest()

    @property
    def reasons(self) -> bool:
        """Chain of thought: the answer comes after the reasoning, not as the first token."""
        return self.strategy.endswith("-cot")

    def render(self, item: dict, demos: list[dict] = (), passages: list[str] = ()) -> str:
        return self.render_with(item=item, demos=list(demos), passages=list(passages))

    def render_with(self, **context) -> str:
        """The prompt for these variables (a judge's: item, criterion, output or output_a / output_b)."""
        try:
            return _ENV.from_string(self.body).render(**context).strip()
        except TemplateError as exc:
            raise TemplateProblem(f"{self.path}: {type(exc).__name__}: {exc}") from None

    def answer_word(self, label: str) -> str:
        """A demonstration's gold label as the template says it."""
        return self.verbalisers[label][0]


def user_folder() -> Path:
    return settings().data_dir / "prompts"


def parse_file(path: Path) -> Template:
    text = path.read_text(encoding="utf-8")
    match = _HEADER.match(text)
    if not match:
        raise TemplateProblem(
            f"{path}: expected a header first, a Jinja comment {{# name: …, version: …, task: …, strategy: … #}}"
        )
    try:
        header = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        raise TemplateProblem(f"{path}: the header is not YAML: {exc}") from None
    missing = [k for k in ("name", "version", "task", "strategy") if k not in header]
    if missing:
        raise TemplateProblem(f"{path}: the header lacks {', '.join(missing)}")
    judge = header["task"] == "judge"
    if not judge and (header["task"] not in TASKS or header["strategy"] not in STRATEGIES):
        raise TemplateProblem(
            f"{path}: task must be one of {(*TASKS, 'judge')} and strategy one of {STRATEGIES}, "
            f"got task={header['task']!r}, strategy={header['strategy']!r}"
        )
    criteria, judges = _judge_header(path, header) if judge else ((), ())
    verbalisers = {
        str(k): tuple(v if isinstance(v, list) else [v]) for k, v in (header.get("verbalisers") or {}).items()
    }
    unquoted = [w for words in verbalisers.values() for w in words if not isinstance(w, str)]
    if unquoted:
        raise TemplateProblem(f'{path}: verbalisers must be quoted words; YAML read {unquoted} (write "yes", "no")')
    if header["task"] in ("nli", "detect") and not verbalisers:
        raise TemplateProblem(f"{path}: a {header['task']} template needs verbalisers (label → words)")
    body = text[match.end() :]
    try:
        _ENV.parse(body)
    except TemplateError as exc:
        raise TemplateProblem(f"{path}: line {getattr(exc, 'lineno', '?')}: {exc}") from None
    return Template(
        name=str(header["name"]),
        version=int(header["version"]),
        task=header["task"],
        strategy=header["strategy"],
        body=body,
        path=str(path),
        source=text,
        shots=int(header.get("shots", 0)),
        verbalisers=verbalisers,
        criteria=criteria,
        judges=judges,
    )


def _judge_header(path: Path, header: dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(criteria, judged tasks) of a judge's rubric header, checked."""
    if header["strategy"] not in JUDGE_STRATEGIES:
        raise TemplateProblem(
            f"{path}: a judge's strategy must be one of {JUDGE_STRATEGIES}, got {header['strategy']!r}"
        )
    if header["strategy"] == "pairwise" and set(header.get("verbalisers") or {}) != set(PAIRWISE_WORDS):
        raise TemplateProblem(f"{path}: a pairwise judge needs verbalisers for {PAIRWISE_WORDS} (the answer shown ...)")
    criteria, judges = header.get("criteria") or [], header.get("judges") or []
    unknown = [c for c in criteria if c not in RUBRIC]
    if not criteria or unknown or not isinstance(criteria, list):
        raise TemplateProblem(
            f"{path}: a judge needs `criteria`, a list of {sorted(RUBRIC)}; got {header.get('criteria')!r}"
        )
    if not judges or not isinstance(judges, list) or any(t not in TASKS for t in judges):
        raise TemplateProblem(f"{path}: a judge needs `judges`, the run tasks it scores ({TASKS}); got {judges!r}")
    return tuple(criteria), tuple(judges)


def _files() -> tuple[Path, ...]:
    folders = [BUILT_IN, user_folder()]
    return tuple(p for folder in folders if folder.is_dir() for p in sorted(folder.glob("*.j2")))


@lru_cache(maxsize=8)
def _load(files: tuple[Path, ...], stamps: tuple[float, ...]) -> dict[str, Template]:
    found = {}
    for path in files:  # the user's folder comes last: its templates replace built-in ones of the same name
        template = parse_file(path)
        found[template.name] = template
    return found


def all_templates() -> dict[str, Template]:
    """name → template, re-read when a file changes."""
    files = _files()
    return _load(files, tuple(p.stat().st_mtime for p in files))


def for_task(task: str) -> list[Template]:
    return [t for t in all_templates().values() if t.task == task]


def get(name: str, task: str | None = None) -> Template:
    """A template by name (a trailing @version must match the file's)."""
    base, _, version = name.partition("@")
    found = all_templates()
    if base not in found:
        raise TemplateProblem(
            f"unknown prompt template {base!r}; known: {sorted(found)} (add your own as a .j2 file in {user_folder()})"
        )
    template = found[base]
    if version and version != str(template.version):
        raise TemplateProblem(
            f"template {base!r} is at version {template.version}, not {version}: the run was made "
            "with another text; start a new run"
        )
    if task and template.task != task:
        raise TemplateProblem(f"template {base!r} is for task {template.task}, not {task}")
    return template


def default(task: str, retrieves: bool = False) -> str:
    return RETRIEVAL_DEFAULT if task == "qa" and retrieves else DEFAULTS[task]
