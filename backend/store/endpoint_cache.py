"""The response cache of endpoint calls, and what each endpoint cost per day: one SQLite file shared by every
process of the lab.

SQLite, not the DuckDB store: the dashboard, the live worker, batch runs and Ray actors all write it
at once, and SQLite (WAL mode) takes concurrent writers from many processes where DuckDB allows one.
A key is the hash of (server address, the model id the server reports, the messages, every decoding
parameter), so two servers, or new weights served under one name, never share an answer.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path

from backend.config import settings

_LOCAL = threading.local()


def path() -> Path:
    return settings().data_dir / "cache" / "endpoints.sqlite"


def connect(where: Path | None = None) -> sqlite3.Connection:
    """This thread's connection (SQLite connections are not shared between threads)."""
    where = where or path()
    cons = _LOCAL.__dict__.setdefault("cons", {})
    if where not in cons:
        where.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(where, timeout=30, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL, created_at REAL)")
        con.execute("CREATE TABLE IF NOT EXISTS spend (endpoint TEXT, day TEXT, usd REAL, PRIMARY KEY (endpoint, day))")
        con.execute(  # each person's share of it (issue 44): who spent it, as store.writer.author() names them
            "CREATE TABLE IF NOT EXISTS person_spend (endpoint TEXT, day TEXT, person TEXT, usd REAL, "
            "PRIMARY KEY (endpoint, day, person))"
        )
        cons[where] = con
    return cons[where]


def key(base_url: str, server_model: str, messages: list[dict], params: dict) -> str:
    text = json.dumps(
        {"base_url": base_url.rstrip("/"), "model": server_model, "messages": messages, "params": params},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def get(cache_key: str, where: Path | None = None) -> dict | None:
    row = connect(where).execute("SELECT value FROM responses WHERE key = ?", (cache_key,)).fetchone()
    return json.loads(row[0]) if row else None


def put(cache_key: str, value: dict, where: Path | None = None) -> None:
    connect(where).execute(
        "INSERT OR REPLACE INTO responses VALUES (?, ?, julianday('now'))",
        (cache_key, json.dumps(value, ensure_ascii=False)),
    )


def size(where: Path | None = None) -> int:
    return connect(where).execute("SELECT count(*) FROM responses").fetchone()[0]


def spent(endpoint: str, day: str, where: Path | None = None) -> float:
    """USD charged to the endpoint on the day (UTC, ISO date)."""
    row = connect(where).execute("SELECT usd FROM spend WHERE endpoint = ? AND day = ?", (endpoint, day)).fetchone()
    return row[0] if row else 0.0


def spent_by(endpoint: str, day: str, person: str, where: Path | None = None) -> float:
    """USD one person was charged on the endpoint on the day."""
    row = (
        connect(where)
        .execute("SELECT usd FROM person_spend WHERE endpoint = ? AND day = ? AND person = ?", (endpoint, day, person))
        .fetchone()
    )
    return row[0] if row else 0.0


def add_spend(endpoint: str, day: str, usd: float, where: Path | None = None, person: str | None = None) -> None:
    """Charge the endpoint's day (and the person's share of it, when named) in one transaction."""
    con = connect(where)
    con.execute("BEGIN IMMEDIATE")
    try:
        con.execute(
            """INSERT INTO spend VALUES (?, ?, ?)
                                  ON CONFLICT (endpoint, day) DO UPDATE SET usd = usd + excluded.usd""",
            (endpoint, day, usd),
        )
        if person:
            con.execute(
                """INSERT INTO person_spend VALUES (?, ?, ?, ?)
                   ON CONFLICT (endpoint, day, person) DO UPDATE SET usd = usd + excluded.usd""",
                (endpoint, day, person, usd),
            )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
