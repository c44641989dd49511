"""Presupposition Lab backend: plain Python (never imports Streamlit), usable from a notebook."""
