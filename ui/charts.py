"""Report-ready Altair charts: one colour per label across the tool, titles and captions that
carry provenance, and export to PNG/SVG without a browser (vl-convert)."""
from __future__ import annotations

import datetime as dt

import altair as alt

# Okabe–Ito colour-blind-safe colours; the same label has the same colour on every page.
LABEL_COLORS = {"E": "#0072B2", "N": "#999999", "C": "#D55E00", "FP": "#D55E00", "other": "#CC79A7"}
# Streamlit's named badge colours closest to LABEL_COLORS (E blue, N grey, C/FP vermillion).
BADGES = {"E": "blue", "N": "gray", "C": "orange", "FP": "orange"}
WIDTH = 420  # legible at half-page width when exported at scale 2


RETRIEVER_COLORS = {"bm25": "#0072B2", "dense": "#E69F00", "hybrid": "#009E73"}  # Okabe–Ito, distinct in grey too
KIND_COLORS = {"paper-reported": "#0072B2", "baseline": "#999999", "model run": "#009E73", "live": "#E69F00"}


def interval_dots(frame, x_title: str) -> alt.Chart:
    """One row per run: a dot at `value` with a line from `low` to `high` (a 95% CI), coloured by kind."""
    kinds = [k for k in KIND_COLORS if k in set(frame["kind"])]
    base = alt.Chart(frame).encode(
        y=alt.Y("run:N", sort=alt.EncodingSortField("value", order="descending"), title=None,
                axis=alt.Axis(labelLimit=360)),
        color=alt.Color("kind:N", title="kind", scale=alt.Scale(domain=kinds, range=[KIND_COLORS[k] for k in kinds])),
        tooltip=["run", "kind", alt.Tooltip("value:Q", format=".3f"), alt.Tooltip("low:Q", format=".3f"),
                 alt.Tooltip("high:Q", format=".3f"), "n"])
    rules = base.mark_rule(strokeWidth=2).encode(x=alt.X("low:Q", title=x_title, scale=alt.Scale(domain=[0, 1])), x2="high:Q")
    dots = base.mark_point(filled=True, size=60).encode(x="value:Q")
    return (rules + dots).properties(width=WIDTH, height=max(60, 16 * len(frame)))


PICK = "pick"  # the point selection a clickable chart carries (export.chart's `choose`)


def pick(*fields: str) -> alt.Parameter:
    """A click selection on `fields`; add it to the layer whose marks should answer clicks."""
    return alt.selection_point(name=PICK, fields=list(fields), on="click")


def clicked(state, choose: dict[str, str]) -> dict[str, object]:
    """{widget key: value} for a click, from a chart's selection state and {field: widget key}.

    >>> clicked({"selection": {"pick": [{"cell": "E→C"}]}}, {"cell": "cell"})
    {'cell': 'E→C'}
    >>> clicked({"selection": {"pick": []}}, {"cell": "cell"})
    {}
    """
    points = ((state or {}).get("selection") or {}).get(PICK) or []
    return {widget: points[0][field] for field, widget in choose.items() if field in points[0]} if points else {}


def label_scale(labels: list[str]) -> alt.Scale:
    return alt.Scale(domain=labels, range=[LABEL_COLORS.get(label, "#56B4E9") for label in labels])


def provenance(dataset: str, n: int, filters: dict | None = None, runs: list[str] | None = None) -> str:
    """One caption line: dataset, active filters, n, runs and today's date."""
    active = ", ".join(f"{k}={v}" for k, v in (filters or {}).items() if v not in (None, "", [], "all"))
    parts = [f"dataset {dataset}", f"filters: {active or 'none'}", f"n={n:,}"]
    if runs:
        parts.append("runs: " + ", ".join(runs))
    parts.append(f"Presupposition Lab, {dt.date.today().isoformat()}")
    return " · ".join(parts)


def titled(chart: alt.Chart, title: str, caption: str) -> alt.Chart:
    """The chart with its title and a provenance subtitle, so an exported figure says what it shows."""
    return chart.properties(title=alt.TitleParams(title, subtitle=[caption], anchor="start", subtitleFontSize=10))


def to_png(chart: alt.Chart, scale: float = 2.0) -> bytes:
    import vl_convert as vlc
    return vlc.vegalite_to_png(chart.to_json(), scale=scale)


def to_svg(chart: alt.Chart) -> bytes:
    import vl_convert as vlc
    return vlc.vegalite_to_svg(chart.to_json()).encode()
