"""Projection: for each trigger × operator, how often the presupposition survives — as people judge it
(crowd), as the dataset states it (gold, by construction), and as a chosen model predicts it — side by
side across every dataset with a projection spec (`backend.views.projection`). Cells click through to their
items; the model, the cell and the contamination switch are in the URL."""

from __future__ import annotations

import streamlit as st

from backend.views import projection as pj
from ui import charts, export, widgets
from ui.charts import projection as projection_charts
from ui.resources import query

OPERATORS = pj.OPERATORS


def pick(label: str, options: list[str], key: str, where=st) -> str | None:
    """A URL-bound cell picker (empty until chosen; the key is the URL parameter)."""
    return where.selectbox(label, options, index=None, key=key, bind="query-params", placeholder="choose…")


def heatmap(table, caption: str) -> None:
    export.chart(
        projection_charts.heatmap(table),
        "Presupposition survival by trigger and operator (blue: people; grey: gold by construction)",
        caption,
        "heat",
        choose={"dataset": "cell_dataset", "trigger": "cell_trigger", "operator": "cell_operator"},
    )


def profile_chart(frame, model: str, caption: str) -> None:
    """Per trigger of each dataset (grouped by family), survival by operator: people/gold (blue) and the
    model (orange), each with its CI."""
    figure = projection_charts.profile(frame)
    export.chart(figure, f"Projection profile: {model} against people / gold", caption, "profile")


def items_of(cell: dict, model: str | None, include: bool) -> None:
    if not all(cell.values()):
        st.info("Click a cell of the chart above, or choose a dataset, trigger and operator, to list its items.")
        return
    frame = widgets.linked_items(
        cell["dataset"], pj.cell_items, cell["dataset"], cell["trigger"], cell["operator"], model, include
    )
    if frame is None:
        return
    origin = widgets.generated_from(cell["dataset"])
    st.markdown(
        f"**{len(frame):,} items** in {widgets.plain(cell['dataset'])} · {widgets.plain(cell['trigger'])} · "
        f"{widgets.plain(cell['operator'])}"
    )
    export.table(
        frame,
        "Projection cell items",
        charts.provenance(origin, len(frame), cell, [model] if model else None),
        "cell-items",
        column_config={
            "open": st.column_config.LinkColumn("example", display_text="open"),
            "survives": st.column_config.NumberColumn(format="%.2f"),
        },
    )


st.title("Projection across operators")
st.caption(
    "How often a presupposition survives an operator, per trigger: people's judgements (crowd labels or "
    "ratings), the gold label where a dataset builds it in, and a model's share of E, each with a 95% interval "
    "over items: Wilson's where each item counts once as survived or not (gold, a model's label), a bootstrap "
    "where items carry a share of judgements (crowd labels, ratings). Datasets take part through the projection "
    "spec in their description; "
    "triggers are grouped into families named after NOPE's triggers (the mapping is in ARCHITECTURE.md)."
)
table = widgets.require(
    pj.human_table,
    empty="No dataset with a projection spec is loaded: ingest NOPE, IMPPRES, PROPRES "
    "or CommitmentBank (`python -m backend ingest`) and reload.",
)
choices = query(pj.model_choices)
names = list(choices["name"])
left, right = st.columns([3, 1], vertical_alignment="bottom")
model = left.selectbox(
    "Model (every run of it on these datasets; seeds averaged)",
    names,
    index=0 if names else None,
    key="model",
    bind="query-params",
    placeholder="no NLI runs on these datasets yet",
)
include = right.toggle(
    "Include contaminated runs",
    key="contaminated",
    bind="query-params",
    help="Cells where the model was trained on the dataset are left empty unless this is on.",
)
frame = table
if model:
    widgets.worth(None, tuple(choices.set_index("name").loc[model, "run_ids"]))
    frame = query(pj.profile, model, include)
    flagged = choices.set_index("name").loc[model, "contaminated"]
    if flagged:
        said = "; ".join(f"{widgets.plain(d)}: {widgets.plain(why)}" for d, why in flagged.items())
        st.warning(
            f"{widgets.plain(pj.FLAG)} — {said}. "
            + ("Shown, but these are not evaluations." if include else "Those cells are left out.")
        )
caption = charts.provenance(
    ", ".join(sorted(table["dataset"].unique())), int(table["n"].sum()), None, [model] if model else None
)
studies = query(pj.analysed)
for dataset, counted in studies.items():  # a study's answers: its analysed participants, and its exclusion log
    st.caption(f"{widgets.plain(dataset)} is a study's answers: {widgets.plain(counted)}.")
    st.page_link(
        "pages/study.py",
        label=f"{widgets.plain(dataset)}: the exclusion log",
        icon=":material/rule:",
        query_params={"study": dataset},
    )
caption += "".join(f" · {dataset}: {counted}" for dataset, counted in studies.items())  # exports say whom they count
heatmap(table, caption)
if model:
    profile_chart(frame, model, caption)
shown = frame.round(3)
export.table(
    shown,
    "Projection cells",
    caption,
    "cells",
    column_config={"contaminated": st.column_config.TextColumn(width="medium")},
)

st.subheader("Items behind a cell (click one, or choose)")
a, b, c = st.columns(3)
cell = {"dataset": pick("Dataset", sorted(table["dataset"].unique()), "cell_dataset", a)}
cell["trigger"] = pick(
    "Trigger",
    sorted(table.loc[table["dataset"] == cell["dataset"], "trigger"].unique()) if cell["dataset"] else [],
    "cell_trigger",
    b,
)
cell["operator"] = pick("Operator", OPERATORS, "cell_operator", c)
items_of(cell, model, include)

templated = query(pj.template_datasets)
if templated:
    st.subheader("A template's labels against people's")
    st.caption(
        "Per trigger × operator: the share of people's judgements whose label is not their row's template label "
        "(every item), and the share of items whose crowd majority is not the template's label with a 95% "
        "bootstrap CI over the items whose rows all give one template label (a tie that includes the template's "
        "label counts as agreeing). Choose a cell to list its items, those where people differ first."
    )
    a, b, c = st.columns(3)
    dataset = a.selectbox("Dataset", templated, key="template_dataset", bind="query-params")
    against = query(pj.template_vs_people, dataset)
    against_caption = charts.provenance(dataset, int(against["items"].sum()), None)
    export.table(against.round(3), f"Template against people ({dataset})", against_caption, "template-cells")
    trigger = pick("Trigger", sorted(against["trigger"].unique()), "template_trigger", b)
    operator = pick("Operator", list(dict.fromkeys(against["operator"])), "template_operator", c)
    frame = (
        widgets.linked_items(dataset, pj.template_cell, dataset, trigger, operator) if trigger and operator else None
    )
    if frame is not None:
        st.markdown(
            f"**{len(frame):,} items**, {int(frame['majority differs'].sum()):,} whose crowd majority differs from "
            f"the template, in {widgets.plain(trigger)} · {widgets.plain(operator)}"
        )
        export.table(
            frame,
            "Template against people: cell items",
            charts.provenance(dataset, len(frame), {"trigger": trigger, "operator": operator}),
            "template-items",
            column_config={"open": st.column_config.LinkColumn("example", display_text="open")},
        )
