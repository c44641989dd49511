"""The Gradient page's charts: per group (predicate, verb, operator), people's mean certainty and a run's, each
with its 95% CI, groups ordered by people's mean; and the prior effect per group."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ui import charts

PEOPLE, MODEL = "#0072B2", "#D55E00"  # Okabe–Ito blue and vermillion, as on the Projection page


def _who(frame: pd.DataFrame) -> alt.Color:
    names = list(dict.fromkeys(frame["who"]))
    return alt.Color(
        "who:N", title=None, sort=names, scale=alt.Scale(domain=names, range=[PEOPLE, MODEL][: len(names)])
    )


def dots(frame: pd.DataFrame, value: str, low: str, high: str, title: str, domain: list[float] | None) -> alt.Chart:
    """One row per group (in the frame's order), a dot per `who` at `value` with a line from `low` to `high`;
    a click picks the group."""
    order = list(dict.fromkeys(frame["group"]))
    scale = alt.Scale(domain=domain) if domain else alt.Undefined
    base = alt.Chart(frame).encode(
        y=alt.Y("group:N", sort=order, title=None, axis=alt.Axis(labelLimit=240, labelOverlap=False)),
        yOffset=alt.YOffset("who:N", sort=list(dict.fromkeys(frame["who"]))),
        color=_who(frame),
        tooltip=[
            "who",
            "group",
            alt.Tooltip(f"{value}:Q", format=".3f"),
            alt.Tooltip(f"{low}:Q", format=".3f"),
            alt.Tooltip(f"{high}:Q", format=".3f"),
            *[column for column in ("n", "n_high_prior", "n_low_prior") if column in frame.columns],
        ],
    )
    rules = base.mark_rule(strokeWidth=2).encode(x=alt.X(f"{low}:Q", title=title, scale=scale), x2=f"{high}:Q")
    points = base.mark_point(filled=True, size=60).encode(x=f"{value}:Q").add_params(charts.pick("group"))
    return (rules + points).properties(width=charts.WIDTH, height=max(80, 22 * len(order)))


def certainty(table: pd.DataFrame, scale: list[float], title: str) -> alt.Chart:
    return dots(table, "mean", "low", "high", title, scale)


def prior(table: pd.DataFrame, scale: list[float]) -> alt.Chart:
    span = scale[1] - scale[0]
    title = "Prior effect: certainty after a high-prior fact − after a low one"
    return dots(table, "effect", "effect_low", "effect_high", title, [-span, span])
