"""Model cards: for one model, everything the store knows about its worth — per dataset its headline metric
with n and CI against the best trivial baseline (and the verdict every page shows beside its outputs), why a run
is contaminated, how many of a prompted run's responses gave no answer, and its agreement with people where the
dataset has graded ratings (`backend.views.cards`). Nothing on the card is written by hand."""

from __future__ import annotations

import streamlit as st

from backend.views import cards, common
from ui import charts, export, widgets
from ui.resources import computed, query

st.title("Model cards")
st.caption("Built from the store on every visit. " + common.RULE)
names = widgets.require(
    cards.models, empty="No model runs are stored yet: run `python -m backend predict` or import one."
)
model = st.selectbox("Model", names, key="model", bind="query-params")
card = query(cards.card, model)
st.subheader(f"Model card: {widgets.plain(model)}")
counted = computed(cards.summary, card)
for row in counted.itertuples():
    st.markdown(
        f"{widgets.BADGES[row.verdict]} {widgets.plain(row.dataset)} · {widgets.plain(row.split)}: "
        f"{row.runs:,} of {row.of:,} runs"
    )
export.table(
    card.round(4),
    f"Model card: {model}",
    charts.provenance(", ".join(sorted(card["dataset"].unique())), len(card), None, [model]),
    "card",
    column_config={"contaminated": st.column_config.TextColumn(width="medium")},
)
