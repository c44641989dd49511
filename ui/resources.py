"""Every st.cache_* wrapper lives here: the store, opened per unit of work (`store()`), `query(fn, ...)`,
which caches any backend query function's result until the store changes, and the retrievers every
session shares.

The dashboard does not keep the store open: `store()` is `backend.store.sessions.session`, so terminal
commands and notebooks write to the same store while the dashboard runs, and what they write shows at
the next rerun (every write, from any process, bumps a version in the store that cached queries key
on: see `store_version`). If a command holds the store longer than STORE_WAIT_S, `store()` raises
StoreLocked naming that command.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from urllib.parse import urlsplit

import streamlit as st

from backend.config import settings
from backend.store import sessions
from backend.store.sessions import StoreDamaged, StoreError, StoreTooNew, damaged, read_areas
from backend.views import common
from ui import charts, urls
from ui.text import message

StoreLocked = sessions.StoreBusy
STORE_WAIT_S = 30.0  # a page waits this long for a terminal command's unit of work before saying who holds the store


@contextmanager
def store() -> Iterator[sessions.Connection]:
    """A cursor on the store for one unit of work: FileNotFoundError if not built, StoreLocked if held too long."""
    with sessions.session(settings().store_path, timeout=STORE_WAIT_S) as con:
        yield con


def store_ref():
    """The store's path, for backend calls that open it only when they need it (e.g. `live.ask`)."""
    return settings().store_path


def released():
    """Let go of this rerun's hold on the store while waiting for something that needs none (a model
    answering), so other processes and sessions are not held up; taken back afterwards."""
    _HELD.versions = None  # another process may write meanwhile: read the versions again afterwards
    return sessions.released(settings().store_path)


@contextmanager
def page_session() -> Iterator[None]:
    """Hold the store for one rerun of a page, so its queries share one open (nested `store()` calls reuse
    it). A missing store is left to the page to explain; a busy, damaged or newer store stops the page
    with what is wrong and what to do, the same on every page."""
    with ExitStack() as held:
        _HELD.versions = held.enter_context(sessions.held_versions(settings().store_path))
        held.callback(setattr, _HELD, "versions", None)
        if os.environ.get("PLAB_RERUN_LOG"):  # benchmarks: the server's side of each rerun
            held.enter_context(_timed(os.environ["PLAB_RERUN_LOG"]))
        try:
            held.enter_context(store())
        except FileNotFoundError:
            pass
        except StoreLocked as exc:
            st.error(message(exc), icon=":material/lock:")
            urls.stop()
        except (StoreDamaged, StoreTooNew) as exc:
            st.error(message(exc), icon=":material/broken_image:")
            urls.stop()
        try:
            yield
        except StoreError as exc:  # a query failed mid-page: say what and what to do, the same on every page
            problem = damaged(exc, settings().store_path)
            st.error(
                message(problem or f"The store could not answer this page ({type(exc).__name__}: {exc})"),
                icon=":material/broken_image:",
            )
            urls.stop()


@contextmanager
def _timed(log: str) -> Iterator[None]:
    """Append 'url path<TAB>seconds<TAB>start<TAB>end' (Unix times) for this rerun to `log` (set by
    benchmarks.bench_load_browser)."""
    started, wall = time.perf_counter(), time.time()
    try:
        yield
    finally:
        with open(log, "a") as out:
            out.write(
                f"{urlsplit(st.context.url or '').path}\t{time.perf_counter() - started:.4f}\t"
                f"{wall:.4f}\t{time.time():.4f}\n"
            )


# Query results are cached per version of what they read: each function passed to query() declares its areas
# where it is defined (backend.store.sessions.reads), so a live answer, a saved slice or a pinned chart being
# stored keeps the caches of the functions that do not read it. A rerun reads the versions once (page_session),
# and again after a write of its own.
_HELD = threading.local()  # this script thread's rerun: the versions of its held session


def store_version(fn: Callable) -> str:
    """The store and the versions of the areas `fn` declared it reads."""
    areas = sorted(read_areas(fn))  # first: an undeclared function is refused before the store is opened
    current = getattr(_HELD, "versions", None)
    if current is None:  # outside a page's rerun (a fragment's, a test's): read them now
        with store() as con:
            found = sessions.versions(con)
    else:
        found = current()
    return f"{settings().store_path}:" + ":".join(f"{area}={found[area]}" for area in areas)


@st.cache_data(show_spinner=False, max_entries=512)
def _call(name: str, version: str, args: tuple, kwargs: tuple) -> Any:
    module, _, function = name.rpartition(".")
    with store() as con:
        return getattr(importlib.import_module(module), function)(con, *args, **dict(kwargs))


def query(fn: Callable, *args, **kwargs) -> Any:
    """`fn(con, *args, **kwargs)` in a store session, cached per version of the areas it declared it reads
    (`@backend.store.sessions.reads`) and per arguments (which must be hashable)."""
    return _call(f"{fn.__module__}.{fn.__qualname__}", store_version(fn), args, tuple(sorted(kwargs.items())))


@st.cache_data(show_spinner=False, max_entries=32)
def _pure(name: str, args: tuple) -> Any:
    module, _, function = name.rpartition(".")
    return getattr(importlib.import_module(module), function)(*args)


def computed(fn: Callable, *args) -> Any:
    """`fn(*args)` for a pure backend function (no store), cached by its arguments (e.g. a template's expansion)."""
    return _pure(f"{fn.__module__}.{fn.__qualname__}", args)


@st.cache_data(show_spinner=False, max_entries=256)
def _chart_spec(name: str, args: tuple, title: str, caption: str) -> dict:
    module, _, function = name.rpartition(".")
    return charts.spec(charts.titled(getattr(importlib.import_module(module), function)(*args), title, caption))


def chart_spec(build: Callable, args: tuple, title: str, caption: str) -> dict:
    """The titled Vega-Lite spec of `build(*args)` (a chart builder in ui.charts), made once per
    arguments and shared by every rerun and session: building and serialising an Altair chart costs
    tens of milliseconds of the interpreter lock that other sessions wait for."""
    return _chart_spec(f"{build.__module__}.{build.__qualname__}", args, title, caption)


@st.cache_resource(show_spinner=False)
def _retrievers(path: str, corpus_id: str) -> dict:
    with store() as con:
        return common.indexes(con, corpus_id)


def retrievers(corpus_id: str = "wiki") -> dict:
    """{"bm25", "dense", "hybrid"} over the corpus, loaded once per process and shared by every session.

    FileNotFoundError saying what to run when the corpus is not in the store (`ingest --only corpus`) or an index
    has not been built (`python -m backend index`): every page that retrieves catches that one error.
    """
    return _retrievers(str(settings().store_path), corpus_id)
