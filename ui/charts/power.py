"""The Study page's power curve: power per participant count for each contrast, with its exact binomial 95% CI, and
the conventional 0.8 marked."""

from __future__ import annotations

import altair as alt
import pandas as pd


def curve(table: pd.DataFrame) -> alt.Chart:
    """table: participants, contrast, power, low, high (metrics.power.simulate's)."""
    base = alt.Chart(table).encode(
        x=alt.X("participants:Q", title="Participants"),
        color=alt.Color("contrast:N", title="Contrast"),
        tooltip=[
            "participants",
            "contrast",
            "sims",
            alt.Tooltip("power:Q", format=".3f"),
            alt.Tooltip("low:Q", format=".3f"),
            alt.Tooltip("high:Q", format=".3f"),
        ],
    )
    lines = base.mark_line(point=True).encode(y=alt.Y("power:Q", title="Power", scale=alt.Scale(domain=[0, 1])))
    bars = base.mark_errorbar().encode(y="low:Q", y2="high:Q")
    target = alt.Chart(pd.DataFrame({"power": [0.8]})).mark_rule(strokeDash=[4, 4], color="grey").encode(y="power:Q")
    return (bars + lines + target).properties(width="container", height=280)
