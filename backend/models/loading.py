"""Load registered models once per process and share them (Streamlit sessions are threads)."""

from __future__ import annotations

import threading
from collections import defaultdict

from backend.models import registry

_LOADED: dict[str, tuple[registry.ModelSpec, object]] = {}  # name → (the entry it was loaded from, the model)
_LOCK = threading.Lock()  # guards the two dicts
_LOADING: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)  # one per model: loads never block others


def build(model: registry.ModelSpec):
    """A registry entry's model: an endpoint client, or weights loaded for its task.

    The model classes are imported here, on first use: torch, transformers and openai take seconds to import,
    and most commands and pages never load a model.
    """
    if model.is_endpoint:  # nothing to load; the first request checks the server
        from backend.models.endpoints.client import Endpoint, Settings  # lazy: start-up time (openai)

        return Endpoint(Settings.of(model))
    path, local = registry.weights_path(model), model.load != "hub"
    if model.task == "embed":
        from backend.models.embed import Embedder  # lazy: start-up time (torch)

        return Embedder(path, model.device, model.batch_size)
    if model.task == "generate":
        from backend.models.generator import Generator  # lazy: start-up time (torch)

        return Generator(path, model.device, model.batch_size, local_only=local)
    from backend.models.classifier import SequenceClassifier  # lazy: start-up time (torch): nli and detect

    return SequenceClassifier(path, model.device, model.batch_size, revision=model.revision, local_only=local)


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
            kept = (model, build(model))
            with _LOCK:
                _LOADED[name] = kept
    return kept[1]


def loaded() -> list[str]:
    with _LOCK:
        return sorted(_LOADED)


def unload(name: str) -> None:
    with _LOCK:
        _LOADED.pop(name, None)
