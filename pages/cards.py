"""Model cards: for one model, everything the store knows about its worth — per dataset its headline metric
with n and CI against the best trivial baseline (and the verdict every page shows beside its outputs), why a run
is contaminated, how many of a prompted run's responses gave no answer, and its agreement with people where the
dataset has graded ratings (`backend.views.cards`). Nothing on the card is written by hand."""

from __future__ import annotations

import datetime as dt

import streamlit as st

from backend.views import cards, common
from ui import export, widgets
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
    # rows, not items: each row's own n counts the items it was scored on (the caption said n=20 for 20 rows)
    f"model {model} · datasets {', '.join(sorted(card['dataset'].unique()))} · {len(card):,} rows, one per run and "
    f"headline split (each row's n: the items it was scored on) · Presupposition Lab, {dt.date.today().isoformat()}",
    "card",
    column_config={"contaminated": st.column_config.TextColumn(width="medium")},
)
