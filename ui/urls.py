"""Links that mean one thing: a URL parameter whose value a page cannot use is reported, never dropped
silently (Streamlit falls back to the widget's default and removes the parameter from the URL).

Every bound widget's URL value is its option itself (a run id, a dataset id, a label), never a display
label that changes (counts, titles), so a link keeps opening what it opened when it was shared.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from urllib.parse import quote, urlencode

import streamlit as st
from streamlit.errors import StreamlitAPIException

from backend.views.common import JOINER
from ui import streamlit_private
from ui.text import plain

TRUE, FALSE = {"true", "yes", "1"}, {"false", "no", "0"}
LINK = "link"  # the URL parameter of a rater's signed link (ui.identity)
HELD = "_link_held"  # session state: per page and bound widget, the values it held at the end of its last runs
HELD_MAX = 2  # values remembered per widget: the last run's (and the one before, for two quick clicks)
# A `+` typed or pasted into the address bar is a plus to the person (an id such as `a+b`), but Streamlit reads it as a
# space, as HTML forms do and as it writes a space itself. When a value with a space is not one of the choices, the
# browser reads the address the page was loaded from (its navigation entry: Streamlit has rewritten the address bar
# since) and, if it had a `+` there, opens the page again with its `+` spelled `%2B`: once, as then
# there is no `+` left to read; a value still unknown is named as usual. Only in the first minute after the load:
# later the navigation entry may be an address the app has since moved away from. Free text (Explore's search, `q`)
# keeps a `+` as a space, as Streamlit writes it.
_AS_TYPED = """<script>
const asked = new URL(performance.getEntriesByType('navigation')[0]?.name || location.href);
const [path, search] = [asked.pathname, asked.search];
const fresh = performance.now() < 60000;  // the page as loaded, not one navigated back to within the app later
if (fresh && path === location.pathname && search.includes('+')) {
  const parts = search.replace(/^\\?/, '').split('&');
  const text = (part) => ['q'].includes(decodeURIComponent(part.split('=')[0]));
  const again = parts.map((part) => (text(part) ? part : part.replace(/\\+/g, '%2B')));
  if (again.join('&') !== parts.join('&')) location.replace(path + '?' + again.join('&'));
}
</script>"""


def _same(text: str, value) -> bool:
    if isinstance(value, bool):
        return text.lower() in (TRUE if value else FALSE)
    if isinstance(value, (int, float)):
        try:
            return float(text) == float(value)
        except ValueError:
            return False
    return text == str(value)


def matches(sent: list[str], value) -> bool:
    """Whether the widget's value is what the URL asked for (a list for multi-value widgets)."""
    if value is None or (isinstance(value, (list, tuple)) and not value):
        return all(text == "" for text in sent)  # `key=` is the empty choice (e.g. `split=`: every split, pooled)
    if isinstance(value, (list, tuple)):
        return len(sent) == len(value) and all(any(_same(text, v) for v in value) for text in sent)
    return _same(sent[-1], value)


class _Notices:
    """One script run's notices: the link's values a widget could not take, drawn once above the page."""

    def __init__(self) -> None:
        _without_joiners()
        self.sent = {key: st.query_params.get_all(key) for key in st.query_params}
        self.container = st.container()
        self.shown = False

    def show(self) -> None:
        if self.shown:
            return
        self.shown = True
        held = st.session_state.get(HELD, {})
        page = streamlit_private.page()
        ignored = [
            (key, values)
            for key, values in self.sent.items()
            if key in st.session_state
            and not matches(values, st.session_state[key])
            and not any(matches(values, before) for before in held.get(f"{page}|{key}", ()))  # the page moved on
        ]
        if any(" " in value for _, values in ignored for value in values):
            read_as_plus()
        for key, values in ignored:
            shown = st.session_state[key]
            self.container.warning(
                f"This link's **{plain(key)}** = {plain(', '.join(values))[:300]} is not one of the choices "
                f"here (it may have been removed or renamed); showing {plain(_text(shown))[:300]} instead.",
                icon=":material/link_off:",
            )


