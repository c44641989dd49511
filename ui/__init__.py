"""Streamlit-only glue: cached resources and widgets. The backend never imports this."""
