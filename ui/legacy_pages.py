"""The one place the lab touches Streamlit's private API: turning off the legacy `pages/` folder mode.

Streamlit treats an app with a `pages/` folder beside its main script as a folder-based (v1) multipage
app until the main script calls `st.navigation` once. Until then a deep link (e.g. `/rate`) on a freshly
started server runs the page file without app.py, and AppTest, which resets the mode before every run,
runs `switch_page`'s file alone. The folder name is fixed by the product's layout, and Streamlit offers no
public setting for this: it decides from `PagesManager.uses_pages_directory`, set when a session's
`PagesManager` is made (streamlit/streamlit#10276; the deep-link symptom is streamlit/streamlit#8860 and
#9624; Streamlit itself now advises naming the folder `app_pages/`). So this module sets that flag, and
`tests/test_architecture.py` fails when Streamlit is not the version it was written for or the flag is gone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import streamlit
from streamlit.runtime.pages_manager import PagesManager

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


def still_applies() -> list[str]:
    """What no longer holds of what this module relies on ([] when everything does)."""
    problems = []
    if streamlit.__version__ != WRITTEN_FOR:
        problems.append(
            f"streamlit is {streamlit.__version__}, this was written for {WRITTEN_FOR}: check the legacy "
            "pages/ mode again (ui/legacy_pages.py) and update WRITTEN_FOR"
        )
    if not hasattr(PagesManager, "uses_pages_directory"):
        problems.append("PagesManager.uses_pages_directory is gone: Streamlit changed how it picks the legacy mode")
    return problems