def read_as_plus() -> None:
    """When a page cannot use a URL value read with a space: if the address as typed had a `+` in it, the browser
    opens the page again with it spelled `%2B`, read as a plus (see _AS_TYPED)."""
    st.html(_AS_TYPED, unsafe_allow_javascript=True)


def page_url(page: str, /, **params) -> str:
    """A relative link to a page with its URL parameters (a list: the parameter repeated), for link columns and
    Markdown links; a space is `%20` and a plus `%2B`, so no value depends on how a `+` is read.

    >>> page_url("explore", dataset="nope", split=["main", "adv"], run_a="a+b c")
    'explore?dataset=nope&split=main&split=adv&run_a=a%2Bb%20c'
    """
    return f"{page}?{_encoded(params)}"


def _encoded(params: dict) -> str:
    return urlencode(params, doseq=True, quote_via=quote, safe="/@")


def _url_text(value) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def spelled_out() -> dict[str, list[str]]:
    """Every URL parameter bound to a widget of this page, with the widget's value, defaults included: Streamlit
    leaves a value equal to its default out of the address bar, so that address changes meaning when a default
    changes; this one does not. An empty choice is spelled `key=` (e.g. `split=`: every split)."""
    found = {}
    for key in streamlit_private.bound_params():
        value = st.session_state.get(key)
        if isinstance(value, (list, tuple)):
            found[key] = [_url_text(v) for v in value] or [""]
        elif value is not None:
            found[key] = [_url_text(value)]
    return found


def _remember() -> None:
    """Note each bound widget's value at the end of the run: the address bar still holds a value the page itself moved
    on from (*Save and next* sets the next item in a callback) during the run that follows; that is no dead link."""
    held, page = st.session_state.get(HELD, {}), streamlit_private.page()
    for key in streamlit_private.bound_params():
        if key in st.session_state:
            value = st.session_state[key]
            value = list(value) if isinstance(value, (list, tuple)) else value
            seen = held.setdefault(f"{page}|{key}", [])
            if value not in seen:
                seen[:] = [*seen, value][-HELD_MAX:]
    st.session_state[HELD] = held


def _without_joiners() -> None:
    """A link pasted together with an id copied from a page may carry the Markdown rule's invisible word joiner
    (backend.store.ids): it is removed before any widget reads its value."""
    for key in list(st.query_params):
        values = st.query_params.get_all(key)
        if any(JOINER in value for value in values):
            try:
                st.query_params[key] = [value.replace(JOINER, "") for value in values]
            except StreamlitAPIException:  # bound to a widget since an earlier run: its value was read then
                continue


_RUN: ContextVar[_Notices | None] = ContextVar("link_notices", default=None)  # the script run's, in its thread


@contextmanager
def reported() -> Iterator[None]:
    """Run a page; then, above it, name each URL parameter a widget could not take (unknown run,
    dataset, label, out-of-range number) and what is shown instead. A page that stops early stops through
    `stop()`, which names them first: once `st.stop()` is called, nothing more can be drawn."""
    notices = _Notices()
    token = _RUN.set(notices)
    try:
        yield
    finally:
        _RUN.reset(token)
        notices.show()
        _remember()
        every = spelled_out()
        if every and LINK not in st.query_params and "_link_token" not in st.session_state:  # a link: one page
            st.sidebar.link_button(  # a URL, not Markdown: the page's values stay out of anything rendered
                "Link to this view",
                page_url("", **every),
                icon=":material/link:",
                help="Every setting spelled out, defaults too, so the link keeps its meaning when a default changes "
                "(the address bar leaves out values equal to their defaults).",
            )


def stop() -> None:
    """`st.stop()` for pages: the link's unusable values are named first (the widgets drawn so far)."""
    notices = _RUN.get()
    if notices is not None:
        notices.show()
    st.stop()


def _text(value) -> str:
    if value is None or value == []:
        return "nothing chosen"
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
