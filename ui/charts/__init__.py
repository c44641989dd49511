"""Report-ready Altair charts: one colour per label across the tool, titles and captions that
carry provenance, and export to PNG/SVG without a browser (vl-convert)."""

from __future__ import annotations

import datetime as dt
import json
import textwrap

import altair as alt

# Okabe–Ito colour-blind-safe colours; the same label has the same colour on every page.
LABEL_COLORS = {"E": "#0072B2", "N": "#999999", "C": "#D55E00", "FP": "#D55E00", "other": "#CC79A7"}
# Streamlit's named badge colours closest to LABEL_COLORS (E blue, N grey, C/FP vermillion).
BADGES = {"E": "blue", "N": "gray", "C": "orange", "FP": "orange"}
WIDTH = 420  # legible at half-page width when exported at scale 2


RETRIEVER_COLORS = {"bm25": "#0072B2", "dense": "#E69F00", "hybrid": "#009E73"}  # Okabe–Ito, distinct in grey too
# One colour per kind of run (store.queries.SOURCE_NAMES); a kind not named here takes the next spare colour.
KIND_COLORS = {
    "paper-reported": "#0072B2",
    "baseline": "#999999",
    "model run": "#009E73",
    "live": "#E69F00",
    "your import": "#CC79A7",
}
SPARE_COLORS = ["#56B4E9", "#D55E00", "#F0E442", "#000000"]
ROW = 20  # px per run: a label at Streamlit's axis font size and its neighbours never overlap


