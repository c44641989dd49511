"""The roles file: who has which role on a lab server, kept beside the store as `<store>.roles.toml`:

    [roles]
    "ada@lab.example" = "owner"
    "*@lab.example" = "viewer"      # everyone of a domain

An exact e-mail wins over a `*@domain` pattern; e-mails compare case-blind. `python -m backend users
add|remove|list` edits it (the owner's tool on the server). No passwords: sign-in is the OpenID Connect provider's.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

import tomli_w

from backend.identity.actor import ROLES

EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
PATTERN = re.compile(r"\*@[^@\s*]+\.[^@\s*]+")


class RolesError(ValueError):
    """A roles file or an entry that cannot be used; the message names the file, the entry and what was expected."""


def path(store: Path) -> Path:
    """The roles file of a store: beside it, named after it."""
    return Path(store).with_suffix(".roles.toml")


def read(where: Path) -> dict[str, str]:
    """who → role; {} when there is no file. RolesError naming the file and entry when it is not usable."""
    try:
        text = Path(where).read_text()
    except FileNotFoundError:
        return {}
    try:
        found = tomllib.loads(text).get("roles", {})
    except tomllib.TOMLDecodeError as exc:
        raise RolesError(f'{where}: not TOML ({exc}); expected a [roles] table of "e-mail" = "role"') from None
    if not isinstance(found, dict):
        raise RolesError(f'{where}: [roles] is not a table; expected "e-mail" = "role" lines')
    return {checked_who(who, where): checked_role(role, f"{where}: {who}") for who, role in found.items()}


def checked_who(who: str, where: object = "user") -> str:
    who = str(who).strip().lower()
    if not (EMAIL.fullmatch(who) or PATTERN.fullmatch(who)):
        raise RolesError(f"{where}: {who!r} is not an e-mail or a *@domain pattern (e.g. ada@lab.org, *@lab.org)")
    return who


def checked_role(role: object, where: object = "role") -> str:
    if role not in ROLES:
        raise RolesError(f"{where}: role {role!r}; expected one of {', '.join(ROLES)}")
    return str(role)


def role_of(roles: dict[str, str], email: str | None) -> str | None:
    """The person's role: their e-mail's entry, else their domain's pattern, else None (no role)."""
    if not email:
        return None
    email = email.strip().lower()
    if email in roles:
        return roles[email]
    return roles.get("*@" + email.rpartition("@")[2])


def write(where: Path, roles: dict[str, str]) -> None:
    """Replace the file atomically (a reader never sees half of it), readable by its owner only."""
    where = Path(where)
    where.parent.mkdir(parents=True, exist_ok=True)
    temporary = where.with_name(where.name + ".tmp")
    body = "# Who may do what in Presupposition Lab: python -m backend users add|remove|list\n"
    temporary.write_text(body + tomli_w.dumps({"roles": dict(sorted(roles.items()))}))
    os.chmod(temporary, 0o600)
    temporary.replace(where)


def add(where: Path, who: str, role: str) -> dict[str, str]:
    roles = read(where)
    roles[checked_who(who)] = checked_role(role)
    write(where, roles)
    return roles


def remove(where: Path, who: str) -> bool:
    roles = read(where)
    found = roles.pop(str(who).strip().lower(), None)
    if found is not None:
        write(where, roles)
    return found is not None
