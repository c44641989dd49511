"""The report's writes: pin an item, move it, rename it, remove it (an analyst their own items, an owner any)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import duckdb

from backend.actions.door import door
from backend.identity.actor import Actor
from backend.identity.permissions import acting
from backend.store import audit, report_items

KINDS = ("chart", "table")


class ReportError(ValueError):
    """A pin or a move that cannot be done; names the field."""


@door("pin to report")
def pin(
    con: duckdb.DuckDBPyConnection,
    kind: str,
    title: str,
    caption: str,
    content: str,
    page: str | None = None,
    *,
    actor: Actor,
) -> str:
    """Add an item at the end of the report; returns its id. `content`: a Vega-Lite JSON spec, or a table as
    `views.report.table_json(frame)`. Forbidden (audited) when the actor may not pin."""
    with acting(con, actor, "pin to report", title):
        if kind not in KINDS:
            raise ReportError(f"kind: expected one of {', '.join(KINDS)}, got {kind!r}")
        if not title.strip():
            raise ReportError("title: a pinned item needs a title")
        try:
            json.loads(content)
        except (TypeError, json.JSONDecodeError) as exc:
            raise ReportError(f"content: not JSON ({exc})") from None
        item_id = uuid.uuid4().hex[:12]
        when = datetime.now(UTC).replace(tzinfo=None)
        report_items.append(con, item_id, kind, title.strip(), caption, content, page, when)
        return item_id


@door("edit report")
def move(con: duckdb.DuckDBPyConnection, item_id: str, steps: int, *, actor: Actor) -> None:
    """Move an item up (negative) or down (positive) by `steps` places (an analyst their own, an owner any)."""
    with acting(con, actor, "edit report", item_id, owner=audit.made_by(con, "report item", item_id)):
        report_items.reorder(con, item_id, steps, ReportError)


@door("edit report")
def remove(con: duckdb.DuckDBPyConnection, item_id: str, *, actor: Actor) -> bool:
    """Take an item out of the report (an analyst their own, an owner any); whether there was one."""
    with acting(con, actor, "edit report", item_id, owner=audit.made_by(con, "report item", item_id)):
        return report_items.remove(con, item_id)


@door("edit report")
def rename(con: duckdb.DuckDBPyConnection, item_id: str, title: str, *, actor: Actor) -> None:
    """Give an item a new title (an analyst their own, an owner any); the title is what the exports head it with."""
    owner = audit.made_by(con, "report item", item_id)
    with acting(con, actor, "edit report", item_id, owner=owner, detail=f"title: {str(title).strip()[:200]}"):
        if not isinstance(title, str) or not title.strip():
            raise ReportError(f"title: expected a non-empty title, got {title!r}")
        if not report_items.retitle(con, item_id, title.strip()):
            raise ReportError(f"item: no report item {item_id!r}")
