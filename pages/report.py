"""Report: the charts and tables pinned from any page (*Pin to report* under each), in an order you
set, each with its provenance caption and a title you may change; exported as one HTML file (images
embedded), one Markdown file, and every table as LaTeX (booktabs, laid out to fit the page)."""

import json

import streamlit as st

from backend.views import report
from ui import export, identity, urls, widgets
from ui.resources import StoreLocked, query, store


def change(action, *args) -> None:
    """Callback for the move, rename and remove buttons."""
    try:
        with store() as con:
            action(con, *args, actor=identity.actor())
    except (report.ReportError, PermissionError, StoreLocked) as exc:
        st.toast(f"Not changed: {widgets.message(exc)}", icon=":material/error:")


def retitle(item_id: str) -> None:
    """Callback for an item's Rename button: the title typed in its box."""
    change(report.rename, item_id, st.session_state[f"title-{item_id}"])


def show(row, first: bool, last: bool) -> None:
    with st.container(border=True):
        head, name, up, down, drop = st.columns([10, 1, 1, 1, 1], vertical_alignment="center")
        head.markdown(f"**{widgets.plain(row.title)}** · {widgets.plain(row.kind)}")
        if identity.may("edit report"):
            with name.popover("", icon=":material/edit:", help="Rename"):
                st.text_input("Title", row.title, key=f"title-{row.item_id}", max_chars=300)
                st.button("Rename", key=f"rename-{row.item_id}", on_click=retitle, args=(row.item_id,))
            edit_buttons(row, first, last, up, down, drop)
        if row.kind == "chart":
            export.pinned_chart(json.loads(row.content))
        else:
            st.dataframe(report.table_frame(row.content), hide_index=True, width="stretch")
        st.caption(widgets.plain(report.caption_of(row)))


def edit_buttons(row, first: bool, last: bool, up, down, drop) -> None:
    """Move up, move down, remove (the backend allows an analyst their own items, an owner any)."""
    up.button(
        "",
        key=f"up-{row.item_id}",
        icon=":material/arrow_upward:",
        disabled=first,
        help="Move up",
        on_click=change,
        args=(report.move, row.item_id, -1),
    )
    down.button(
        "",
        key=f"down-{row.item_id}",
        icon=":material/arrow_downward:",
        disabled=last,
        help="Move down",
        on_click=change,
        args=(report.move, row.item_id, 1),
    )
    drop.button(
        "",
        key=f"remove-{row.item_id}",
        icon=":material/delete:",
        help="Remove from the report",
        on_click=change,
        args=(report.remove, row.item_id),
    )


st.title("Report")
st.caption(
    "Pin any chart or table with the *Pin to report* button under it; order them here and export the report "
    "for your paper. Each item keeps the caption its page gave it (dataset, filters, n, runs, date)."
)
try:
    pinned = query(report.items)
except (FileNotFoundError, StoreLocked) as exc:
    st.error(f"{widgets.message(exc)}. Then reload this page.")
    urls.stop()
if pinned.empty:
    st.info("Nothing is pinned yet: press *Pin to report* under a chart or table on any page.")
    urls.stop()
tables = int((pinned["kind"] == "table").sum())
row = st.container(horizontal=True)
row.download_button(
    "HTML (images embedded)",
    lambda: report.export_html(pinned).encode(),
    "report.html",
    "text/html",
    on_click="ignore",
    icon=":material/html:",
    key="report-html",
    width="content",
)
row.download_button(
    "Markdown",
    lambda: report.export_markdown(pinned).encode(),
    "report.md",
    "text/markdown",
    on_click="ignore",
    icon=":material/markdown:",
    key="report-md",
    width="content",
)
figures = len(pinned) - tables
row.download_button(  # the charts as PDF figures beside the .tex, each labelled by its item's id (issue 64, item 7)
    f"LaTeX (zip: {tables} table{'s' if tables != 1 else ''}, {figures} figure{'s' if figures != 1 else ''})",
    lambda: report.export_latex_zip(pinned),
    "report-latex.zip",
    "application/zip",
    on_click="ignore",
    icon=":material/functions:",
    key="report-tex",
    width="content",
    disabled=not len(pinned),
)
st.markdown(f"**{len(pinned)} item{'s' if len(pinned) != 1 else ''}**")
for i, item in enumerate(pinned.itertuples()):
    show(item, i == 0, i == len(pinned) - 1)
