"""Streamlit components bundled with the lab (inline HTML, CSS and JS through `st.components.v2`: no CDN, no build)."""
