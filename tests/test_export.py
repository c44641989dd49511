"""What a researcher downloads: tables keep their rows and carry the provenance caption; figures
render offline (vl-convert) to real PNG and SVG with the title and caption in them."""

from __future__ import annotations

import io
import zipfile

import altair as alt
import pandas as pd
import pyarrow.parquet as pq

from ui import charts, export

CAPTION = "dataset nope · filters: trigger_type=clefts · n=2 · runs: nope/baseline/always-E"
FRAME = pd.DataFrame(
    {
        "example_id": ["1", "1-neg"],
        "gold_label": ["E", None],
        "p_a": [0.75, 1.0],
        "input": ['He said "stop, #now"', "x"],
    }
)


def test_a_csv_loads_with_the_default_reader_and_its_provenance_rides_beside_it_in_the_zip():
    back = pd.read_csv(io.BytesIO(export.csv_bytes(FRAME)), dtype={"example_id": str})  # no skiprows, no comment
    pd.testing.assert_frame_equal(back, FRAME)
    with zipfile.ZipFile(io.BytesIO(export.zip_bytes(FRAME, "Slice: nope", CAPTION))) as packed:
        assert sorted(packed.namelist()) == ["slice-nope.csv", "slice-nope.provenance.txt"]
        pd.testing.assert_frame_equal(pd.read_csv(packed.open("slice-nope.csv"), dtype={"example_id": str}), FRAME)
        sidecar = packed.read("slice-nope.provenance.txt").decode()
    assert sidecar.splitlines()[:3] == ["Slice: nope", CAPTION, "rows: 2"]


def test_parquet_keeps_types_and_the_caption_in_its_metadata():
    table = pq.read_table(io.BytesIO(export.parquet_bytes(FRAME, CAPTION)))
    assert table.schema.metadata[b"provenance"].decode() == CAPTION
    pd.testing.assert_frame_equal(table.to_pandas(), FRAME)


def test_figures_render_to_png_and_svg_with_title_and_caption():
    chart = alt.Chart(FRAME).mark_bar().encode(x="p_a:Q", y="example_id:N").add_params(charts.pick("example_id"))
    figure = charts.titled(chart, "Accuracy per item", CAPTION)
    png = charts.to_png(figure)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000
    svg = charts.to_svg(figure).decode()
    assert svg.lstrip().startswith("<svg") and "Accuracy per item" in svg and "n=2" in svg


def test_a_cached_chart_spec_is_the_chart_streamlit_would_draw_and_exports_the_same():
    """export.chart(builder, args=...) draws charts.spec of the titled chart: valid Vega-Lite (the
    builders' output is validated here, as the cached path skips it) without Altair's default view size."""
    cells = pd.DataFrame({"gold": ["E", "E", "C", "C"], "predicted": ["E", "C", "E", "C"], "n": [5, 1, 2, 7]})
    cells = cells.assign(cell=cells["gold"] + "→" + cells["predicted"], chosen=[False, True, False, False])
    shares = pd.DataFrame(
        {"label": ["E", "C", "E", "C"], "who": ["gold", "gold", "run A", "run A"], "share": [0.4, 0.6, 0.5, 0.5]}
    )
    for figure in (
        charts.confusion(cells, ("E", "C"), ("E", "C")),
        charts.label_shares(shares, ("E", "C"), ("gold", "run A")),
    ):
        titled = charts.titled(figure, "Confusion matrix: nope", CAPTION)
        spec = charts.spec(titled)
        expected = titled.to_dict()  # validated against the Vega-Lite schema
        assert expected.pop("config") == {"view": charts.DEFAULT_VIEW} and "config" not in spec
        assert spec == expected
        svg = charts.to_svg(spec).decode()
        assert "Confusion matrix: nope" in svg and "n=2" in svg and charts.to_png(spec)[:4] == b"\x89PNG"


def test_csv_cells_that_start_like_a_formula_are_neutralised_but_numbers_are_not():
    frame = pd.DataFrame(
        {
            "=cmd": ['=HYPERLINK("http://x","y")', "+1+2", "-2+3", "@SUM(A1)", "\tx", "plain", None],
            "p": [-0.5, 1.0, -2.0, 0.0, 0.1, 0.2, 0.3],
        }
    )
    back = pd.read_csv(io.BytesIO(export.csv_bytes(frame)), keep_default_na=False)
    assert list(back.columns) == ["'=cmd", "p"]
    assert back["'=cmd"].tolist() == [
        '\'=HYPERLINK("http://x","y")',
        "'+1+2",
        "'-2+3",
        "'@SUM(A1)",
        "'\tx",
        "plain",
        "",
    ]
    assert back["p"].tolist() == [-0.5, 1.0, -2.0, 0.0, 0.1, 0.2, 0.3]
    assert not any(str(cell).startswith(export.FORMULA_START) for cell in back["'=cmd"])


def test_a_2_mb_streamed_answer_is_sent_to_the_page_a_few_times_and_cut_where_it_is_shown():
    from ui import widgets

    class Sent:  # stands in for st.empty(): what the page would send to the browser (the throttle is what is tested)
        def __init__(self):
            self.texts = []

        def text(self, body: str) -> None:
            self.texts.append(body)

    sent = Sent()
    show = widgets.streaming(sent, limit=20_000, every_s=0.0)
    piece = "x" * 2_000
    for n in range(1, 1_001):  # 2 MB in 1,000 pieces, each call with the whole text so far (as the client does)
        show(piece * n)
    assert len(sent.texts) == 11  # until the shown part is full: 10 pieces fit, the 11th says the rest is stored
    assert max(map(len, sent.texts)) < 20_100 and "more characters in the stored answer" in sent.texts[-1]
    assert widgets.shown("y" * 2_000_000).endswith("(1,980,000 more characters in the stored answer)")
