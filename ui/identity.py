"""Who is using this session (issue 44). On a laptop (PLAB_MODE unset) nobody signs in: the local user is the
one owner. On a lab server (PLAB_MODE=server) every page needs sign-in through Streamlit's OpenID Connect
support (`st.login`, `[auth]` in .streamlit/secrets.toml), and the role comes from the roles file beside the
store; a signed link (`?link=`) opens its one rating task, blinded, to a person without an account.

`gate()` runs before any page (app.py): it draws the sign-in, no-role or refused-link page and stops, or
returns the acting identity, which pages read with `actor()` and pass to every write. The writes check the
role again in the backend (`backend.identity.permissions`), so what a page hides here is a convenience only.
"""

from __future__ import annotations

from contextvars import ContextVar

import streamlit as st

from backend.config import settings
from backend.identity import links, permissions, roles
from backend.identity.actor import Actor, local, require_sign_in
from ui import urls
from ui.resources import store, store_ref
from ui.text import plain

_ACTOR: ContextVar[Actor | None] = ContextVar("actor", default=None)  # this script run's, in its thread
LINK = urls.LINK


def actor() -> Actor:
    """The acting identity of this script run (the local owner outside app.py, e.g. in a page's AppTest)."""
    return _ACTOR.get() or local()


def may(action: str) -> bool:
    """Whether this session's role allows the action (pages hide what it does not; the backend refuses it)."""
    return permissions.may(actor(), action)


def gate() -> Actor:
    """The acting identity of this script run, set for `actor()`; or a page saying why there is none, and stop."""
    found = _link_holder() or _signed_in()
    _ACTOR.set(found)
    return found


def _link_holder() -> Actor | None:
    token = st.query_params.get(LINK) or st.session_state.get("_link_token")
    if not token:
        return None
    try:
        with store() as con:
            found = links.opened(con, store_ref(), token)
    except (links.LinkRefused, FileNotFoundError) as exc:
        st.session_state.pop("_link_token", None)
        st.title("Presupposition Lab")
        st.error(plain(str(exc) if isinstance(exc, links.LinkRefused) else "This lab has no store yet."))
        urls.stop()
    st.session_state["_link_token"] = token  # kept if a rerun drops the URL parameter; checked again every run
    return found


def auth_configured() -> bool:
    try:
        return "auth" in st.secrets
    except FileNotFoundError:  # no secrets file at all
        return False


def _signed_in() -> Actor:
    if settings().mode != "server":
        return local()
    require_sign_in()  # from now on, a write that names nobody is refused in this process
    if not auth_configured():
        st.title("Presupposition Lab")
        st.error(
            "This lab runs as a server (PLAB_MODE=server) but sign-in is not configured: add an [auth] section "
            "to .streamlit/secrets.toml (README: *On a lab server*)."
        )
        urls.stop()
    if not st.user.get("is_logged_in", False):
        st.title("Presupposition Lab")
        st.info("Sign in to use this lab.", icon=":material/login:")
        st.button("Sign in", on_click=st.login, type="primary")
        urls.stop()
    email = str(st.user.get("email") or "").strip().lower()
    try:
        role = roles.role_of(roles.read(roles.path(settings().store_path)), email)
    except roles.RolesError as exc:
        st.error(plain(str(exc)))
        urls.stop()
    if role is None:
        st.title("Presupposition Lab")
        st.warning(
            f"You are signed in as {plain(email or 'an account without an e-mail')}, but you have no role in "
            "this lab. Ask a lab owner to give you one (`python -m backend users add`).",
            icon=":material/person_off:",
        )
        st.button("Sign out", on_click=st.logout)
        urls.stop()
    return Actor(email, role, "sign-in")


def sidebar(who: Actor) -> None:
    """Who is signed in, their role, and sign-out (nothing on a laptop)."""
    if who.via == "sign-in":
        st.sidebar.caption(f"Signed in as **{plain(who.id)}** · {plain(who.role)}")
        st.sidebar.button("Sign out", on_click=st.logout, icon=":material/logout:")
