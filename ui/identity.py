"""Who is using this session (issue 44). On a laptop (PLAB_MODE unset) nobody signs in: the local user is the
one owner. On a lab server (PLAB_MODE=server) every page needs sign-in through Streamlit's OpenID Connect
support (`st.login`, `[auth]` in .streamlit/secrets.toml), and the role comes from the roles file beside the
store; a signed link (`?link=`) opens its one rating task, blinded, to a person without an account.

`gate()` runs before any page (app.py): it draws the sign-in, no-role or refused-link page and stops, or
returns the acting identity, which pages read with `actor()` and pass to every write. The writes check the
role again in the backend (`backend.identity.permissions`), so what a page hides here is a convenience only.
"""

from __future__ import annotations

import streamlit as st

from backend.config import settings
from backend.identity import links, permissions, roles
from backend.identity.actor import NO_ROLE, Actor, NotSignedIn, local, require_sign_in
from ui import urls
from ui.resources import store, store_ref
from ui.text import plain

LINK = urls.LINK
TOKEN = "_link_token"  # session state: a link's token, kept if a rerun drops the URL parameter


def actor() -> Actor:
    """Who acts in this session, resolved now from the session itself, for every call: a page script, and a
    widget callback too (Streamlit runs callbacks before app.py, so nothing app.py set may be relied on there).
    A link holder: the link token kept in session state, its signature checked (the backend reads its row again
    at the write); on a lab server: the signed-in account with its role read from the roles file now; on a
    laptop: the local owner. On a server nobody else: NotSignedIn, never a default identity."""
    token = st.query_params.get(LINK) or st.session_state.get(TOKEN)
    if token:
        try:
            return links.claimed(store_ref(), token)
        except links.LinkRefused as exc:
            raise NotSignedIn(str(exc)) from None
    if settings().mode != "server":
        return local()
    require_sign_in()  # from now on, a write that names nobody is refused in this process
    if not auth_configured() or not st.user.get("is_logged_in", False):
        raise NotSignedIn("this lab server requires sign-in, and this session is not signed in")
    email = str(st.user.get("email") or "").strip().lower()
    try:
        role = roles.role_of(roles.read(roles.path(settings().store_path)), email)
    except roles.RolesError:
        role = None  # the backend refuses every write with the file's error; gate() shows it
    return Actor(email, role or NO_ROLE, "sign-in")  # no role: every write is refused, and audited


def may(action: str) -> bool:
    """Whether this session's role allows the action (pages hide what it does not; the backend refuses it)."""
    return permissions.may(actor(), action)


def gate() -> Actor:
    """The acting identity of this script run; or a page saying why there is none, and stop."""
    found = _link_holder()
    if found is not None:
        return found
    if settings().mode == "server" and not auth_configured():
        require_sign_in()
        st.title("Presupposition Lab")
        st.error(
            "This lab runs as a server (PLAB_MODE=server) but sign-in is not configured: add an [auth] section "
            "to .streamlit/secrets.toml (README: *On a lab server*)."
        )
        urls.stop()
    try:
        found = actor()
    except NotSignedIn:
        st.title("Presupposition Lab")
        st.info("Sign in to use this lab.", icon=":material/login:")
        st.html(_REMEMBER, unsafe_allow_javascript=True)
        st.button("Sign in", on_click=st.login, type="primary")
        urls.stop()
    if found.role == NO_ROLE:
        _no_role(found.id)
    if found.via == "sign-in" and not st.session_state.get(_RETURNED):
        st.session_state[_RETURNED] = True  # once per session: the first page after the provider sent it back
        st.html(_RETURN, unsafe_allow_javascript=True)
    return found


# Sign-in comes back to the lab's root in a new session (Streamlit's st.login), whatever page the person asked for:
# the sign-in page keeps the asked-for address in the tab's sessionStorage (it outlives the provider's round trip in
# that tab), and the first page after sign-in goes there once, only if it is a path of this lab (same origin, a
# plain path: "//elsewhere", "https://elsewhere" or "javascript:" resolve to another origin and are dropped), so a
# link cannot make the lab send anyone elsewhere. The scripts are constants: nothing in them comes from a request.
_AFTER_SIGN_IN = "plab-after-sign-in"
_RETURNED = "_returned_after_sign_in"  # session state
_REMEMBER = f"""<script>
const here = window.location.pathname + window.location.search;
if (here !== "/") sessionStorage.setItem("{_AFTER_SIGN_IN}", here);
</script>"""
_RETURN = rf"""<script>
const asked = sessionStorage.getItem("{_AFTER_SIGN_IN}");
sessionStorage.removeItem("{_AFTER_SIGN_IN}");
if (asked) {{
  const target = new URL(asked, window.location.origin);
  const here = window.location.pathname + window.location.search;
  const path = target.pathname + target.search;
  if (target.origin === window.location.origin && /^\/[A-Za-z0-9_\-\/]*$/.test(target.pathname) && path !== here) {{
    window.location.replace(path);
  }}
}}
</script>"""


def _no_role(email: str) -> None:
    st.title("Presupposition Lab")
    try:
        roles.read(roles.path(settings().store_path))
    except roles.RolesError as exc:
        st.error(plain(str(exc)))
        urls.stop()
    st.warning(
        f"You are signed in as {plain(email or 'an account without an e-mail')}, but you have no role in "
        "this lab. Ask a lab owner to give you one (`python -m backend users add`).",
        icon=":material/person_off:",
    )
    st.button("Sign out", on_click=st.logout)
    urls.stop()


def _link_holder() -> Actor | None:
    """A link's holder, its link checked in full (signature and row); a refused link's page, and its audit row."""
    token = st.query_params.get(LINK) or st.session_state.get(TOKEN)
    if not token:
        return None
    try:
        with store() as con:
            try:
                found = links.opened(con, store_ref(), token)
            except links.LinkRefused as exc:
                permissions.refused_link(con, store_ref(), token, str(exc))
                raise
    except (links.LinkRefused, FileNotFoundError) as exc:
        st.session_state.pop(TOKEN, None)
        st.title("Presupposition Lab")
        st.error(plain(str(exc) if isinstance(exc, links.LinkRefused) else "This lab has no store yet."))
        urls.stop()
    st.session_state[TOKEN] = token  # checked again every run, and its row again at every write
    return found


def auth_configured() -> bool:
    try:
        return "auth" in st.secrets
    except FileNotFoundError:  # no secrets file at all
        return False


def sidebar(who: Actor) -> None:
    """Who is signed in, their role, and sign-out (nothing on a laptop)."""
    if who.via == "sign-in":
        st.sidebar.caption(f"Signed in as **{plain(who.id)}** · {plain(who.role)}")
        st.sidebar.button("Sign out", on_click=st.logout, icon=":material/logout:")
