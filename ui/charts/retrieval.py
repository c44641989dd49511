"""The Retrieval page's charts: Recall@K per retriever, and where a QA run's errors come from."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ui import charts

OUTCOME_COLORS = {
    "correct": "#009E73",
    "reading miss": "#E69F00",
    "retrieval miss": "#D55E00",
    "no gold passage": "#999999",
    "failed": "#000000",
}


def recall_curves(curves: pd.DataFrame) -> alt.LayerChart:
    """Recall@K per retriever on a log K axis, with its 95% interval as a band."""
    base = alt.Chart(curves).encode(
        x=alt.X("k:Q", scale=alt.Scale(type="log"), title="K (log scale)"),
        color=alt.Color(
            "retriever:N",
            title="retriever",
            scale=alt.Scale(domain=list(charts.RETRIEVER_COLORS), range=list(charts.RETRIEVER_COLORS.values())),
        ),
        tooltip=[
            "retriever",
            "k",
            alt.Tooltip("recall:Q", format=".3f"),
            alt.Tooltip("low:Q", format=".3f"),
            alt.Tooltip("high:Q", format=".3f"),
            "n",
        ],
    )
    band = base.mark_area(opacity=0.2).encode(
        y=alt.Y("low:Q", title="Recall@K (95% CI)", scale=alt.Scale(zero=False)), y2="high:Q"
    )
    return (band + base.mark_line(point=True).encode(y="recall:Q")).properties(width=charts.WIDTH, height=260)


def attribution(summary: pd.DataFrame, by: str | None, outcome: str | None) -> alt.Chart:
    """Predictions per outcome (correct, retrieval miss, reading miss, …), stacked per `by` group when given;
    `outcome` (when chosen) is drawn solid and the rest faded; a click picks an outcome."""
    outcomes = list(summary["outcome"].unique())
    y = alt.Y(f"{by}:N", title=None) if by else alt.Y("outcome:N", sort=outcomes, title=None)
    bars = (
        alt.Chart(summary.assign(lit=(summary["outcome"] == outcome) | (outcome is None)))
        .mark_bar()
        .encode(
            x=alt.X("n:Q", stack=True, title="predictions"),
            y=y,
            color=alt.Color(
                "outcome:N",
                sort=outcomes,
                scale=alt.Scale(domain=outcomes, range=[OUTCOME_COLORS[o] for o in outcomes]),
            ),
            opacity=alt.condition("datum.lit", alt.value(1.0), alt.value(0.4)),
            tooltip=[
                *([by] if by else []),
                "outcome",
                "n",
                alt.Tooltip("share:Q", format=".1%"),
                alt.Tooltip("low:Q", format=".1%"),
                alt.Tooltip("high:Q", format=".1%"),
            ],
        )
        .add_params(charts.pick("outcome"))
    )
    height = 24 * summary[by or "outcome"].nunique()
    return bars.properties(width=charts.WIDTH, height=max(60, height))
