"""Activity: the lab's audit, for owners — every write tried through the dashboard, the terminal or a link: who,
in which role, what, to which object, and whether it was done, refused (with the role it needed) or failed."""

import streamlit as st

from backend.views import activity
from ui import export, identity, urls, widgets
from ui.resources import store

st.title("Activity")
st.caption("Every write tried, newest first: done, refused (with the role it needed) or failed. Append-only.")
left, middle, right = st.columns([2, 1, 1])
who = left.text_input("Person", key="who", bind="query-params", placeholder="an e-mail or a link holder's id")
outcome = middle.selectbox("Outcome", ["all", *activity.OUTCOMES], key="outcome", bind="query-params")
limit = right.number_input("Newest", 10, 10_000, 500, step=100, key="limit", bind="query-params")
with store() as con:  # not cached: the audit grows with every write, and only owners read it
    try:
        found = activity.entries(
            con, identity.actor(), int(limit), who.strip() or None, None if outcome == "all" else outcome
        )
    except PermissionError as exc:
        st.error(widgets.message(exc))
        urls.stop()
if found.empty:
    st.info("Nothing recorded yet.")
else:
    export.table(found, "Activity", f"the newest {len(found):,} audit entries", key="activity")
