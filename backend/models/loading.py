"""Load registered models once per process and share them (Streamlit sessions are threads)."""

from __future__ import annotations

import threading
from collections import defaultdict

from backend.models import registry
from backend.models.classifier import SequenceClassifier
from backend.models.embed import Embedder
from backend.models.endpoints.client import Endpoint, Settings
from backend.models.generator import Generator

_LOADED: dict[str, object] = {}
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

    Each model loads under its own lock, so a session loading one model never waits for another's.
    """
    with _LOCK:
        if name in _LOADED:
            return _LOADED[name]
        loading = _LOADING[name]
    with loading:
        if name not in _LOADED:
            model = registry.spec(name)
            if model.is_endpoint:  # nothing to load; the first request checks the server
                built = Endpoint(Settings.of(model))
            else:
                built = BUILDERS[model.task](registry.weights_path(model), model, model.load != "hub")
            with _LOCK:
                _LOADED[name] = built
    return _LOADED[name]


def loaded() -> list[str]:
    with _LOCK:
        return sorted(_LOADED)


def unload(name: str) -> None:
    with _LOCK:
        _LOADED.pop(name, None)
