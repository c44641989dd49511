"""Download buttons: every chart as PNG and SVG, every table as CSV, Parquet and LaTeX, with
provenance; and a *Pin* button on each that adds it to the report (backend/views/report.py).

Files are generated only when a button is clicked (callable `data`), so rendering stays fast.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable

import altair as alt
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import streamlit as st

from backend.views import report
from ui import charts, identity
from ui.resources import StoreLocked, chart_spec, store
from ui.text import plain


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "export"


def chart(
    figure: alt.Chart | Callable[..., alt.Chart],
    title: str,
    caption: str,
    key: str,
    choose: dict[str, str] | None = None,
    select: bool = False,
    args: tuple | None = None,
):
    """Show a titled chart with its provenance caption and PNG/SVG downloads.

    With `args`, `figure` is a chart builder in ui.charts: its spec is made once per arguments and
    reused by later reruns and other sessions (ui.resources.chart_spec); use it on pages that rerun often.
    `choose` makes marks clickable: {data field: widget key}. The figure must carry `charts.pick(*fields)`;
    a click sets each widget (a URL-bound picker anywhere on the page) to the clicked mark's value.
    `select` returns the chart's selection event instead (e.g. a dragged region), rerunning on each.
    """
    if args is not None:
        figure = chart_spec(figure, args, title, caption)
        plot_height = figure.get("height")
    else:
        plot_height = getattr(figure, "height", None)
        figure = charts.titled(figure, title, caption)
    sized = frame_height(plot_height)
    chart_key = f"{key}-chart"
    clickable = (
        {"on_select": lambda: _apply_click(chart_key, choose), "key": chart_key}
        if choose
        else {"on_select": "rerun", "key": chart_key}
        if select
        else {}
    )
    if isinstance(figure, dict):
        event = st.vega_lite_chart(spec=figure, width="stretch", **sized, **clickable)
    else:
        event = st.altair_chart(figure, width="stretch", **sized, **clickable)
    row = st.container(horizontal=True)  # buttons as wide as their labels, also in a narrow column
    row.download_button(
        "PNG",
        lambda: charts.to_png(figure),
        f"{_slug(title)}.png",
        "image/png",
        key=f"{key}-png",
        on_click="ignore",
        icon=":material/image:",
        width="content",
    )
    row.download_button(
        "SVG",
        lambda: charts.to_svg(figure),
        f"{_slug(title)}.svg",
        "image/svg+xml",
        key=f"{key}-svg",
        on_click="ignore",
        icon=":material/draw:",
        width="content",
    )
    _pin_button(row, "chart", key, title, caption, lambda: charts.to_json(figure))
    return event


def frame_height(plot_height) -> dict:
    """Streamlit's chart frame ignores the spec's height for band scales: pass it on, plus title and axes."""
    return {"height": int(plot_height) + 130} if isinstance(plot_height, (int, float)) else {}


def pinned_chart(spec: dict) -> None:
    """A pinned chart as its page drew it: as wide as the column, as tall as its spec says."""
    st.vega_lite_chart(spec, width="stretch", **frame_height(spec.get("height")))


def _pin_button(row, kind: str, key: str, title: str, caption: str, content: Callable[[], str]) -> None:
    """*Pin to report*; once this very view (title and caption: its dataset, filters, n, runs) is pinned in this
    session, the button says so instead, until the view changes."""
    if not identity.may("pin to report"):
        return
    pinned = (key, title, caption) in st.session_state.get("pinned", set())
    row.button(
        "Pinned to report" if pinned else "Pin to report",
        key=f"{key}-pin",
        width="content",
        icon=":material/check:" if pinned else ":material/push_pin:",
        disabled=pinned,
        help="In the report: see the Report page" if pinned else None,
        on_click=_pin,
        args=(kind, key, title, caption, content),
    )


def _pin(kind: str, key: str, title: str, caption: str, content: Callable[[], str]) -> None:
    """Callback: add the chart or table to the report (the spec or rows are made only now) and say so."""
    try:
        with store() as con:
            report.pin(con, kind, title, caption, content(), st.context.url, actor=identity.actor())
    except (report.ReportError, PermissionError, StoreLocked) as exc:
        st.toast(f"Not pinned: {plain(str(exc))}", icon=":material/error:")
        return
    st.session_state.setdefault("pinned", set()).add((key, title, caption))
    st.toast(f"Pinned to the report: {plain(title)}", icon=":material/push_pin:")


def _apply_click(chart_key: str, choose: dict[str, str]) -> None:
    """Callback (runs before the rerun, so pickers already drawn may still change): clicked values to widgets."""
    for widget, value in charts.clicked(st.session_state.get(chart_key), choose).items():
        st.session_state[widget] = value


def parquet_bytes(frame: pd.DataFrame, caption: str) -> bytes:
    """Parquet with the provenance caption in the file's metadata."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"provenance": caption.encode()})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what spreadsheets read as the start of a formula (OWASP)


