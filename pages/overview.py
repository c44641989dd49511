"""Overview: which datasets are loaded (counts per split and label), which are missing and how to add them."""
import streamlit as st

from backend.store import queries
from ui.resources import store

st.title("Presupposition Lab")
st.caption("Questions and sentences that take something for granted: CREPE, Syn-(QA)², NOPE, IfQA, FalseQA.")

try:
    con = store()
except FileNotFoundError as exc:
    st.error(f"{exc}. Then reload this page.")
    st.stop()

loaded = queries.loaded_datasets(con)
st.subheader("Loaded datasets")
if loaded.empty:
    st.warning("The store is empty: run `python -m backend ingest` (see the README) and reload.")
else:
    counts = queries.table_counts(con)
    st.dataframe(
        loaded[["dataset_id", "title", "examples", "license", "citation", "source", "loaded_at"]].merge(counts, on="dataset_id"),
        hide_index=True, width="stretch")

for row in loaded.itertuples():
    for note in row.notes or []:
        st.info(f"**{row.dataset_id}** — {note}")

labelled = loaded[loaded["examples"] > 0]
if not labelled.empty:
    st.subheader("Examples per split and gold label")
    for column, dataset_id in zip(st.columns(len(labelled)), labelled["dataset_id"]):
        table = queries.split_label_counts(con, dataset_id).pivot_table(
            index="split", columns="gold_label", values="n", aggfunc="sum", fill_value=0, margins=True, margins_name="all")
        column.markdown(f"**{dataset_id}**")
        column.dataframe(table, width="stretch")

missing = queries.missing_datasets(con)
if not missing.empty:
    st.subheader("Missing datasets")
    for row in missing.itertuples():
        st.warning(f"**{row.title}** (`{row.dataset_id}`) is not loaded. To add it, {row.how_to_add}; "
                   "then run `python -m backend ingest`.")
