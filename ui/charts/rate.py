"""The Rate page's charts: each criterion's mean rating with its 95% interval; a judge × people confusion."""

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


def judge_confusion(cells: pd.DataFrame, judge_order: list[str], people_order: list[str]) -> alt.LayerChart:
    """The judge's score × the people's consensus, items per cell (`analysis.judging.confusion` plus `cell`
    and `chosen`); clicking a cell picks it, the chosen one is outlined."""
    x = alt.X("judge:N", sort=judge_order, title="judge's score", axis=alt.Axis(labelAngle=0))
    y = alt.Y("people:N", sort=people_order, title="people's score (consensus)")
    return charts.heatmap(cells, x, y, "items", charts.WIDTH // 2)
