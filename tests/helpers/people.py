"""People with roles on a test store: a signed-in person's role is read from the store's roles file at every write
(`permissions.current`), so a test that acts as one writes their role there first, as `users add` would."""

from __future__ import annotations

from pathlib import Path

from backend.identity import roles
from backend.identity.actor import Actor, local


def give_roles(store: Path, *people: Actor) -> None:
    """Each signed-in person's role in the roles file beside `store`."""
    for person in people:
        roles.add(roles.path(store), person.id, person.role)


LOCAL = local()  # the one owner of a laptop's lab (no sign-in), named explicitly: no write has a default actor
