"""Presupposition Lab: the entrypoint. Page config, then st.navigation over the pages in PAGES."""
import streamlit as st

PAGES = [
    st.Page("pages/overview.py", title="Overview", icon=":material/dataset:", default=True),
]

st.set_page_config(page_title="Presupposition Lab", page_icon=":material/science:", layout="wide")
st.navigation(PAGES).run()
