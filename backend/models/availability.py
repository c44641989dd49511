"""Whether each registered model can be used here, without loading anything: its files are present
(`registry.weights_path`), or, for an endpoint, the server answers a short probe with the model and
accepts the key (`endpoints.client.probe`). Every "not available" line says what to do."""

from __future__ import annotations

import os
import time

import pandas as pd

from backend.models.endpoints import client as endpoint_client
from backend.models.registry import ModelSpec, ModelUnavailable, model_card, specs, weights_path

PROBE_TTL_S = 30.0  # pages list models on every rerun: an unreachable endpoint costs its probe once per 30 s
_PROBES: dict = {}


def _probe(model: ModelSpec) -> tuple[str, str]:
    settings = endpoint_client.Settings.of(model)
    key = (settings, os.environ.get(settings.api_key_env, "") if settings.api_key_env else "")
    found = _PROBES.get(key)
    if found is None or time.monotonic() - found[0] > PROBE_TTL_S:
        found = _PROBES[key] = (time.monotonic(), endpoint_client.probe(settings))
    return found[1]


def status(model: ModelSpec) -> tuple[bool, str]:
    """(available, one line): where its files are or that its endpoint answers; else what to do."""
    if model.is_endpoint:
        state, line = _probe(model)
        return (True, line) if state == "reachable" else (False, f"{line} ({state})")
    try:
        where = weights_path(model)
    except ModelUnavailable as exc:
        return False, str(exc)
    return True, f"{model.name}: {where}"


def status_table() -> pd.DataFrame:
    """One row per registered model: task, whether it can be used here, what to do if not, quality."""
    rows = []
    for model in specs().values():
        available, line = status(model)
        card = model_card(model)
        measured = (
            f" Measured here: held-out accuracy {card['heldout_accuracy']:.3f}." if "heldout_accuracy" in card else ""
        )
        rows.append(
            {
                "model": model.name,
                "task": "endpoint" if model.is_endpoint else model.task,
                "available": available,
                "remedy": "" if available else line.split(": ", 1)[1],
                "quality": model.quality + measured,
                "license": model.license,
            }
        )
    return pd.DataFrame(rows)