def kind_scale(kinds) -> alt.Scale:
    """Every kind present gets a colour and a legend entry: the named ones theirs, any other a spare one."""
    present = [k for k in KIND_COLORS if k in set(kinds)]
    present += sorted(set(kinds) - set(KIND_COLORS))
    spare = iter(SPARE_COLORS * (1 + len(present) // len(SPARE_COLORS)))
    return alt.Scale(domain=present, range=[KIND_COLORS.get(k) or next(spare) for k in present])


def interval_dots(frame, x_title: str) -> alt.Chart:
    """One row per run, every run named: a dot at `value` with a line from `low` to `high` (a 95% CI), coloured
    by kind."""
    base = alt.Chart(frame).encode(
        y=alt.Y(
            "run:N",
            sort=alt.EncodingSortField("value", order="descending"),
            title=None,
            axis=alt.Axis(labelLimit=360, labelOverlap=False),
        ),
        color=alt.Color("kind:N", title="kind", scale=kind_scale(frame["kind"])),
        tooltip=[
            "run",
            "kind",
            alt.Tooltip("value:Q", format=".3f"),
            alt.Tooltip("low:Q", format=".3f"),
            alt.Tooltip("high:Q", format=".3f"),
            "n",
        ],
    )
    rules = base.mark_rule(strokeWidth=2).encode(
        x=alt.X("low:Q", title=x_title, scale=alt.Scale(domain=[0, 1])), x2="high:Q"
    )
    dots = base.mark_point(filled=True, size=60).encode(x="value:Q")
    return (rules + dots).properties(width=WIDTH, height=max(60, ROW * len(frame)))


def label_colors(labels) -> alt.ExprRef:
    """A Vega expression colouring axis labels with the tool's label colours (LABEL_COLORS)."""
    expr = "'#333333'"
    for label in labels:
        expr = f"datum.value === '{label}' ? '{LABEL_COLORS.get(label, '#333333')}' : {expr}"
    return alt.ExprRef(expr)


def confusion(cells, columns: tuple, index: tuple) -> alt.Chart:
    """A gold × predicted heatmap of counts; `cells` has gold, predicted, n, cell and chosen (the picked
    cell, outlined). Clicking a cell picks it (`pick("cell")`)."""
    axis = alt.Axis(labelAngle=0, labelFontWeight="bold", labelColor=label_colors(columns))
    x = alt.X("predicted:N", sort=list(columns), title="predicted (run A)", axis=axis)
    return heatmap(cells, x, alt.Y("gold:N", sort=list(index), title="gold", axis=axis), "n", WIDTH // 2 + 60)


def heatmap(cells, x: alt.X, y: alt.Y, count: str, width: int) -> alt.LayerChart:
    """Counts per cell as grey rectangles with the number written in; the `chosen` cell is outlined and a
    click picks a cell (`pick("cell")`)."""
    cells = cells.assign(dark=cells[count] > cells[count].max() / 2)
    base = alt.Chart(cells).encode(x=x, y=y)
    rect = (
        base.mark_rect()
        .encode(
            color=alt.Color(f"{count}:Q", scale=alt.Scale(scheme="greys"), title="items"),
            stroke=alt.condition("datum.chosen", alt.value("#E69F00"), alt.value(None)),
            strokeWidth=alt.value(4),
            tooltip=[y.shorthand.split(":")[0], x.shorthand.split(":")[0], count],
        )
        .add_params(pick("cell"))
    )
    text = base.mark_text(fontSize=14).encode(
        text=f"{count}:Q", color=alt.condition("datum.dark", alt.value("white"), alt.value("black"))
    )
    return (rect + text).properties(width=width, height=WIDTH // 3)


def label_shares(shares, labels: tuple, who: tuple) -> alt.Chart:
    """Each label's share among the gold labels and each run's predictions: grouped bars (label, who, share)."""
    return (
        alt.Chart(shares)
        .mark_bar()
        .encode(
            y=alt.Y(
                "label:N",
                sort=list(labels),
                title=None,
                axis=alt.Axis(labelFontWeight="bold", labelColor=label_colors(labels)),
            ),
            yOffset=alt.YOffset("who:N", sort=list(who)),
            x=alt.X("share:Q", title="share of the slice", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")),
            color=alt.Color(
                "who:N",
                title=None,
                scale=alt.Scale(domain=list(who), range=["#555555", "#E69F00", "#56B4E9"][: len(who)]),
            ),
            tooltip=["label", "who", alt.Tooltip("share:Q", format=".1%")],
        )
        .properties(width=WIDTH // 2, height=18 * len(who) * len(labels))
    )


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


SUBTITLE_CHARS = 90  # a subtitle line's length: Vega-Lite does not wrap it, and a longer one ran off a narrow chart


def titled(chart: alt.Chart, title: str, caption: str) -> alt.Chart:
    """The chart with its title and a provenance subtitle, so an exported figure says what it shows; the subtitle
    in lines of at most SUBTITLE_CHARS (Explore's label shares ran off the chart as one line)."""
    lines = textwrap.wrap(caption, SUBTITLE_CHARS, break_on_hyphens=False, break_long_words=False) or [caption]
    return chart.properties(title=alt.TitleParams(title, subtitle=lines, anchor="start", subtitleFontSize=10))


DEFAULT_VIEW = {"continuousWidth": 300, "continuousHeight": 300}  # what Altair's default theme adds


def spec(chart: alt.Chart) -> dict:
    """The chart's Vega-Lite spec, data inline, without Altair's default-theme view size (as
    st.altair_chart renders it). Not validated: the builders are fixed code, checked by the tests."""
    out = chart.to_dict(validate=False)
    config = out.get("config", {})
    if config.get("view") == DEFAULT_VIEW:
        del config["view"]
        if not config:
            del out["config"]
    return out


def to_json(chart: alt.Chart | dict) -> str:
    """The Vega-Lite JSON of an Altair chart or a spec (what vl-convert and the report take)."""
    return json.dumps(chart) if isinstance(chart, dict) else chart.to_json()


def to_png(chart: alt.Chart | dict, scale: float = 2.0) -> bytes:
    import vl_convert as vlc  # lazy: start-up time (loads a JavaScript engine)

    return vlc.vegalite_to_png(to_json(chart), scale=scale)


def to_svg(chart: alt.Chart | dict) -> bytes:
    import vl_convert as vlc  # lazy: start-up time (loads a JavaScript engine)

    return vlc.vegalite_to_svg(to_json(chart)).encode()


def crowd_labels(labels) -> alt.Chart:
    """One example's crowd labels (`label`, `n` raters), in the order given, coloured as everywhere."""
    order = list(labels["label"])
    return (
        alt.Chart(labels)
        .mark_bar()
        .encode(
            x=alt.X("label:N", sort=order, title="crowd label"),
            y=alt.Y("n:Q", title="raters", axis=alt.Axis(tickMinStep=1)),
            color=alt.Color("label:N", scale=label_scale(order), legend=None),
            tooltip=["label", "n"],
        )
        .properties(width=WIDTH // 2, height=160)
    )
