"""`streamlit run`, with app.py's st.navigation in charge of routing from the very first request
(`ui.legacy_pages`). Usage: `python -m ui.serve run app.py [streamlit options]`."""

import sys

from streamlit.web import cli

from ui import legacy_pages

if __name__ == "__main__":
    legacy_pages.off_for_the_server()
    sys.exit(cli.main(prog_name="streamlit"))
