"""The Rate page's chart: each criterion's mean rating with its 95% interval."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ui import charts


def means(summary: pd.DataFrame, top: int) -> alt.LayerChart:
    """One row per criterion (`views.rate.summary`): the interval as a rule, the mean as a dot, on 0..top."""
    bars = alt.Chart(summary).encode(y=alt.Y("criterion:N", title=None), tooltip=list(summary.columns))
    scale = alt.Scale(domain=[0, top], nice=False)
    figure = bars.mark_rule(strokeWidth=2).encode(
        x=alt.X("low:Q", title="mean rating (95% CI)", scale=scale, axis=alt.Axis(tickCount=top)), x2="high:Q"
    ) + bars.mark_point(filled=True, size=60).encode(x="mean:Q")
    return figure.properties(width=charts.WIDTH, height=30 * len(summary))
