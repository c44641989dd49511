"""Load registered models once per process and share them (Streamlit sessions are threads)."""
from __future__ import annotations

import threading

from backend import registry
from backend.models.classifier import SequenceClassifier
from backend.models.embed import Embedder
from backend.models.generator import Generator

_LOADED: dict[str, object] = {}
_LOCK = threading.Lock()
BUILDERS = {
    "embed": lambda path, s, local: Embedder(path, s.device, s.batch_size),
    "generate": lambda path, s, local: Generator(path, s.device, s.batch_size, local_only=local),
    "nli": lambda path, s, local: SequenceClassifier(path, s.device, s.batch_size, revision=s.revision, local_only=local),
    "detect": lambda path, s, local: SequenceClassifier(path, s.device, s.batch_size, revision=s.revision, local_only=local),
}


def get(name: str):
    """The loaded model for a registry name (loaded on first use); ModelUnavailable says what to do."""
    with _LOCK:
        if name not in _LOADED:
            model = registry.spec(name)
            path = registry.weights_path(model)
            _LOADED[name] = BUILDERS[model.task](path, model, model.load != "hub")
        return _LOADED[name]


def loaded() -> list[str]:
    return sorted(_LOADED)


def unload(name: str) -> None:
    with _LOCK:
        _LOADED.pop(name, None)
