"""Sharing the store between processes: the dashboard, terminal commands and notebooks, side by side.

DuckDB lets one process open a file read-write, and while it does no other process may open the file
at all. So no process keeps the store open: each opens it for one unit of work (a page's query, one
chunk of a batch run, an import, a notebook call) inside `session()`, under an exclusive lock on
`<store>.lock`, and closes it when its last session ends (DuckDB then checkpoints the WAL into the
file). Threads of one process share the open database, a cursor each. Units of work are short, so a
terminal command waits milliseconds for the dashboard and the dashboard waits at most one unit of a
command; a waiter that times out gets `StoreBusy`, which names the process holding the store.

A process holding the store while another waits lets its running sessions finish and then hands the
store over before starting new ones (`<store>.queue` tells it someone waits), so a busy dashboard
cannot starve a terminal command; waiting processes get the store in the order they asked for it (a ticket
each in `<store>.waiting/`), so one that keeps coming back cannot overtake the others (issue 56: 50 processes
answering a study at once). Writes are transactions, so a reader never sees half a run.

Nesting is per thread: a session opened inside another one in the same thread never waits. Do not
open a session in a worker thread while the thread that started it holds one and waits for it: with
another process queued, the worker waits for the holder to finish (StoreBusy after its timeout).
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from backend.store.connection import connect, existing_store, store_path

POLL_S = 0.05  # how often a waiter behind others looks whether its turn has come
HEAD_POLL_S = 0.002  # how often the first in line tries the lock: a hand-over costs about this, not POLL_S


def default_wait() -> float:
    """Seconds to wait for another process's unit of work before StoreBusy ($PLAB_STORE_WAIT, default 120)."""
    return float(os.environ.get("PLAB_STORE_WAIT", "120"))


Opener = Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]]
StoreRef = duckdb.DuckDBPyConnection | Path | str | None


class StoreBusy(RuntimeError):
    """Another process held the store for longer than this one was willing to wait."""


@dataclass
class _Shared:
    """One process's hold on one store file."""

    path: Path
    cond: threading.Condition = field(default_factory=threading.Condition)
    users: int = 0
    con: duckdb.DuckDBPyConnection | None = None
    lock_fd: int | None = None
    handing_over: bool = False


_HELD: dict[Path, _Shared] = {}
_HELD_LOCK = threading.Lock()
_DEPTH = threading.local()  # sessions this thread has open, per store: a nested session never waits


def _shared(path: Path) -> _Shared:
    key = path.resolve()
    with _HELD_LOCK:
        return _HELD.setdefault(key, _Shared(key))


