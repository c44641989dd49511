"""`@door(action)`: the write-side twin of `store.sessions.reads`. It declares the one action a function performs
(README's permission table names it) and refuses a call that names no actor: nobody acts by default."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

from backend.identity.actor import Actor
from backend.identity.permissions import ACTIONS

F = TypeVar("F", bound=Callable)
DOORS: dict[str, list[str]] = {}  # action → the door functions that perform it (module.name)


def door(action: str) -> Callable[[F], F]:
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")

    def declare(function: F) -> F:
        @functools.wraps(function)
        def checked(*args, actor: Actor, **kwargs):
            if not isinstance(actor, Actor):
                raise TypeError(f"{function.__name__}: actor must be who acts (an Actor), got {actor!r}")
            return function(*args, actor=actor, **kwargs)

        checked.action = action
        DOORS.setdefault(action, []).append(f"{function.__module__}.{function.__name__}")
        return checked  # type: ignore[return-value]

    return declare
