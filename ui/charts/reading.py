"""The Study page's reading times of a self-paced reading or Maze study: the mean time per region, one line per
condition (issue 63, item 6)."""

from __future__ import annotations

import altair as alt
import pandas as pd


def regions(table: pd.DataFrame) -> alt.Chart:
    """table: condition, region, n, mean_ms, sd_ms, median_ms (analysis.trial_types.region_times')."""
    return (
        alt.Chart(table)
        .mark_line(point=True)
        .encode(
            x=alt.X("region:O", title="Region"),
            y=alt.Y("mean_ms:Q", title="Mean reading time (ms)"),
            color=alt.Color("condition:N", title="Condition"),
            tooltip=[
                "condition",
                "region",
                "n",
                alt.Tooltip("mean_ms:Q", format=".0f"),
                alt.Tooltip("sd_ms:Q", format=".0f"),
            ],
        )
        .properties(width="container", height=280)
    )
