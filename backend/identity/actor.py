"""The acting identity: who writes, in which role, and through what (the local user on a laptop, a signed-in
account on a lab server, a signed link's holder, or a terminal command, which is the owner's tool).

A dashboard run as a lab server calls `require_sign_in()` once: from then on a write that names no actor is
refused in that process instead of being taken as the local owner's."""

from __future__ import annotations

import getpass
import json
import os
from dataclasses import dataclass

from backend.store.ids import MAX_RATER_ID, RATER_ID  # noqa: F401 — who may be named as a rater

ROLES = ("owner", "analyst", "viewer", "rater")  # the permission table in README.md, most rights first
NO_ROLE = "none"  # signed in, but the roles file gives them no role (any more): every action is refused
VIA = ("local", "terminal", "sign-in", "link")

STARTED_BY = "PLAB_STARTED_BY"  # a job's process: who started it (JSON id, role, via), checked before each chunk
_SIGN_IN_REQUIRED = False
_TERMINAL = False


@dataclass(frozen=True)
class Actor:
    """`id`: an e-mail (signed in), the person a link names, or the local user's name. `scope`: for a link
    holder, the one object the link opens (e.g. 'rating-task:T'); None for everyone else. The role is the one
    read when the actor was made: every write reads it (or the link's row) again (`permissions.current`)."""

    id: str
    role: str
    via: str
    scope: str | None = None
    link_id: str | None = None
    expiry: int | None = None  # a link's signed expiry (Unix seconds), compared with its row at every write

    def __post_init__(self):
        if self.role not in (*ROLES, NO_ROLE):
            raise ValueError(f"role {self.role!r}; expected one of {', '.join(ROLES)} (or {NO_ROLE})")
        if self.via not in VIA:
            raise ValueError(f"via {self.via!r}; expected one of {', '.join(VIA)}")

    @property
    def signed_in(self) -> bool:
        """Whether the identity was proven (sign-in or a signed link), so the rater id must be this id."""
        return self.via in ("sign-in", "link")

    @property
    def blinded(self) -> bool:
        """Raters see only the items they rate: no gold, no model scores, no one else's ratings."""
        return self.role == "rater"


class NotSignedIn(PermissionError):
    """A write with no acting identity in a process that requires sign-in."""


def user_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (some containers)
        return "local"


def local() -> Actor:
    """The one implicit owner of a laptop's dashboard (no sign-in)."""
    return Actor(user_name(), "owner", "local")


def terminal() -> Actor:
    """Whoever runs `python -m backend` on the machine: the owner's tool, also on a server."""
    return Actor(user_name(), "owner", "terminal")


def use_terminal() -> None:
    """This process is a terminal command (`python -m backend`): a write that names no actor is the terminal's."""
    global _TERMINAL
    _TERMINAL = True


def starter_env(actor: Actor) -> dict[str, str]:
    """What a job's process is told of who started it (its writes are theirs, within their role at each chunk)."""
    return {STARTED_BY: json.dumps({"id": actor.id, "role": actor.role, "via": actor.via})}


def started_by() -> Actor | None:
    """Who started this process's job from the dashboard (None: a terminal command, the owner's own)."""
    given = os.environ.get(STARTED_BY)
    if not given:
        return None
    found = json.loads(given)
    return Actor(found["id"], found["role"], found["via"])


def require_sign_in() -> None:
    """Server mode for this process: a write that names no actor is refused from now on."""
    global _SIGN_IN_REQUIRED
    _SIGN_IN_REQUIRED = True


def sign_in_required() -> bool:
    return _SIGN_IN_REQUIRED


def who(actor: Actor | None) -> Actor:
    """The actor a write is made by: the one given; with none, the local owner — unless this process requires
    sign-in, where NotSignedIn is raised before anything is written."""
    if actor is not None:
        return actor
    if _SIGN_IN_REQUIRED:
        raise NotSignedIn("this lab server requires sign-in, and no signed-in identity was given for this write")
    return terminal() if _TERMINAL else local()
