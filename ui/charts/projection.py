"""The Projection page's charts: survival per trigger × operator, for people / gold and a model."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from backend.views.common import BY_CONSTRUCTION, OPERATORS
from ui import charts

WHO = alt.Scale(domain=["people", "gold by construction", "model"], range=["#0072B2", "#525252", "#D55E00"])


def row_label(frame):
    return frame["family"] + " · " + frame["dataset"] + ": " + frame["trigger"]


SHADES = ["#deebf7", "#08306b", "#f0f0f0", "#525252"]  # people 0 → 1 (blues), gold 0 → 1 (greys)


def heatmap(table: pd.DataFrame) -> alt.Chart:
    """Survival per trigger (rows, grouped by family) × operator, with the share printed in each cell; a click
    picks dataset, trigger and operator. People's judgements are coloured blue and gold labels by construction
    grey: a template's label is not a measurement of people."""
    frame = table.assign(
        row=row_label(table),
        pct=(100 * table["human"]).round(0),
        source=["gold by construction" if j == BY_CONSTRUCTION else "people" for j in table["judged_by"]],
    )
    frame["shade"] = frame["human"] + np.where(frame["source"] == "people", 0, 2)
    order = list(dict.fromkeys(frame["row"]))
    base = alt.Chart(frame).encode(
        x=alt.X(
            "operator:N",
            sort=OPERATORS,
            title="Operator",  # every operator labelled, over its column
            axis=alt.Axis(labelAngle=0, orient="top", labelOverlap=False, labelAlign="center"),
        ),
        y=alt.Y("row:N", sort=order, title=None, axis=alt.Axis(labelLimit=420, labelOverlap=False)),
    )
    tooltip = [
        "dataset",
        "trigger",
        "family",
        "operator",
        "judged_by",
        alt.Tooltip("human:Q", format=".2f"),
        alt.Tooltip("human_low:Q", format=".2f"),
        alt.Tooltip("human_high:Q", format=".2f"),
        "n",
    ]
    cells = (
        base.mark_rect(stroke="white")
        .encode(
            # one piecewise scale: people's shares 0–1 in blues, gold labels' (shifted to 2–3) in greys, so a cell
            # built from a template never reads as people's judgement; the page's caption names the two
            color=alt.Color("shade:Q", scale=alt.Scale(domain=[0, 1, 2, 3], range=SHADES), legend=None),
            tooltip=tooltip,
        )
        .add_params(charts.pick("dataset", "trigger", "operator"))
    )
    text = base.mark_text(fontSize=11).encode(
        text=alt.Text("pct:Q", format=".0f"),
        color=alt.condition("datum.human > 0.6", alt.value("white"), alt.value("black")),
    )
    return (cells + text).properties(width=charts.WIDTH, height=24 * len(order))  # 84 px a column: its label fits


def profile(frame: pd.DataFrame) -> alt.Chart:
    """Per trigger of each dataset (grouped by family), survival by operator: people (blue), gold labels by
    construction (grey, no interval: fixed by the template) and the model (orange), each with its CI."""
    long = frame.assign(cell=row_label(frame))
    gold = long["judged_by"] == BY_CONSTRUCTION
    people = long.assign(
        who=np.where(gold, "gold by construction", "people"),
        rate=long["human"],
        low=long["human_low"],
        high=long["human_high"],
    )
    said = long[long["model"].notna()].assign(
        who="model", rate=lambda f: f["model"], low=lambda f: f["model_low"], high=lambda f: f["model_high"]
    )
    data = pd.concat([people, said])[["cell", "trigger", "dataset", "operator", "who", "rate", "low", "high", "n"]]
    base = alt.Chart(data).encode(
        x=alt.X("operator:N", sort=OPERATORS, title=None, axis=alt.Axis(labelAngle=-40, labelOverlap=False)),
        color=alt.Color("who:N", scale=WHO, title=None),
        xOffset=alt.XOffset("who:N", sort=list(WHO.domain)),
    )
    points = base.mark_point(filled=True, size=45).encode(
        y=alt.Y("rate:Q", title="Survives (share)", scale=alt.Scale(domain=[0, 1])),
        tooltip=[
            "dataset",
            "trigger",
            "operator",
            "who",
            alt.Tooltip("rate:Q", format=".2f"),
            alt.Tooltip("low:Q", format=".2f"),
            alt.Tooltip("high:Q", format=".2f"),
            "n",
        ],
    )
    rules = base.mark_rule().encode(y="low:Q", y2="high:Q")
    return (
        alt.layer(rules, points)
        .properties(width=140, height=120)
        .facet(
            facet=alt.Facet(
                "cell:N",
                title=None,
                sort=list(dict.fromkeys(long["cell"])),
                header=alt.Header(labelFontSize=10, labelLimit=200),
            ),
            columns=4,
        )
    )
