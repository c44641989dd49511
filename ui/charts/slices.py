"""The Slice finder's chart: the most significant slices with their intervals, beside the overall value."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ui import charts


def worst(top: pd.DataFrame, metric: str, overall: float) -> alt.LayerChart:
    """One row per slice: `metric` with its interval (low, high), and a dashed rule at `overall`."""
    base = alt.Chart(top).encode(y=alt.Y("slice:N", sort=list(top["slice"]), title=None, axis=alt.Axis(labelLimit=420)))
    bars = base.mark_point(filled=True, size=60, color="#D55E00").encode(
        x=alt.X(f"{metric}:Q", title="B − A (accuracy)" if metric == "B − A" else metric),
        tooltip=["slice", "n", alt.Tooltip(f"{metric}:Q", format=".3f"), alt.Tooltip("q (BH):Q", format=".2g")],
    )
    rules = base.mark_rule(color="#D55E00").encode(x="low:Q", x2="high:Q")
    line = alt.Chart(pd.DataFrame({"overall": [overall]})).mark_rule(strokeDash=[4, 4]).encode(x="overall:Q")
    return (rules + bars + line).properties(width=charts.WIDTH, height=22 * len(top))
