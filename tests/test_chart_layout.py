"""Charts laid out to be read (issue 26, item 5): the Projection heat map labels every operator column, NOPE
Figure 2's axis title sits clear of its labels, and a pinned chart on the Report page is drawn as its page drew
it (full width, its spec's height) rather than in a 270 × 140 box. Checked on the specs the pages send (the
pixels were checked by screenshots; a chart's layout has no DOM text to assert on)."""

from __future__ import annotations

import json

from backend.store.access import session
from ui import charts, export


def specs(at) -> dict[str, dict]:
    """The Vega-Lite specs a page sent, by the first line of their title."""

    def walk(node):
        yield node
        for child in getattr(node, "children", {}).values():
            yield from walk(child)

    found = {}
    for node in walk(at._tree):
        proto = getattr(node, "proto", None)
        if (
            proto is not None
            and getattr(proto, "DESCRIPTOR", None) is not None
            and proto.DESCRIPTOR.name == "VegaLiteChart"
        ):
            spec = json.loads(proto.spec)
            title = spec.get("title", {})
            found[(title.get("text") if isinstance(title, dict) else title) or ""] = spec
    return found


def encoding(spec: dict, channel: str) -> dict:
    layers = spec.get("layer", [spec])
    return next(layer["encoding"][channel] for layer in layers if channel in layer.get("encoding", {}))


def test_the_projection_heat_map_labels_every_operator(real_store, open_page):
    at = open_page(real_store, "pages/projection.py")
    heat = next(s for t, s in specs(at).items() if str(t).startswith("Presupposition survival"))
    x = encoding(heat, "x")
    assert x["axis"]["labelOverlap"] is False and x["axis"]["labelAngle"] == 0  # none hidden, none slanted
    assert heat["width"] >= 80 * 5  # room for "unembedded" over each of the five columns


def test_nope_figure_2_keeps_its_axis_title_clear_of_the_labels(real_store, open_page):
    at = open_page(real_store, "pages/nope.py")
    figure = next(s for t, s in specs(at).items() if str(t).startswith("NOPE Figure 2"))
    axis = encoding(figure, "y")["axis"]
    assert axis["titleX"] <= -axis["labelLimit"] + 30  # placed left of the widest label the axis allows


def test_a_pinned_chart_is_drawn_at_its_own_height():
    assert export.frame_height(charts.WIDTH // 3) == {"height": charts.WIDTH // 3 + 130}  # plot + title and axes
    assert export.frame_height(None) == {}


def test_the_overview_colours_and_names_every_run_an_imported_one_too(store_copy, open_page):
    """Issue 45, item 1: an imported run ("your import") had no colour and no legend entry, and every second run
    name was dropped from the y axis once 35 runs shared it."""
    import pandas as pd

    from backend.api import Lab

    lab = Lab(store_copy)
    examples = lab.examples("nope")
    said = ["C" if " not " in f" {h} " else "E" for h in examples["hypothesis"].fillna("")]
    assert lab.import_run(pd.DataFrame({"example_id": examples["example_id"], "label": said}), "nope", model="neg").ok
    at = open_page(store_copy, "pages/overview.py", {"board": "nope"})
    chart = next(s for t, s in specs(at).items() if str(t) == "nope accuracy on adv")
    board = lab.leaderboard()
    drawn = board[(board["dataset"] == "nope") & (board["split"] == "adv") & (board["contaminated"] == "")]
    assert "nope/user/neg" in set(drawn["run"]) and len(drawn) >= 35
    color = encoding(chart, "color")["scale"]
    assert sorted(color["domain"]) == sorted(set(drawn["kind"])) and "your import" in color["domain"]
    assert len(set(color["range"])) == len(color["range"]) == len(color["domain"])  # each kind its own colour
    axis = encoding(chart, "y")["axis"]
    assert axis["labelOverlap"] is False and chart["height"] >= charts.ROW * len(drawn)  # every run named


def test_the_projection_heat_map_keeps_gold_by_construction_apart_from_people(real_store, open_page):
    """Issue 45, item 11: IMPPRES rows (gold by construction) were coloured on people's scale."""
    at = open_page(real_store, "pages/projection.py")
    heat = next(s for t, s in specs(at).items() if str(t).startswith("Presupposition survival"))
    scale = encoding(heat, "color")["scale"]
    assert scale["domain"] == [0, 1, 2, 3] and len(set(scale["range"])) == 4  # two scales, apart
    from backend.analysis import projection
    from ui.charts import projection as projection_charts

    with session(real_store) as con:
        table = projection.human_table(con)
    drawn = projection_charts.heatmap(table).data
    gold = drawn["judged_by"].str.startswith("gold label")
    assert gold.any() and (~gold).any()  # IMPPRES is gold by construction; NOPE, CommitmentBank are people's
    assert (drawn["shade"] == drawn["human"] + gold * 2).all()


def test_a_share_of_none_of_twenty_items_is_not_pinned_to_zero():
    """Issue 45, item 11: a bootstrap of 0 of 20 items gave [0.000, 0.000]; a Wilson interval does not."""
    import numpy as np

    from backend.metrics.bootstrap import mean

    none = mean(np.zeros(20))
    assert none.value == none.low == 0 and 0.15 < none.high < 0.17 and none.n == 20
    some = mean(np.array([1.0] * 5 + [0.0] * 15))
    assert some.low < 0.25 < some.high
