"""The report: pin a chart and a table from pages, reorder and remove items, and export HTML (images
embedded), Markdown and LaTeX (booktabs) whose content is checked."""
from __future__ import annotations

import base64
import json

import altair as alt
import pandas as pd
import pytest

from backend import report
from backend.store.access import session

ROBERTA = "nope/RoBERTa-large/mnli-snli-anli-fever/1"


@pytest.fixture()
def store(store_copy):
    return store_copy


def test_pinned_items_keep_order_and_export_with_captions(store):
    chart = alt.Chart(pd.DataFrame({"x": ["a", "b"], "y": [1, 3]})).mark_bar().encode(x="x", y="y").to_json()
    table = pd.DataFrame({"run": ["under_score & co", "plain"], "accuracy": [0.81234, 0.5], "n": [120, 80]})
    with session(store) as con:
        first = report.pin(con, "chart", "Bars", "dataset toy · n=2", chart, "overview")
        second = report.pin(con, "table", "Runs 100%", "dataset toy · n=200", report.table_json(table), "explore")
        report.move(con, second, -1)
        items = report.items(con)
        assert list(items["item_id"]) == [second, first]
        with pytest.raises(report.ReportError, match="kind"):
            report.pin(con, "poem", "x", "y", "{}")
        with pytest.raises(report.ReportError, match="content"):
            report.pin(con, "table", "x", "y", "not json")
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
    with session(store) as con:
        assert report.remove(con, first) and list(report.items(con)["item_id"]) == [second]


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
