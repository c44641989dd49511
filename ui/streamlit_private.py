"""The one place the lab touches Streamlit's private API, written for one Streamlit version: turning off the
legacy `pages/` folder mode, and reading which URL parameters are bound to this page's widgets.

The legacy mode.

Streamlit treats an app with a `pages/` folder beside its main script as a folder-based (v1) multipage
app until the main script calls `st.navigation` once. Until then a deep link (e.g. `/rate`) on a freshly
started server runs the page file without app.py, and AppTest, which resets the mode before every run,
runs `switch_page`'s file alone. The folder name is fixed by the product's layout, and Streamlit offers no
public setting for this: it decides from `PagesManager.uses_pages_directory`, set when a session's
`PagesManager` is made (streamlit/streamlit#10276; the deep-link symptom is streamlit/streamlit#8860 and
#9624; Streamlit itself now advises naming the folder `app_pages/`). So this module sets that flag, and
`tests/test_architecture.py` fails when Streamlit is not the version it was written for or the flag is gone.

The bound parameters. Streamlit leaves a widget's value out of the URL when it equals the default and keeps the
bindings (`bind="query-params"`) in a registry it offers no public accessor for; `bound_params` reads it, so a page
can offer a link with every setting spelled out (`ui.urls.spelled_out`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import streamlit
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
from streamlit.runtime.state.query_params import QueryParams
from streamlit.runtime.state.session_state_proxy import get_session_state

WRITTEN_FOR = "1.67.0"  # the streamlit version of requirements.txt these two functions were checked against


def off_for_the_server() -> None:
    """Before `streamlit run` starts: every session routes through app.py's st.navigation from its first request
    (the flag is class-level and only set when None, so this survives every session)."""
    PagesManager.uses_pages_directory = False


@contextmanager
def off_for_apptest() -> Iterator[None]:
    """While inside, AppTest runs go through app.py's st.navigation, as the server's do (AppTest makes a new
    PagesManager, which sets the flag again, before every run)."""
    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    PagesManager.__init__ = init
    try:
        yield
    finally:
        PagesManager.__init__ = original


def page() -> str:
    """The page this script run shows (its script's hash; '' outside a run)."""
    ctx = get_script_run_ctx()
    return ctx.page_script_hash if ctx is not None else ""


def bound_params() -> list[str]:
    """The URL parameters bound to a widget of the page this script run shows (or of app.py)."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return []
    with get_session_state().query_params() as params:
        bindings = dict(params._bindings_by_param)
    pages = {ctx.page_script_hash, ctx.pages_manager.main_script_hash}
    return [key for key, binding in bindings.items() if binding.script_hash in pages]


def still_applies() -> list[str]:
    """What no longer holds of what this module relies on ([] when everything does)."""
    problems = []
    if streamlit.__version__ != WRITTEN_FOR:
        problems.append(
            f"streamlit is {streamlit.__version__}, this was written for {WRITTEN_FOR}: check the legacy "
            "pages/ mode and the bound parameters again (ui/streamlit_private.py) and update WRITTEN_FOR"
        )
    if not hasattr(PagesManager, "uses_pages_directory"):
        problems.append("PagesManager.uses_pages_directory is gone: Streamlit changed how it picks the legacy mode")
    if "_bindings_by_param" not in QueryParams.__dataclass_fields__:
        problems.append("QueryParams._bindings_by_param is gone: Streamlit changed how it keeps bound parameters")
    return problems
