"""Sharing the store between processes (backend.store.access): sessions, waiting, hand-over, racing writers."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from backend.store import access
from backend.store.connection import connect

ROOT = Path(__file__).resolve().parent.parent
HOLD = """
import sys, time
from backend.store import access
with access.session(sys.argv[1]) as con:
    con.execute("INSERT INTO meta VALUES ('held-by', 'child')")
    print('held', flush=True)
    time.sleep(float(sys.argv[2]))
"""
WRITE = """
import sys
from backend.store import access
for i in range(int(sys.argv[3])):
    with access.session(sys.argv[1]) as con:
        con.execute("INSERT INTO meta VALUES ($k, 'x')", {"k": f"{sys.argv[2]}-{i}"})
"""


@pytest.fixture()
def store(tmp_path) -> Path:
    path = tmp_path / "lab.duckdb"
    connect(path).close()
    return path


def child(code: str, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], cwd=ROOT, stdout=subprocess.PIPE, text=True)


def count(store: Path, prefix: str) -> int:
    with access.session(store) as con:
        return con.execute("SELECT count(*) FROM meta WHERE starts_with(key, $p)", {"p": prefix}).fetchone()[0]


def test_the_store_is_free_for_other_processes_between_sessions(store):
    with access.session(store) as con, access.session(store) as nested:  # nested in one thread: no wait
        con.execute("INSERT INTO meta VALUES ('a', '1')")
        assert nested.execute("SELECT value FROM meta WHERE key = 'a'").fetchone() == ("1",)
    other = subprocess.run(
        [sys.executable, "-c", "import duckdb, sys; duckdb.connect(sys.argv[1]).close()", str(store)],
        capture_output=True,
        text=True,
    )
    assert other.returncode == 0, other.stderr  # closed after the last session: a raw open elsewhere works


def test_a_session_waits_for_another_process_then_sees_its_write(store):
    holder = child(HOLD, store, 1.5)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with access.session(store, timeout=30) as con:
            waited = time.monotonic() - started
            assert con.execute("SELECT value FROM meta WHERE key = 'held-by'").fetchone() == ("child",)
        assert 0.5 < waited < 10
    finally:
        holder.wait(timeout=30)


def test_a_busy_store_names_the_process_that_holds_it(store):
    holder = child(HOLD, store, 20)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(access.StoreBusy, match=rf"process {holder.pid} \(.*-c"), access.session(store, timeout=0.5):
            pass
    finally:
        holder.kill()
        holder.wait()


def test_a_process_that_does_not_share_the_store_is_reported_not_waited_on_forever(store):
    raw = child(
        "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(30)", store
    )
    try:
        assert raw.stdout.readline().strip() == "held"
        with pytest.raises(access.StoreBusy, match="does not share it"), access.session(store, timeout=0.5):
            pass
    finally:
        raw.kill()
        raw.wait()


def test_a_busy_process_hands_the_store_over_to_a_waiting_one(store):
    """Threads here keep overlapping sessions for 4 s; another process still gets its turn quickly."""
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            with access.session(store) as con:
                con.execute("SELECT count(*) FROM meta").fetchall()
                time.sleep(0.05)

    threads = [threading.Thread(target=busy) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.3)
        started = time.monotonic()
        writer = subprocess.run(
            [sys.executable, "-c", WRITE, str(store), "w", "3"], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        took = time.monotonic() - started
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert writer.returncode == 0, writer.stderr
    assert count(store, "w-") == 3 and took < 15


def test_racing_writer_processes_lose_nothing(store):
    writers = [child(WRITE, store, name, 40) for name in ("p", "q", "r")]
    for w in writers:
        assert w.wait(timeout=120) == 0
    with access.session(store) as con:
        assert con.execute("SELECT count(*) FROM meta WHERE key SIMILAR TO '[pqr]-[0-9]+'").fetchone()[0] == 120


def test_opener_uses_an_open_connection_as_it_is(store):
    con = duckdb.connect(str(store))
    try:
        with access.opener(con)() as same:
            assert same is con
    finally:
        con.close()


def test_released_lets_go_of_the_store_for_a_wait_and_takes_it_back(tmp_path):
    path = tmp_path / "s.duckdb"
    with access.session(path, create=True) as con:
        con.execute("INSERT INTO meta VALUES ('r', '1')")
        shared = access._shared(path)
        with access.released(path):
            assert shared.con is None and shared.users == 0  # closed: another process may take it now
            with access.session(path) as other:  # and this process's sessions still work meanwhile
                assert other.execute("SELECT value FROM meta WHERE key = 'r'").fetchall() == [("1",)]
        assert shared.users == 1
        with access.session(path) as again:  # held again
            assert again.execute("SELECT count(*) FROM meta").fetchall()[0][0] >= 1
    assert shared.con is None
