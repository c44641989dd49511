"""Signed links' rows: created (who for, which object, until when, by whom; a general link's cap), listed,
revoked. The signature itself is made and checked in `backend.identity.links`; a link whose row is missing or
revoked is refused."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import pandas as pd

from backend.store.writer import atomic

COLUMNS = (
    "link_id",
    "person",
    "object",
    "expires_at",
    "created_by",
    "created_at",
    "revoked_at",
    "revoked_by",
    "cap",  # a general link's most participants (schema 14); NULL for a personal link
)


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def add(con: duckdb.DuckDBPyConnection, row: dict) -> None:
    with atomic(con, "audit"):
        con.execute(
            "INSERT INTO links (link_id, person, object, expires_at, created_by, created_at, cap) "
            "VALUES ($link_id, $person, $object, $expires_at, $created_by, $created_at, $cap)",
            {"cap": None} | row,
        )


def one(con: duckdb.DuckDBPyConnection, link_id: str) -> dict | None:
    rows = con.execute(f"SELECT {', '.join(COLUMNS)} FROM links WHERE link_id = $i", {"i": link_id}).fetchall()
    return dict(zip(COLUMNS, rows[0])) if rows else None


def listing(con: duckdb.DuckDBPyConnection, obj: str | None = None) -> pd.DataFrame:
    """Every link (of one object, when given), newest first."""
    return con.execute(
        f"SELECT {', '.join(COLUMNS)} FROM links WHERE $o IS NULL OR object = $o ORDER BY created_at DESC",
        {"o": obj},
    ).df()


def revoke(con: duckdb.DuckDBPyConnection, link_id: str, by: str) -> bool:
    """Mark the link revoked (once); whether it was live before."""
    with atomic(con, "audit"):
        return bool(
            con.execute(
                "UPDATE links SET revoked_at = $t, revoked_by = $b WHERE link_id = $i AND revoked_at IS NULL "
                "RETURNING link_id",
                {"t": now(), "b": by, "i": link_id},
            ).fetchall()
        )
