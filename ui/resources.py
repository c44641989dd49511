"""Every st.cache_* wrapper lives here: one store connection per process, a cursor per call,
`query(fn, ...)`, which caches any backend query function's result until the store changes, and the
retrievers every session shares.

The dashboard opens the store read-write, so live queries and ratings can be stored; DuckDB lets
only one process do that, so if another process holds the file (a second dashboard, a CLI command
reading it), the dashboard falls back to read-only; the writing pages say so and offer to try read-write
again once that process has stopped (`read_only_notice`). Writes made here
bump an in-process counter that is part of the cache key, so pages see them at once.
"""
from __future__ import annotations

import importlib
import threading
from typing import Any, Callable

import duckdb
import streamlit as st

from backend.config import settings
from backend.store.connection import connect, existing_store


class StoreLocked(RuntimeError):
    """Another process holds the store read-write (e.g. `python -m backend predict`)."""


_WRITES = [0]
_WRITES_LOCK = threading.Lock()


@st.cache_resource(show_spinner=False, on_release=lambda held: held[0].close())
def _store(path: str) -> tuple[duckdb.DuckDBPyConnection, bool]:
    existing_store(path)
    try:
        return connect(path), True
    except duckdb.IOException as first:
        try:
            return connect(path, read_only=True), False
        except duckdb.IOException:
            raise StoreLocked(f"{path} is locked by another process ({first}). Stop the command that writes "
                              "it (e.g. `python -m backend predict`), then reload this page.") from first


def store() -> duckdb.DuckDBPyConnection:
    """A cursor on the shared store (one per thread); FileNotFoundError if not built, StoreLocked if held."""
    return _store(str(settings().store_path))[0].cursor()


def writable() -> bool:
    """Whether this process could open the store read-write (see the module docstring)."""
    return _store(str(settings().store_path))[1]


def read_only_notice(what: str) -> None:
    """When the store is open read-only: say what cannot be saved, and offer to try read-write again
    (the fallback is held for the whole process until then)."""
    st.warning(f"Another process holds the store, so {what}. Stop it (e.g. a `python -m backend` command), then "
               "try again.", icon=":material/lock:")
    st.button("Try again to open the store for writing", on_click=_store.clear, key="reopen-store")


def wrote() -> None:
    """Call after any write through `store()`: cached query results are recomputed."""
    with _WRITES_LOCK:
        _WRITES[0] += 1


def store_version() -> str:
    """Changes whenever the store file is rewritten or this process writes to it."""
    path = existing_store(settings().store_path)
    stat = path.stat()
    return f"{path}:{stat.st_mtime_ns}:{stat.st_size}:{_WRITES[0]}"


@st.cache_data(show_spinner=False, max_entries=512)
def _call(name: str, version: str, args: tuple, kwargs: tuple) -> Any:
    module, _, function = name.rpartition(".")
    return getattr(importlib.import_module(module), function)(store(), *args, **dict(kwargs))


def query(fn: Callable, *args, **kwargs) -> Any:
    """`fn(store(), *args, **kwargs)`, cached per store version and arguments (which must be hashable)."""
    return _call(f"{fn.__module__}.{fn.__qualname__}", store_version(), args, tuple(sorted(kwargs.items())))


@st.cache_resource(show_spinner=False)
def _retrievers(path: str, corpus_id: str) -> dict:
    from backend.retrieval.index import load_all
    return load_all(_store(path)[0].cursor(), corpus_id)


def retrievers(corpus_id: str = "wiki") -> dict:
    """{"bm25", "dense", "hybrid"} over the corpus, loaded once per process and shared by every session.

    FileNotFoundError (saying to run `python -m backend index`) when an index has not been built.
    """
    return _retrievers(str(settings().store_path), corpus_id)
