"""Signed links for people without accounts: a link names a person, one object they may work on (a rating task:
'rating-task:<id>'; a judgement study: 'study:<id>') and an expiry, and is HMAC-SHA256-signed with the server's
link secret. Opening it gives a rater identity scoped to that object (`Actor(person, 'rater', 'link', scope=object)`).

The secret is $PLAB_LINK_SECRET, else a random one kept beside the store (`<store>.link-secret`, readable by its
owner only, made on first use). Rotating it (a new value, or deleting the file) invalidates every link at once;
`revoke` ends one. A tampered, expired, revoked or unknown link is refused with a plain LinkRefused message.

A link's token: base64url(JSON {i: link id, p: person, o: object, x: expiry as Unix seconds}) '.' base64url(HMAC).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pandas as pd

from backend.identity.actor import MAX_RATER_ID, RATER_ID, Actor
from backend.store import links as store_links

OBJECT_KINDS = ("rating-task", "study")
MAX_DAYS = 365


class LinkRefused(PermissionError):
    """A link that opens nothing: the message says why in plain words."""


@dataclass(frozen=True)
class Link:
    link_id: str
    person: str
    object: str
    expires_at: datetime
    token: str

    def url(self, base: str) -> str:
        """The link to send: the dashboard's root, where a link holder's only page (Rate, for this task) lives."""
        return f"{base.rstrip('/')}/?link={self.token}"


def secret_path(store: Path) -> Path:
    return Path(store).with_suffix(".link-secret")


def secret(store: Path) -> bytes:
    """$PLAB_LINK_SECRET, else the store's secret file (created, 0600, on first use)."""
    given = os.environ.get("PLAB_LINK_SECRET")
    if given:
        return given.encode()
    where = secret_path(store)
    if not where.exists():
        where.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(where, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(secrets.token_hex(32))
    return where.read_text().strip().encode()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(key: bytes, payload: str) -> str:
    return _b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())


def handle(store: Path, *names: str) -> str:
    """An opaque, stable handle for what a rater's page names (a task, an item): HMAC-SHA256 of the names keyed
    with the server's link secret, 24 hex digits. It reveals none of the names, and no one without the secret can
    recompute it to test a guess, as they could a plain hash of an id."""
    text = "\x1f".join(str(name) for name in names)
    return hmac.new(secret(store), text.encode(), hashlib.sha256).hexdigest()[:24]


def checked_object(obj: str) -> str:
    kind, _, ident = str(obj).partition(":")
    if kind not in OBJECT_KINDS or not ident:
        raise ValueError(f"object {obj!r}; expected KIND:ID with KIND one of {', '.join(OBJECT_KINDS)}")
    return obj


def create(
    con: duckdb.DuckDBPyConnection, store: Path, person: str, obj: str, days: float, by: str, cap: int | None = None
) -> Link:
    """A new signed link for `person` to work on `obj` for `days` days (the caller has checked permission); a
    general link (one URL for a recruitment platform's participants) has a `cap` on the participants it starts."""
    if not RATER_ID.fullmatch(str(person)) or len(person) > MAX_RATER_ID:
        raise ValueError(f"person {person!r}; expected a rater id: letters, digits and . _ - + @")
    if not 0 < days <= MAX_DAYS:
        raise ValueError(f"days {days!r}; expected more than 0 and at most {MAX_DAYS}")
    made = store_links.now()
    row = {
        "link_id": secrets.token_hex(8),
        "person": person,
        "object": checked_object(obj),
        "expires_at": (made + timedelta(days=days)).replace(microsecond=0),
        "created_by": by,
        "created_at": made,
        "cap": cap,
    }
    store_links.add(con, row)
    return Link(row["link_id"], person, obj, row["expires_at"], token(store, row))


def stamp(when: datetime) -> int:
    return int(pd.Timestamp(when).timestamp())  # naive times in the store are UTC


def token(store: Path, row: dict) -> str:
    claims = {"i": row["link_id"], "p": row["person"], "o": row["object"], "x": stamp(row["expires_at"])}
    payload = _b64(json.dumps(claims).encode())
    return f"{payload}.{_sign(secret(store), payload)}"


def claimed(store: Path, text: str) -> Actor:
    """The rater identity a link's signed claims name, its signature checked but not its row: what a write
    acts as, and `permissions.current` reads the row (revoked, expired, unknown) again at that write."""
    payload, dot, signature = (text or "").strip().partition(".")
    if not dot or not hmac.compare_digest(_sign(secret(store), payload), signature):
        raise LinkRefused("This link is not valid: it was changed or cut short. Ask whoever sent it for a new one.")
    try:
        claims = json.loads(_unb64(payload))
        link_id, person, obj, expiry = claims["i"], claims["p"], claims["o"], int(claims["x"])
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise LinkRefused("This link is not valid. Ask whoever sent it for a new one.") from None
    return Actor(person, "rater", "link", scope=obj, link_id=link_id, expiry=expiry)


def refusal(con: duckdb.DuckDBPyConnection, holder: Actor) -> str | None:
    """Why the link a holder's claims name opens nothing now (its row unknown or not the one signed, withdrawn,
    expired), in plain words; None while it is live. Read at opening and again at every write."""
    row = store_links.one(con, holder.link_id or "")
    signed = (row["person"], row["object"], stamp(row["expires_at"])) if row else None
    if signed != (holder.id, holder.scope, holder.expiry):
        return "This link is not known to this lab. Ask whoever sent it for a new one."
    if row["revoked_at"] is not None:
        return f"This link was withdrawn on {row['revoked_at']:%Y-%m-%d}. Ask whoever sent it."
    if store_links.now() >= row["expires_at"]:
        return f"This link expired on {row['expires_at']:%Y-%m-%d %H:%M} UTC. Ask whoever sent it."
    return None


def opened(con: duckdb.DuckDBPyConnection, store: Path, text: str) -> Actor:
    """The rater identity a link gives; LinkRefused saying why when it gives none."""
    found = claimed(store, text)
    why = refusal(con, found)
    if why:
        raise LinkRefused(why)
    return found


def listing(con: duckdb.DuckDBPyConnection, obj: str | None = None) -> pd.DataFrame:
    """Every link (of one object), newest first, with its state: live, expired or revoked."""
    found = store_links.listing(con, obj)
    found["state"] = [
        "revoked" if pd.notna(revoked) else ("expired" if expires <= store_links.now() else "live")
        for revoked, expires in zip(found["revoked_at"], found["expires_at"])
    ]
    return found


def row_of(con: duckdb.DuckDBPyConnection, link_id: str) -> dict | None:
    """A link's row (store.links.COLUMNS: a general link's cap among them), or None."""
    return store_links.one(con, link_id)


def revoke(con: duckdb.DuckDBPyConnection, link_id: str, by: str) -> bool:
    return store_links.revoke(con, link_id, by)
