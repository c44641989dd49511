"""The report: pin a chart and a table from pages, reorder and remove items, and export HTML (images
embedded), Markdown and LaTeX (booktabs) whose content is checked."""

from __future__ import annotations

import base64
import json

import altair as alt
import pandas as pd
import pytest

from backend.analysis import latex
from backend.store.access import session
from backend.views import report
from tests.helpers.people import LOCAL

ROBERTA = "nope/RoBERTa-large/mnli-snli-anli-fever/1"


@pytest.fixture()
def store(store_copy):
    return store_copy


def test_pinned_items_keep_order_and_export_with_captions(store):
    chart = alt.Chart(pd.DataFrame({"x": ["a", "b"], "y": [1, 3]})).mark_bar().encode(x="x", y="y").to_json()
    table = pd.DataFrame({"run": ["under_score & co", "plain"], "accuracy": [0.81234, 0.5], "n": [120, 80]})
    with session(store) as con:
        first = report.pin(con, "chart", "Bars", "dataset toy · n=2", chart, "overview", actor=LOCAL)
        second = report.pin(
            con, "table", "Runs 100%", "dataset toy · n=200", report.table_json(table), "explore", actor=LOCAL
        )
        report.move(con, second, -1, actor=LOCAL)
        items = report.items(con)
        assert list(items["item_id"]) == [second, first]
        with pytest.raises(report.ReportError, match="kind"):
            report.pin(con, "poem", "x", "y", "{}", actor=LOCAL)
        with pytest.raises(report.ReportError, match="content"):
            report.pin(con, "table", "x", "y", "not json", actor=LOCAL)
        assert len(report.items(con)) == 2  # the refused pins wrote nothing
    html = report.export_html(items)
    assert html.index("Runs 100%") < html.index("Bars") and "dataset toy · n=200" in html
    png = base64.b64decode(html.split("data:image/png;base64,")[1].split('"')[0])
    assert png.startswith(b"\x89PNG")  # the chart, rendered by vl-convert and embedded
    assert "under_score &amp; co" in html  # table cells escaped
    markdown = report.export_markdown(items)
    assert "| under\\_score \\& co |" in markdown and "*dataset toy · n=2*" in markdown  # escaped: shown as typed
    assert "](data:image/png;base64," in markdown
    latex = report.export_latex(items)
    assert "\\toprule" in latex and "\\midrule" in latex and "\\bottomrule" in latex
    assert "under\\_score \\& co & 0.812 & 120" in latex and "\\caption{Runs 100\\%. dataset toy · n=200}" in latex
    # issue 64, item 7: labels are the items' ids (a rename keeps a paper's \\ref); the chart is a figure, its PDF
    # beside the .tex
    assert f"\\label{{tab:report-{second}}}" in latex and f"\\label{{fig:report-{first}}}" in latex
    assert f"\\includegraphics[width=\\linewidth]{{figures/report-{first}.pdf}}" in latex and "graphicx" in latex
    with session(store) as con:
        report.rename(con, second, "Runs, renamed", actor=LOCAL)
        renamed = report.export_latex(report.items(con))
    assert f"\\label{{tab:report-{second}}}" in renamed and "Runs, renamed" in renamed
    files = report.export_latex_files(items)
    assert (
        set(files) == {"report.tex", f"figures/report-{first}.pdf"}
        and files[f"figures/report-{first}.pdf"][:4] == b"%PDF"
    )
    with session(store) as con:
        assert report.remove(con, first, actor=LOCAL) and list(report.items(con)["item_id"]) == [second]


def test_pin_from_explore_and_the_overview_then_export_from_the_report_page(store, open_page):
    at = open_page(store, "pages/explore.py", {"dataset": "nope", "run_a": ROBERTA})
    at.button(key="confusion-pin").click().run()
    assert not at.exception
    overview = open_page(store, "pages/overview.py")
    overview.button(key="models-pin").click().run()
    assert not overview.exception
    page = open_page(store, "pages/report.py")
    assert not page.exception and any("2 items" in m.value for m in page.markdown)
    with session(store) as con:
        items = report.items(con)
    assert list(items["title"]) == ["Confusion matrix: nope", "Models"] and list(items["kind"]) == ["chart", "table"]
    spec = json.loads(items["content"].iloc[0])
    assert spec["title"]["text"] == "Confusion matrix: nope" and ROBERTA in " ".join(spec["title"]["subtitle"])
    assert "models" in items["caption"].iloc[1]
    page.button(key=f"up-{items['item_id'].iloc[1]}").click().run()
    with session(store) as con:
        assert list(report.items(con)["title"]) == ["Models", "Confusion matrix: nope"]