@contextmanager
def session(
    path: Path | str | None = None, timeout: float | None = None, create: bool = False
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor on the store for one unit of work; the store is opened (and locked) only while needed.

    FileNotFoundError when the store does not exist (unless `create`), StoreBusy after `timeout`
    seconds (default $PLAB_STORE_WAIT or 120) waiting for another process.
    """
    target = store_path(path)
    if not create:
        existing_store(target)
    shared = _shared(target)
    depth = getattr(_DEPTH, "held", None) or {}
    _DEPTH.held = depth
    _enter(shared, default_wait() if timeout is None else timeout, nested=depth.get(shared.path, 0) > 0)
    depth[shared.path] = depth.get(shared.path, 0) + 1
    cursor = None
    try:
        cursor = shared.con.cursor()
        yield cursor
    finally:
        depth[shared.path] -= 1
        if cursor is not None:
            try:
                cursor.close()
            except duckdb.Error:  # its connection was closed meanwhile (see `released`)
                pass
        _leave(shared)


@contextmanager
def released(path: Path | str | None = None) -> Iterator[None]:
    """Give up this thread's hold on the store for a long wait that needs no store (a model answering),
    so a queued terminal command, and this process's other sessions behind it, are not held up; the
    hold is taken back afterwards. Cursors opened before must not be used after."""
    shared = _shared(store_path(path))
    depth = getattr(_DEPTH, "held", None) or {}
    held = depth.get(shared.path, 0)
    for _ in range(held):
        _leave(shared)
    depth[shared.path] = 0
    try:
        yield
    finally:
        if held:
            _enter(shared, default_wait(), nested=False)
            with shared.cond:
                shared.users += held - 1  # the other levels nest inside the first
            depth[shared.path] = held


def opener(store: StoreRef) -> Opener:
    """How long-running work opens the store per unit: an open connection is used as it is (held
    throughout, e.g. in tests); a path, or None for the configured store, opens a `session()` each time."""
    if isinstance(store, duckdb.DuckDBPyConnection):
        return lambda: nullcontext(store)
    return lambda: session(store)


def _enter(shared: _Shared, timeout: float, nested: bool) -> None:
    deadline = time.monotonic() + timeout
    with shared.cond:
        while not nested and (shared.handing_over or (shared.users and _someone_waits(shared.path))):
            shared.handing_over = True  # let running sessions finish, then give the store to the waiter
            if not shared.cond.wait(timeout=max(deadline - time.monotonic(), 0)):
                raise StoreBusy(f"{shared.path}: this process's own sessions did not finish within {timeout:.0f} s")
        if shared.con is None:
            shared.lock_fd = _lock(shared.path, deadline, timeout)
            try:
                shared.con = _open(shared.path, deadline, timeout)
            except BaseException:
                _unlock(shared)
                raise
        shared.users += 1


def _leave(shared: _Shared) -> None:
    with shared.cond:
        shared.users -= 1
        if shared.users == 0:
            con, shared.con = shared.con, None
            try:
                con.close()  # checkpoints the WAL into the store file
            finally:
                _unlock(shared)  # the first waiter in line takes it within HEAD_POLL_S; this process's next
                shared.handing_over = False  # session queues behind it with a ticket of its own (`_turn`)
                shared.cond.notify_all()


def _open(path: Path, deadline: float, timeout: float) -> duckdb.DuckDBPyConnection:
    """Open read-write; retry while a process that does not take the lock (an older release) holds the file."""
    while True:
        try:
            return connect(path)
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():  # not another holder: e.g. no permission to write the folder
                raise
            if time.monotonic() > deadline:
                raise StoreBusy(
                    f"{path} is held by another process that does not share it ({exc}); "
                    "stop that process (an older dashboard or command), then try again"
                ) from exc
            time.sleep(POLL_S * 5)


def _lock(path: Path, deadline: float, timeout: float) -> int:
    """Take `<store>.lock` in the order processes asked for it. A process that finds others waiting takes a ticket
    (`_ticket`) and tries the lock only when its ticket is the oldest live one, so a process that keeps coming back
    cannot overtake those already waiting; while waiting it also holds `<store>.queue` shared, so the holder knows
    to hand over."""
    path.parent.mkdir(parents=True, exist_ok=True)  # a new store (session(create=True)) in a new folder
    fd = os.open(_sidecar(path, ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    ticket: tuple[Path, int] | None = None
    queue = None
    try:
        while True:
            first = _turn(path, ticket)
            if first:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    pass
            if ticket is None:
                ticket = _ticket(path)
                queue = os.open(_sidecar(path, ".queue"), os.O_RDWR | os.O_CREAT, 0o644)
                fcntl.flock(queue, fcntl.LOCK_SH)
                continue  # with a place in the line: whether it is the first
            if time.monotonic() > deadline:
                raise StoreBusy(
                    f"{path} has been busy for {timeout:.0f} s: {holder(path)} holds it. "
                    "Wait for it to finish (or stop it), then try again."
                ) from None
            time.sleep(HEAD_POLL_S if first else POLL_S)
    except BaseException:
        os.close(fd)
        raise
    finally:
        if ticket is not None:
            ticket[0].unlink(missing_ok=True)
            os.close(ticket[1])
        if queue is not None:
            os.close(queue)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()} {' '.join(sys.argv)[:300]}".encode(), 0)
    return fd


def _ticket(path: Path) -> tuple[Path, int]:
    """A place in the line: a file in `<store>.waiting/` named by the time this process asked, held locked while it
    waits (locked before it is visible under that name, so a live ticket is never taken for a stale one)."""
    folder = _sidecar(path, ".waiting")
    folder.mkdir(exist_ok=True)
    name = f"{time.time_ns():020d}-{os.getpid()}"
    hidden = folder / f".{name}"
    fd = os.open(hidden, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(hidden, folder / name)
    return folder / name, fd


def _turn(path: Path, ticket: tuple[Path, int] | None) -> bool:
    """Whether this process may try the lock now: with no ticket, when no one waits; with one, when no live ticket
    is older. A ticket whose process died (its lock is free) is removed on the way."""
    folder = _sidecar(path, ".waiting")
    try:
        names = sorted(n for n in os.listdir(folder) if not n.startswith("."))
    except FileNotFoundError:
        return True
    for name in names:
        if ticket is not None and name == ticket[0].name:
            return True
        if _alive(folder / name):
            return False
    return True


def _alive(ticket: Path) -> bool:
    try:
        fd = os.open(ticket, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        ticket.unlink(missing_ok=True)  # its process is gone without removing it
        return False
    finally:
        os.close(fd)


def _unlock(shared: _Shared) -> None:
    if shared.lock_fd is not None:
        os.close(shared.lock_fd)  # closing the descriptor releases the flock
        shared.lock_fd = None


def _someone_waits(path: Path) -> bool:
    """Whether another process is queued for the store (it holds `<store>.queue` shared)."""
    try:
        fd = os.open(_sidecar(path, ".queue"), os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def holder(path: Path | str | None = None) -> str:
    """Who holds the store now, as 'process PID (command)', from `<store>.lock`."""
    try:
        text = _sidecar(store_path(path), ".lock").read_text().strip()
    except OSError:
        text = ""
    pid, _, command = text.partition(" ")
    return f"process {pid} ({command})" if pid else "another process"


def _sidecar(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)
