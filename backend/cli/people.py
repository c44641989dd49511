"""The people commands of `python -m backend` (issue 44), the owner's tools on a lab server:

    python -m backend users add ada@lab.example owner      # or '*@lab.example' viewer: everyone of a domain
    python -m backend users remove ada@lab.example
    python -m backend users list
    python -m backend links create --task TASK --person student-1 --days 14 --base-url https://lab.example
    python -m backend links list [--task TASK]
    python -m backend links revoke LINK_ID
    python -m backend audit [--limit 50] [--actor WHO] [--outcome refused]

A command runs as the terminal's user with the owner role; each change is written to the audit.
"""

from __future__ import annotations

import argparse
import sys

from backend.actions import audit as audit_actions
from backend.actions import people
from backend.identity import links, roles
from backend.identity.actor import ROLES, terminal
from backend.store.access import session
from backend.store.connection import store_path
from backend.store.rating_tasks import task as rating_task


def add(sub) -> None:
    p = sub.add_parser("users", help="who has which role on a lab server (the roles file beside the store)")
    users = p.add_subparsers(dest="action", required=True)
    q = users.add_parser("add", help="give an e-mail (or *@domain) a role")
    q.add_argument("who", help="an e-mail, or *@domain for everyone of a domain")
    q.add_argument("role", choices=ROLES)
    q = users.add_parser("remove", help="take an e-mail's (or pattern's) role away")
    q.add_argument("who")
    users.add_parser("list", help="every entry of the roles file")
    p.set_defaults(func=cmd_users)
    p = sub.add_parser("links", help="signed links for people without accounts (a rating task each)")
    made = p.add_subparsers(dest="action", required=True)
    q = made.add_parser("create", help="a link that opens one rating task, blinded, for one person")
    q.add_argument("--task", required=True, help="the rating task (python -m backend rating-task makes one)")
    q.add_argument("--person", required=True, nargs="+", help="who it is for: their rater id (one link each)")
    q.add_argument("--days", type=float, default=14, help="how long it works (default 14)")
    q.add_argument("--base-url", default="http://localhost:8501", help="the dashboard's address, as people reach it")
    q = made.add_parser("list", help="the links, newest first, with their state")
    q.add_argument("--task", help="only this rating task's")
    q = made.add_parser("revoke", help="end a link now")
    q.add_argument("link_id")
    p.set_defaults(func=cmd_links)
    p = sub.add_parser("audit", help="who did what, when, to which object (newest first; refusals too)")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--actor", help="only this person's entries")
    p.add_argument("--outcome", choices=["done", "refused", "failed"])
    p.set_defaults(func=cmd_audit)


def cmd_users(args: argparse.Namespace) -> int:
    where = roles.path(store_path(args.store))
    try:
        if args.action == "list":
            found = roles.read(where)
            print("\n".join(f"{who:40} {role}" for who, role in found.items()) or f"no roles in {where}")
            return 0
        if not store_path(args.store).exists():  # set up roles before the first ingest: nothing to audit into yet
            _change_roles(None, where, args)
        else:
            with session(args.store) as con:
                _change_roles(con, where, args)
    except roles.RolesError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{args.who}: {args.role if args.action == 'add' else 'removed'} (in {where})")
    return 0


def _change_roles(con, where, args: argparse.Namespace) -> None:
    if args.action == "add":
        people.add_role(con, where, args.who, args.role, actor=terminal())
    else:
        people.remove_role(con, where, args.who, actor=terminal())


def cmd_links(args: argparse.Namespace) -> int:
    with session(args.store) as con:
        return {"list": _list_links, "revoke": _revoke_link, "create": _create_links}[args.action](con, args)


def _list_links(con, args: argparse.Namespace) -> int:
    found = links.listing(con, f"rating-task:{args.task}" if args.task else None)
    if found.empty:
        print("no links")
    for row in found.itertuples():
        until = f"{row.expires_at:%Y-%m-%d %H:%M}"
        print(f"{row.link_id}  {row.state:8} {row.person:24} {row.object}  until {until} UTC")
    return 0


def _revoke_link(con, args: argparse.Namespace) -> int:
    try:
        people.revoke_link(con, args.link_id, actor=terminal())
    except LookupError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 1
    print(f"revoked {args.link_id}")
    return 0


def _create_links(con, args: argparse.Namespace) -> int:
    target = f"rating-task:{args.task}"
    if rating_task(con, args.task) is None:
        print(f"error: no rating task {args.task!r}; make one with `python -m backend rating-task`", file=sys.stderr)
        return 1
    for person in args.person:
        try:
            made = people.make_link(con, store_path(args.store), person, target, args.days, actor=terminal())
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        until = f"{made.expires_at:%Y-%m-%d %H:%M}"
        print(f"{person}: {made.url(args.base_url)}  (until {until} UTC, id {made.link_id})")
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    with session(args.store) as con:
        found = audit_actions.entries(con, args.limit, args.actor, args.outcome, actor=terminal())
    for row in found.itertuples():
        print(
            f"{row.happened_at:%Y-%m-%d %H:%M:%S}  {row.outcome:8} {row.actor} ({row.role}, {row.via})  "
            f"{row.action} {row.target}" + (f"  — {row.detail}" if row.detail else "")
        )
    return 0
