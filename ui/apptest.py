"""Streamlit's AppTest the way the server runs this app: through app.py.

AppTest resets Streamlit's multipage mode before every run and, because a `pages/` folder sits beside
app.py, picks the old folder-based mode: `switch_page` then runs the page file alone, without
app.py's `page_session` (one store open per rerun), page config or link checks. The server runs
app.py's `st.navigation` on every rerun, a deep link included. `served()` makes AppTest do the same.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from streamlit.testing.v1 import AppTest

from ui import streamlit_private

ROOT = Path(__file__).resolve().parent.parent


served = streamlit_private.off_for_apptest  # AppTest runs go through app.py, as the server's do


def render(
    page: str, params: dict | None = None, at: AppTest | None = None, timeout: float = 300
) -> tuple[float, AppTest]:
    """Render `page` (e.g. "pages/overview.py") through app.py: (the seconds the server's script thread
    spent on the rerun, as app.py's page_session logs them, the AppTest to render it again).
    Without `at`, a new AppTest is made (Streamlit scans installed component packages then: not timed)."""
    if at is None:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
        at.query_params.update(params or {})
    with tempfile.TemporaryDirectory() as folder, served():
        log = Path(folder) / "reruns.log"
        previous = os.environ.get("PLAB_RERUN_LOG")
        os.environ["PLAB_RERUN_LOG"] = str(log)
        try:
            at.switch_page(page).run()
        finally:
            if previous is None:
                os.environ.pop("PLAB_RERUN_LOG")
            else:
                os.environ["PLAB_RERUN_LOG"] = previous
        if at.exception:
            raise RuntimeError(f"{page}: {at.exception[0].value}")
        return float(log.read_text().splitlines()[-1].split("\t")[1]), at
