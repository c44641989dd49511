"""The Map page's chart: every item as a point, coloured by a facet, a label or correctness, with a region
selection (`region`) the page reads back."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ui import charts


def points(frame: pd.DataFrame, colour: str, highlighted: bool) -> alt.Chart:
    """The 2-D points (x, y) coloured by `colour`; with `highlighted`, points whose `highlighted` is false fade."""
    region = alt.selection_interval(name="region", encodings=["x", "y"])
    if colour in ("gold_label", "predicted"):
        scale = charts.label_scale(sorted(frame[colour].dropna().unique()))
    elif colour == "correct":
        scale = alt.Scale(domain=["right", "wrong", "not predicted"], range=["#0072B2", "#D55E00", "#BBBBBB"])
    else:
        scale = alt.Scale(scheme="tableau10")
    faded = alt.condition("datum.highlighted", alt.value(0.85), alt.value(0.08))
    return (
        alt.Chart(frame)
        .mark_circle(size=14)
        .encode(
            x=alt.X("x:Q", axis=None),
            y=alt.Y("y:Q", axis=None),
            color=alt.Color(f"{colour}:N", scale=scale, title=colour),
            opacity=faded if highlighted else alt.value(0.7),
            tooltip=["example_id", "input", colour],
        )
        .add_params(region)
        .properties(width=charts.WIDTH, height=520)
    )
