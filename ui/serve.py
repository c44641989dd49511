"""`streamlit run`, with app.py's st.navigation in charge of routing from the very first request.

Streamlit treats an app with a `pages/` folder as a legacy multipage app until the main script
calls st.navigation once; until then a deep link (e.g. /rate) on a freshly started server runs the
page file without app.py, and the sidebar lists file names. Marking the legacy mode off before the
server starts removes that window. Usage: `python -m ui.serve run app.py [streamlit options]`.
"""

import sys

from streamlit.runtime.pages_manager import PagesManager
from streamlit.web import cli

if __name__ == "__main__":
    PagesManager.uses_pages_directory = False  # set only when None, so this survives every session
    sys.exit(cli.main(prog_name="streamlit"))