def neutralised(value):
    """A text cell a spreadsheet would run as a formula, prefixed with ' so it is shown as text."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_START) else value


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """CSV that any reader loads as it is (`pd.read_csv` with its defaults: the header is the first line); text
    cells and column names that start like a formula are neutralised (numbers stay numbers: -0.5 is not text).
    Its provenance goes beside it: `zip_bytes`, the Parquet's metadata, the LaTeX caption."""
    safe = frame.rename(columns=neutralised)
    for column, dtype in safe.dtypes.items():
        if pd.api.types.is_object_dtype(dtype) or isinstance(dtype, pd.StringDtype):
            safe[column] = safe[column].map(neutralised)
    return safe.to_csv(index=False).encode()


def zip_bytes(frame: pd.DataFrame, title: str, caption: str) -> bytes:
    """A zip of the CSV and a provenance sidecar (`<name>.provenance.txt`: title, caption, rows, columns)."""
    buffer = io.BytesIO()
    name = _slug(title)
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr(f"{name}.csv", csv_bytes(frame))
        out.writestr(
            f"{name}.provenance.txt",
            f"{title}\n{caption}\nrows: {len(frame):,}\ncolumns: {', '.join(map(str, frame.columns))}\n",
        )
    return buffer.getvalue()


def table(frame: pd.DataFrame, title: str, caption: str, key: str, **dataframe_kwargs) -> None:
    """Show a table with its caption and CSV/Parquet downloads."""
    st.dataframe(frame, hide_index=True, width="stretch", **dataframe_kwargs)
    st.caption(plain(caption))  # it names filter values, which come from the data and the URL
    downloads(lambda: frame, title, caption, key)


def downloads(frame: Callable[[], pd.DataFrame], title: str, caption: str, key: str, suffix: str = "") -> None:
    """CSV and Parquet buttons; `frame` is called only when one is clicked (e.g. a full slice not on screen)."""
    row = st.container(horizontal=True)
    row.download_button(
        f"CSV{suffix}",
        lambda: csv_bytes(frame()),
        f"{_slug(title)}.csv",
        "text/csv",
        key=f"{key}-csv",
        on_click="ignore",
        icon=":material/table:",
        width="content",
        help="Loads as it is in any CSV reader; its provenance is in the zip's sidecar, the Parquet and the LaTeX",
    )
    row.download_button(
        f"CSV + provenance{suffix}",
        lambda: zip_bytes(frame(), title, caption),
        f"{_slug(title)}.zip",
        "application/zip",
        key=f"{key}-zip",
        on_click="ignore",
        icon=":material/folder_zip:",
        width="content",
    )
    row.download_button(
        f"Parquet{suffix}",
        lambda: parquet_bytes(frame(), caption),
        f"{_slug(title)}.parquet",
        "application/octet-stream",
        key=f"{key}-parquet",
        on_click="ignore",
        icon=":material/database:",
        width="content",
    )
    row.download_button(
        f"LaTeX{suffix}",
        lambda: report.latex(frame(), title, caption).encode(),
        f"{_slug(title)}.tex",
        "application/x-tex",
        key=f"{key}-latex",
        on_click="ignore",
        icon=":material/functions:",
        width="content",
    )
    _pin_button(row, "table", key, title, caption, lambda: report.table_json(frame()))
