"""The report: charts and tables pinned from any page, kept in the store in the user's order, exported
as one HTML file (images embedded), one Markdown file, and each table as LaTeX (booktabs).

A pinned chart is its Vega-Lite spec with the data inlined (so it renders later exactly as pinned,
whatever the store holds then); a pinned table is every one of its rows, with their count (a table over
MAX_ROWS is refused: download it instead), so no export holds fewer rows than its caption counts. Both
keep the provenance caption the page showed under them (dataset, filters, n, runs, date).
"""

from __future__ import annotations

import base64
import html
import io
import json
import zipfile
from datetime import UTC, datetime

import duckdb
import pandas as pd

from backend.actions.report import KINDS, ReportError, move, pin, remove, rename  # noqa: F401 — the page's writes
from backend.analysis.latex import escape as latex_escape
from backend.analysis.latex import table as latex_table
from backend.analysis.markdown import plain, table_cell
from backend.store import report_items
from backend.store.sessions import DATA, SAVED, reads

MAX_ROWS = 100_000  # a pinned table holds every row up to this many; a larger one is refused, never cut
LEGACY_CAP = 2_000  # earlier versions kept only a table's first 2,000 rows, without recording how many there were


def table_json(frame: pd.DataFrame) -> str:
    """A table as pinned: every row, column order kept, values as JSON (others as text), and the row count."""
    if len(frame) > MAX_ROWS:
        raise ReportError(
            f"content: the table has {len(frame):,} rows and a report table holds at most {MAX_ROWS:,}; "
            "filter it first, or download it as CSV or Parquet"
        )
    split = frame.to_json(orient="split", index=False, default_handler=str, date_format="iso")
    return f'{split[:-1]},"rows":{len(frame)}}}'


def table_frame(content: str) -> pd.DataFrame:
    table = json.loads(content)
    return pd.DataFrame(table["data"], columns=table["columns"])


def table_note(content: str) -> str:
    """What a pinned table's caption must add about its rows: '' for a whole table; for a table pinned by an
    earlier version that cut at LEGACY_CAP rows, that it may be cut."""
    table = json.loads(content)
    if "rows" in table or len(table["data"]) != LEGACY_CAP:
        return ""
    return (
        f" (The first {LEGACY_CAP:,} rows only: pinned by an earlier version that kept at most {LEGACY_CAP:,} "
        "rows; pin the table again for every row.)"
    )


def caption_of(row) -> str:
    """An item's caption with what it must say about its rows."""
    return row.caption + (table_note(row.content) if row.kind == "table" else "")


@reads(DATA, SAVED)
def items(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The report's items in order: item_id, kind, title, caption, content, page, pinned_at."""
    return report_items.listing(con)


def chart_png(spec: str, scale: float = 2.0) -> bytes:
    import vl_convert as vlc  # lazy: start-up time (loads a JavaScript engine)

    return vlc.vegalite_to_png(spec, scale=scale)


def chart_pdf(spec: str) -> bytes:
    """A pinned chart as a vector PDF for a LaTeX figure (vl-convert)."""
    import vl_convert as vlc  # lazy: start-up time (loads a JavaScript engine)

    return vlc.vegalite_to_pdf(spec)


def latex(frame: pd.DataFrame, title: str, caption: str) -> str:
    """A booktabs table (\\toprule, \\midrule, \\bottomrule) with the title and provenance as its caption; every
    row, numbers to 3 decimals, text escaped for LaTeX; laid out to fit \\linewidth (`backend.analysis.latex`: a
    longtable over 40 rows, long text in p{} columns, a smaller font or a landscape page when the table needs it).
    Its first line names the packages it needs."""
    body, needs = latex_table(frame, f"{title}. {caption}", f"tab:{_label(title)}")
    return f"% \\usepackage{{{','.join(needs)}}}\n{body}"


def _label(title: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in title.lower()).strip("-")[:40] or "table"


def _rendered(frame: pd.DataFrame):
    """Each item with its chart as base64 PNG (vl-convert) or its table as a frame."""
    for row in frame.itertuples():
        if row.kind == "chart":
            yield row, base64.b64encode(chart_png(row.content)).decode(), None
        else:
            yield row, None, table_frame(row.content)


def export_html(frame: pd.DataFrame) -> str:
    """The whole report as one HTML file: charts as embedded PNG images, tables as HTML, each with its caption."""
    parts = []
    for row, image, table in _rendered(frame):
        parts.append(f"<section><h2>{html.escape(row.title)}</h2>")
        parts.append(
            f'<img alt="{html.escape(row.title, quote=True)}" src="data:image/png;base64,{image}">'
            if image
            else table.to_html(index=False, escape=True, border=0, na_rep="—")
        )
        parts.append(f'<p class="caption">{html.escape(caption_of(row))}</p></section>')
    style = (
        "body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}img{max-width:100%}"
        "table{border-collapse:collapse;font-size:13px}th,td{padding:3px 8px;border-bottom:1px solid #ddd}"
        ".caption{color:#666;font-size:12px}"
    )
    made = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>Presupposition Lab report</title>'
        f'<style>{style}</style></head><body><h1>Presupposition Lab report</h1><p class="caption">{len(frame)} '
        f"items, exported {made}</p>{''.join(parts)}</body></html>"
    )


