"""Minimal-pair studio: write (or upload) a template of items × conditions, preview what it expands to,
store it as your dataset, and open its pairs and projection cells. Runs come from `predict` or Import."""
from __future__ import annotations

import streamlit as st

from backend.datasets.base import DataError
from backend.studio import templates
from ui import charts, export, widgets
from ui.resources import StoreLocked, computed, store

SHOWN = 200  # preview rows

st.title("Minimal-pair studio")
st.caption("A template lists conditions (each with its operator, premise, hypothesis and gold label, with `{slot}`s) "
           "and items that fill the slots — listed, or every combination of the filler lists. Each item becomes a "
           "family: its first condition is paired with every other. See the README for the format.")
upload = st.file_uploader("Template file (YAML)", type=["yaml", "yml"], key="template_file")
if upload is not None:
    text, source = upload.getvalue().decode("utf-8", errors="replace"), upload.name
else:
    text, source = st.text_area("Template", value=templates.example_text(), height=420, key="template_text"), "template.yaml"
try:
    made = computed(templates.expand, text, source)
except templates.TemplateError as exc:
    st.error("The template cannot be expanded: fix it and the preview follows. Nothing was stored.",
             icon=":material/error:")
    st.code(str(exc), language=None, wrap_lines=True)
    st.stop()

items, conditions = made.frame["item"].nunique(), len(made.conditions)
a, b, c, d = st.columns(4)
a.metric("Dataset", made.name)
b.metric("Items (families)", f"{items:,}")
c.metric("Sentences", f"{len(made.frame):,}", help=f"{items:,} items × {conditions} conditions")
d.metric("Pairs", f"{items * (conditions - 1):,}")
caption = charts.provenance(made.name, len(made.frame), {"template": source})
st.markdown(f"**Preview** (the first {min(SHOWN, len(made.frame)):,} of {len(made.frame):,} sentences)")
export.table(made.frame.head(SHOWN), f"Preview of {made.name}", caption, "preview")

replace = st.checkbox(f"Replace my dataset {widgets.plain(made.name)} if it exists (its runs are kept)", key="template_replace")
if st.button("Save as a dataset", type="primary", key="template_save", icon=":material/save:"):
    try:
        with store() as con:
            counts = templates.save(con, made, source, replace)
    except (DataError, ValueError, StoreLocked) as exc:
        st.error("Not saved", icon=":material/error:")
        st.code(str(exc), language=None, wrap_lines=True)
    else:
        st.success(f"Stored {widgets.plain(made.name)}: " + ", ".join(f"{n:,} {k}" for k, n in counts.items()))
        st.code(f".venv/bin/python -m backend predict --model minilm-nli --dataset {made.name}", language="bash")
        for pair_set in templates.pair_sets(made):
            st.page_link("pages/pairs.py", label=f"Minimal pairs: {pair_set}", icon=":material/compare_arrows:",
                         query_params={"pairs": pair_set})
        st.page_link("pages/projection.py", label="Its cells on the Projection page", icon=":material/stacked_line_chart:",
                     query_params={"cell_dataset": made.name})
