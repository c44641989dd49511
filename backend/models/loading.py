"""Load registered models once per process and share them (Streamlit sessions are threads)."""

from __future__ import annotations

import threading
from collections import defaultdict

from backend.models import registry
from backend.models.classifier import SequenceClassifier
from backend.models.embed import Embedder
from backend.models.endpoints.client import Endpoint, Settings
from backend.models.generator import Generator

_LOADED: dict[str, tuple[registry.ModelSpec, object]] = {}  # name → (the entry it was loaded from, the model)
_LOCK = threading.Lock()  # guards the two dicts
_LOADING: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)  # one per model: loads never block others
BUILDERS = {
    "embed": lambda path, s, local: Embedder(path, s.device, s.batch_size),
    "generate": lambda path, s, local: Generator(path, s.device, s.batch_size, local_only=local),
    "nli": lambda path, s, local: SequenceClassifier(
        path, s.device, s.batch_size, revision=s.revision, local_only=local
    ),
    "detect": lambda path, s, local: SequenceClassifier(
        path, s.device, s.batch_size, revision=s.revision, local_only=local
    ),
}


def get(name: str):
    """The loaded model for a registry name (loaded on first use); ModelUnavailable says what to do.

    Each model loads under its own lock, so a session loading one model never waits for another's. A model is
    kept with the registry entry it was loaded from: when the entry changes (a user edits registry.local.toml,
    or another data folder registers the name), the next call loads the new one.
    """
    model = registry.spec(name)
    with _LOCK:
        kept = _LOADED.get(name)
        if kept is not None and kept[0] == model:
            return kept[1]
        loading = _LOADING[name]
    with loading:
        kept = _LOADED.get(name)
        if kept is None or kept[0] != model:
            if model.is_endpoint:  # nothing to load; the first request checks the server
                built = Endpoint(Settings.of(model))
            else:
                built = BUILDERS[model.task](registry.weights_path(model), model, model.load != "hub")
            kept = (model, built)
            with _LOCK:
                _LOADED[name] = kept
    return kept[1]


def loaded() -> list[str]:
    with _LOCK:
        return sorted(_LOADED)


def unload(name: str) -> None:
    with _LOCK:
        _LOADED.pop(name, None)
