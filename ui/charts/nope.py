"""The NOPE page's charts (Parrish et al., CoNLL 2021): each takes the report's table and returns the chart."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ui import charts

LABELS = ["E", "N", "C"]
POLARITIES = ["non-negated", "negated"]
POLARITY_COLORS = alt.Scale(domain=POLARITIES, range=["#009E73", "#E69F00"])
SPLIT_COLORS = alt.Scale(domain=["main", "adv"], range=["#56B4E9", "#CC79A7"])


def pretty(trigger: str) -> str:
    return trigger.replace("_", " ")


def figure2(frame: pd.DataFrame) -> alt.Chart:
    """Figure 2: gold label shares per trigger and polarity, stacked bars; a click picks trigger, polarity, label."""
    long = frame.melt(
        id_vars=["trigger_type", "polarity", "n"],
        value_vars=[f"{label} %" for label in LABELS],
        var_name="label",
        value_name="share",
    ).assign(label=lambda f: f["label"].str[0])
    short = long["polarity"].map({"non-negated": "non-neg", "negated": "neg"})
    long["bar"] = long["trigger_type"].map(pretty) + " · " + short + " (n=" + long["n"].astype(str) + ")"
    order = list(dict.fromkeys(long.sort_values(["trigger_type", "polarity"], ascending=[True, False])["bar"]))
    chart = (
        alt.Chart(long)
        .mark_bar()
        .encode(
            y=alt.Y(
                "bar:N",
                sort=order,
                title="Trigger · polarity (n items)",  # the title left of the longest label
                axis=alt.Axis(labelLimit=320, titlePadding=12, titleAngle=-90, titleX=-300),
            ),
            x=alt.X("share:Q", stack="zero", title="Share of items (%)", scale=alt.Scale(domain=[0, 100])),
            color=alt.Color("label:N", scale=charts.label_scale(LABELS), sort=LABELS, title="Gold label"),
            order=alt.Order("rank:Q"),
            tooltip=["trigger_type", "polarity", "label", alt.Tooltip("share:Q", format=".1f"), "n"],
        )
        .transform_calculate(rank="indexof(['E','N','C'], datum.label)")
        .properties(width=charts.WIDTH)
    )
    return chart.add_params(charts.pick("trigger_type", "polarity", "label"))


def figure3(frame: pd.DataFrame) -> alt.Chart:
    """Figure 3: the mean SD of the five ratings per trigger and polarity; a click picks trigger and polarity."""
    return (
        alt.Chart(frame.assign(trigger=lambda f: f["trigger_type"].map(pretty)))
        .mark_bar()
        .encode(
            y=alt.Y("trigger:N", title="Trigger type"),
            yOffset=alt.YOffset("polarity:N", sort=POLARITIES),
            x=alt.X("mean_sd:Q", title="Mean SD of the five ratings (0–100 scale)"),
            color=alt.Color("polarity:N", scale=POLARITY_COLORS, title="Polarity"),
            tooltip=["trigger_type", "polarity", alt.Tooltip("mean_sd:Q", format=".1f"), "n"],
        )
        .properties(width=charts.WIDTH)
        .add_params(charts.pick("trigger_type", "polarity"))
    )


def figure5_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Figure 5's accuracy, in percent, with its interval and the trigger's readable name."""
    return frame.assign(
        accuracy=100 * frame["value"],
        low=100 * frame["low"],
        high=100 * frame["high"],
        trigger=frame["trigger_type"].map(pretty),
    )


def figure5(pct: pd.DataFrame) -> alt.Chart:
    """Figure 5: accuracy (%) with 95% CIs per trigger, main and adversarial (`figure5_table`'s rows)."""
    base = alt.Chart(pct).encode(
        y=alt.Y("trigger:N", title="Trigger type"), yOffset=alt.YOffset("split:N", sort=["main", "adv"])
    )
    bars = (
        base.mark_bar()
        .encode(
            x=alt.X("accuracy:Q", title="Accuracy (%) with 95% CI", scale=alt.Scale(domain=[0, 100])),
            color=alt.Color("split:N", scale=SPLIT_COLORS, title="Corpus"),
            tooltip=["trigger_type", "split", alt.Tooltip("accuracy:Q", format=".1f"), "n"],
        )
        .add_params(charts.pick("trigger_type", "split"))
    )
    return (bars + base.mark_rule(color="black").encode(x="low:Q", x2="high:Q")).properties(width=charts.WIDTH)


def calibration(curve: pd.DataFrame) -> alt.Chart:
    """Crowd share of a label against the model's mean probability of it, per corpus, beside the diagonal."""
    base = alt.Chart(curve).encode(
        x=alt.X("crowd share:Q", title="Crowd share of the label (5 raters)", scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("model probability:Q", title="Mean model probability of the label", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("label:N", scale=charts.label_scale(LABELS), sort=LABELS, title="Label"),
    )
    dash = alt.StrokeDash(
        "split:N",
        sort=["main", "adv"],
        title="Corpus",
        legend=alt.Legend(symbolType="stroke", symbolStrokeColor="#555555"),
    )
    lines = base.mark_line().encode(strokeDash=dash) + base.mark_circle(size=40).encode(
        tooltip=["split", "label", "crowd share", alt.Tooltip("model probability:Q", format=".2f"), "n"]
    )
    diagonal = alt.Chart(pd.DataFrame({"x": [0, 1], "y": [0, 1]})).mark_line(color="#BBBBBB").encode(x="x:Q", y="y:Q")
    return (diagonal + lines).properties(width=charts.WIDTH)
