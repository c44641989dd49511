"""Every st.cache_* wrapper lives here: one store connection per process, a cursor per call, and
`query(fn, ...)`, which caches any backend query function's result until the store file changes."""
from __future__ import annotations

import importlib
from typing import Any, Callable

import duckdb
import streamlit as st

from backend.config import settings
from backend.store.connection import connect, existing_store


@st.cache_resource(show_spinner=False)
def _store(path: str) -> duckdb.DuckDBPyConnection:
    return connect(path, read_only=True)


def store() -> duckdb.DuckDBPyConnection:
    """A cursor on the shared read-only store (one per thread); FileNotFoundError if not built."""
    return _store(str(settings().store_path)).cursor()


def store_version() -> str:
    """Changes whenever the store file is rewritten (so cached results never go stale)."""
    path = existing_store(settings().store_path)
    stat = path.stat()
    return f"{path}:{stat.st_mtime_ns}:{stat.st_size}"


@st.cache_data(show_spinner=False, max_entries=512)
def _call(name: str, version: str, args: tuple, kwargs: tuple) -> Any:
    module, _, function = name.rpartition(".")
    return getattr(importlib.import_module(module), function)(store(), *args, **dict(kwargs))


def query(fn: Callable, *args, **kwargs) -> Any:
    """`fn(store(), *args, **kwargs)`, cached per store version and arguments (which must be hashable)."""
    return _call(f"{fn.__module__}.{fn.__qualname__}", store_version(), args, tuple(sorted(kwargs.items())))