def export_markdown(frame: pd.DataFrame) -> str:
    """The whole report as one Markdown file: charts as embedded PNG data URIs, tables as pipe tables; every
    title, caption, column name and cell escaped (backend.analysis.markdown), so no viewer renders a link from them."""
    parts = ["# Presupposition Lab report\n"]
    for row, image, table in _rendered(frame):
        parts.append(f"## {plain(row.title)}\n")
        parts.append(
            f"![{plain(row.title)}](data:image/png;base64,{image})\n" if image else _markdown_table(table) + "\n"
        )
        parts.append(f"*{plain(caption_of(row))}*\n")
    return "\n".join(parts)


def _markdown_table(table: pd.DataFrame) -> str:
    return table.map(table_cell).rename(columns=plain).to_markdown(index=False)


def export_latex(frame: pd.DataFrame) -> str:
    """Every pinned table as a LaTeX table and every pinned chart as a figure (its PDF under `figures/`, as
    `export_latex_files` writes it), each with its caption and a label that is the item's own id — `tab:report-ID`,
    `fig:report-ID` — so renaming an item keeps a paper's \\ref (issue 64, item 7). The first line names the
    packages they need (booktabs, and longtable, array, pdflscape or graphicx where needed)."""
    parts = []
    for row in frame.itertuples():
        if row.kind == "table":
            parts.append(latex_table(table_frame(row.content), f"{row.title}. {caption_of(row)}", _stable(row, "tab")))
        else:
            parts.append((_figure(row), ["graphicx"]))
    needs = dict.fromkeys(name for _, names in parts for name in names) or {"booktabs": None}
    return f"% \\usepackage{{{','.join(needs)}}}\n\n" + "\n".join(body for body, _ in parts)


def export_latex_files(frame: pd.DataFrame) -> dict[str, bytes]:
    """The LaTeX export as files: report.tex and each chart's figures/report-ID.pdf."""
    files = {"report.tex": export_latex(frame).encode()}
    for row in frame.itertuples():
        if row.kind == "chart":
            files[f"figures/report-{_stable_id(row)}.pdf"] = chart_pdf(row.content)
    return files


def export_latex_zip(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in export_latex_files(frame).items():
            out.writestr(name, data)
    return buffer.getvalue()


def _stable_id(row) -> str:
    return "".join(ch for ch in str(row.item_id) if ch.isalnum() or ch == "-")


def _stable(row, kind: str) -> str:
    return f"{kind}:report-{_stable_id(row)}"


def _figure(row) -> str:
    return (
        "\\begin{figure}[htbp]\n\\centering\n"
        f"\\includegraphics[width=\\linewidth]{{figures/report-{_stable_id(row)}.pdf}}\n"
        f"\\caption{{{latex_escape(f'{row.title}. {caption_of(row)}')}}}\\label{{{_stable(row, 'fig')}}}\n"
        "\\end{figure}\n"
    )
