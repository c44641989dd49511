"""Asking a model live (the Playground): who asks is checked before any model runs, and the answer is stored with
its audit row; an endpoint's spending is charged to them."""

from __future__ import annotations

from collections.abc import Callable

from backend.actions.door import door
from backend.execution import live
from backend.identity.actor import Actor
from backend.identity.permissions import acting, check
from backend.store.access import StoreRef, opener
from backend.store.writer import AUTHOR


@door("ask")
def ask(
    store: StoreRef,
    query: live.Query,
    retrievers: dict | None = None,
    save: bool = True,
    waiting: Callable[[int], None] | None = None,
    on_text: Callable[[str], None] | None = None,
    *,
    actor: Actor,
) -> live.Answer:
    """`live.ask` as `actor`: Forbidden (audited) before any model runs when their role may not ask."""
    query.validate()
    with opener(store)() as con:
        by = check(con, actor, "ask", query.model)
    asking = AUTHOR.set(by.id)  # an endpoint's spending is charged to whoever asks (store.writer.author)
    try:
        return live.ask(
            store, query, retrievers, save, waiting, on_text, act=lambda con: acting(con, by, "ask", query.model)
        )
    finally:
        AUTHOR.reset(asking)
