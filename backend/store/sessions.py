"""The one interface the dashboard's glue (ui/) has to the store: sessions, the errors they raise, and the data
versions cached results key on. Everything else ui/ needs from the backend comes through backend.views.

A function a page caches (`ui.resources.query`) declares what it reads with `@reads(...)`, where it is defined;
its cached result is kept until one of those areas is written (backend.store.writer: every write bumps the
version of its area in the store, so writes from other processes count too).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import duckdb

from backend.store.access import StoreBusy, released, session
from backend.store.connection import StoreDamaged, damaged
from backend.store.migrations import StoreTooNew
from backend.store.writer import AREAS, versions, writes

__all__ = [
    "AREAS",
    "AUDIT",
    "Connection",
    "DATA",
    "LIVE",
    "RATINGS",
    "SAVED",
    "StoreBusy",
    "StoreDamaged",
    "StoreError",
    "StoreTooNew",
    "damaged",
    "held_versions",
    "reads",
    "released",
    "session",
    "versions",
]

DATA = ("data", "ratings")  # datasets, runs, predictions, and the ratings many pages show beside them
LIVE = ("live",)  # live answers (the Playground, Rate's queue) and judge runs started from a page
RATINGS = ("ratings",)
SAVED = ("saved",)  # saved slices and report items
AUDIT = ("audit",)  # the audit, and the links written with it
Connection = duckdb.DuckDBPyConnection
StoreError = duckdb.Error  # what a failed read or write raises; ui/ catches it without importing duckdb
F = TypeVar("F", bound=Callable)


def reads(*areas: tuple[str, ...] | str) -> Callable[[F], F]:
    """Declare which areas of the store a function reads (e.g. `@reads(DATA, LIVE)`): its cached result is kept
    until one of them is written. An unknown area is a TypeError at import, not a cache that never refreshes."""
    flat = frozenset(a for area in areas for a in ((area,) if isinstance(area, str) else area))
    unknown = flat - set(AREAS)
    if unknown or not flat:
        raise TypeError(f"@reads takes areas of {AREAS}, got {sorted(unknown) or 'none'}")

    def declared(fn: F) -> F:
        fn.reads = flat
        return fn

    return declared


def read_areas(fn: Callable) -> frozenset[str]:
    """The areas `fn` declared with @reads; TypeError naming it when it declared none."""
    areas = getattr(fn, "reads", None)
    if areas is None:
        raise TypeError(
            f"{fn.__module__}.{fn.__qualname__} does not say what it reads: decorate it with "
            "@backend.store.sessions.reads(...) where it is defined"
        )
    return areas


@contextmanager
def held_versions(path: Path | str) -> Iterator[Callable[[], dict[str, str]]]:
    """For one held session (a page's rerun): a function giving the store's versions, read once and read again
    only after this process writes (another process cannot write while the session is held)."""
    memo: dict = {}

    def current() -> dict[str, str]:
        if memo.get("writes") != writes():
            with session(path) as con:
                memo["versions"], memo["writes"] = versions(con), writes()
        return memo["versions"]

    yield current
