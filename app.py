"""Presupposition Lab: the entrypoint. Page config, who is acting (sign-in on a lab server, a signed link), then
st.navigation over the pages their role may open."""

import streamlit as st

from ui import identity
from ui.resources import page_session
from ui.urls import reported

PAGES = [
    st.Page("pages/overview.py", title="Overview", icon=":material/dataset:", default=True),
    st.Page("pages/explore.py", title="Explore", icon=":material/filter_alt:"),
    st.Page("pages/slices.py", title="Slice finder", icon=":material/troubleshoot:"),
    st.Page("pages/map.py", title="Map", icon=":material/scatter_plot:"),
    st.Page("pages/example.py", title="Example", icon=":material/article:"),
    st.Page("pages/pairs.py", title="Minimal pairs", icon=":material/compare_arrows:"),
    st.Page("pages/outputs.py", title="Side by side", icon=":material/view_column:"),
    st.Page("pages/studio.py", title="Studio", icon=":material/science:"),
    st.Page("pages/study.py", title="Studies", icon=":material/groups:"),
    st.Page("pages/nope.py", title="NOPE", icon=":material/bar_chart:"),
    st.Page("pages/projection.py", title="Projection", icon=":material/stacked_line_chart:"),
    st.Page("pages/gradient.py", title="Gradient", icon=":material/linear_scale:"),
    st.Page("pages/retrieval.py", title="Retrieval", icon=":material/travel_explore:"),
    st.Page("pages/playground.py", title="Playground", icon=":material/chat:"),
    st.Page("pages/rate.py", title="Rate", icon=":material/star_rate:"),
    st.Page("pages/cards.py", title="Model cards", icon=":material/badge:"),
    st.Page("pages/imports.py", title="Import", icon=":material/upload_file:"),
    st.Page("pages/report.py", title="Report", icon=":material/description:"),
]
ACTIVITY = st.Page("pages/activity.py", title="Activity", icon=":material/history:")  # owners only
RATE_ONLY = [st.Page("pages/rate.py", title="Rate", icon=":material/star_rate:", default=True)]  # raters: nothing else
PARTICIPATE_ONLY = [st.Page("pages/participate.py", title="Study", icon=":material/groups:", default=True)]


def pages_for(who) -> list:
    if (who.scope or "").startswith("study:"):  # a study's participant: their study, nothing else
        return PARTICIPATE_ONLY
    if who.blinded:
        return RATE_ONLY
    return PAGES + ([ACTIVITY] if who.role == "owner" else [])


st.set_page_config(page_title="Presupposition Lab", page_icon=":material/science:", layout="wide")
with page_session(), reported():  # one store open per rerun; a link's unusable values are named above the page
    who = identity.gate()  # stops here with a sign-in, no-role or refused-link page when nobody may go on
    identity.sidebar(who)
    st.navigation(pages_for(who), position="hidden" if who.blinded or who.scope else "sidebar").run()