def test_a_pinned_table_exports_every_row_its_caption_counts(store):
    """The issue's case: a 2,386-row table (NOPE's main split) exported whole to HTML, Markdown and LaTeX
    (a longtable, with its paragraph-long column as p{}); a table an earlier version cut at 2,000 rows says so."""
    long_text = "a premise long enough to be a paragraph in a printed table " * 2
    table = pd.DataFrame(
        {"id": [f"i{k}" for k in range(2_386)], "premise": [long_text] * 2_386, "right": [k % 2 for k in range(2_386)]}
    )
    legacy = table.head(2_000).to_json(orient="split", index=False)  # what earlier versions stored
    with session(store) as con:
        report.pin(
            con, "table", "Main split", "dataset nope · split main · n=2,386", report.table_json(table), actor=LOCAL
        )
        report.pin(con, "table", "Old pin", "dataset nope · n=2,386", legacy, actor=LOCAL)
        items = report.items(con)
    assert len(report.table_frame(items["content"][0])) == 2_386
    html, markdown, latex = report.export_html(items), report.export_markdown(items), report.export_latex(items)
    assert html.count("<td>i") == 2_386 + 2_000  # every row of each table (its id cell; "| id" heads the Markdown)
    assert markdown.count("| i") == 2_386 + 2_000 + 2 and latex.count("\\\\\n") >= 2_386 + 2_000
    first = latex.split("\\end{longtable}")[0]
    assert "\\begin{longtable}{" in first and "p{\\dimexpr" in first and "i2385 &" in first
    assert "first 2,000 rows only" in html and "first 2,000 rows only" in latex and "first 2,000 rows only" in markdown
    assert html.count("first 2,000 rows only") == 1  # the whole table says nothing of the kind
    short = report.latex(table.head(3), "Short", "n=3")
    assert "\\begin{table}" in short and "longtable" not in short


def test_a_latex_table_with_two_long_text_columns_and_nine_numbers_fits_the_page():
    """The numbers keep their width, the two text columns share the rest of the line, and the widths plus
    2\\tabcolsep a column sum to \\linewidth (pdflatex checks the print in tests/test_latex_fit.py)."""
    text = "a premise long enough to be a paragraph in a printed table"
    frame = pd.DataFrame({"premise": [text], "hypothesis": [text]} | {f"metric {k}": [0.123] for k in range(9)})
    numeric = list(frame.select_dtypes("number").columns)
    laid = latex.fit(frame, numeric)
    tex = report.latex(frame, "Wide", "n=1")
    assert tex.startswith("% \\usepackage{booktabs,array") and f"\\begin{{tabular}}{{{laid.spec}}}" in tex
    line, sep = laid.layout.line, laid.layout.sep
    assert abs(sum(laid.widths.values()) + 2 * sep * len(frame.columns) - line) < 0.01
    assert all(laid.widths[c] >= laid.layout.width("0.123") for c in numeric)  # a number is never cut
    assert laid.widths["premise"] == laid.widths["hypothesis"] > laid.widths["metric 0"]


def test_a_table_too_large_to_pin_is_refused_with_the_way_out(store, monkeypatch):
    monkeypatch.setattr(report, "MAX_ROWS", 10)  # the limit itself (100,000) would make a slow test
    with pytest.raises(report.ReportError, match="11 rows.*at most 10.*download it as CSV or Parquet"):
        report.table_json(pd.DataFrame({"x": range(11)}))
    with session(store) as con:
        assert report.items(con).empty  # nothing was stored


def test_a_pinned_slice_says_what_it_shows_and_can_be_renamed(store, open_page):
    """Explore's full-slice table is pinned under a title naming its dataset, split, filters, runs and rows; the
    Report page renames it (audited, as the person), and an empty title is refused naming the field."""
    at = open_page(store, "pages/explore.py", {"dataset": "nope", "split": "main", "run_a": ROBERTA})
    at.button(key="slice-pin").click().run()
    assert not at.exception
    with session(store) as con:
        pinned = report.items(con)
    assert list(pinned["title"]) == [f"nope, split main · {ROBERTA} · 2,386 rows"]
    item = pinned["item_id"].iloc[0]
    page = open_page(store, "pages/report.py")
    page.text_input(key=f"title-{item}").input("Table 3: NOPE main, RoBERTa's predictions")
    page.button(key=f"rename-{item}").click().run()
    assert not page.exception and any("NOPE main, RoBERTa's predictions** · table" in m.value for m in page.markdown)
    with session(store) as con:
        assert list(report.items(con)["title"]) == ["Table 3: NOPE main, RoBERTa's predictions"]
        with pytest.raises(report.ReportError, match="title: expected a non-empty title"):
            report.rename(con, item, "  ", actor=LOCAL)
        done = con.execute("SELECT action, target, detail FROM audit WHERE outcome = 'done' ORDER BY happened_at")
        assert done.fetchall()[-1] == ("edit report", item, "title: Table 3: NOPE main, RoBERTa's predictions")
