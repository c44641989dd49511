"""NOPE (Parrish et al., CoNLL 2021): the paper's figures and tables for one run or run group, and
the items behind any bar or cell (URL-bound pickers, so a pasted URL reproduces the view)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from backend.views import nope as nv
from ui import charts, export, urls, widgets
from ui.charts import nope as nope_charts
from ui.resources import query

LABELS, POLARITIES = nope_charts.LABELS, nope_charts.POLARITIES
SECTIONS = ["Figure 2", "Table 2", "Figure 3", "Table 3", "Figure 5", "Table 4", "Majority N", "Calibration"]
PAPER = "Parrish et al. 2021"


def pick(label: str, options: list[str], key: str, where=st) -> str | None:
    """A URL-bound cell picker in `where` (empty until chosen; the key is the URL parameter)."""
    return where.selectbox(label, options, index=None, key=key, bind="query-params", placeholder="choose…")


def caption(n: int, cell: dict | None = None, runs: list[str] | None = None) -> str:
    return charts.provenance("nope", n, cell, runs)


def examples(figure: str, cell: dict, key: str, choice: str | None = None) -> None:
    """The items behind the chosen cell, each row linking to the Example page."""
    if not any(cell.values()):
        st.info("Click a bar or cell above, or pick it with the boxes above, to list its items.")
        return
    frame = widgets.linked_items("nope", nv.examples_in, figure, choice=choice, **cell)
    if frame is None:
        return
    where = ", ".join(f"{k} = {v}" for k, v in cell.items() if v)
    st.markdown(f"**{len(frame):,} items**" + (f" in {widgets.plain(where)}" if where else ""))
    export.table(
        frame,
        f"NOPE items {figure}",
        caption(len(frame), cell, [choice] if choice else None),
        key,
        column_config={
            "open": st.column_config.LinkColumn("example", display_text="open"),
            "correct": st.column_config.NumberColumn(format="%.2f"),
        },
    )
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    chosen = left.selectbox(
        "Open one of these items", list(frame["example_id"]), key="cell_example", bind="query-params"
    )
    right.page_link(
        "pages/example.py",
        label="Open in Example",
        icon=":material/article:",
        query_params={"dataset": "nope", "example": chosen},
    )


def figure2(report: dict, choice: str) -> None:
    frame = report[nv.FIGURE2]
    chart = nope_charts.figure2(frame)
    export.chart(
        chart,
        "NOPE Figure 2: gold label per trigger and polarity",
        caption(int(frame["n"].sum())),
        "fig2",
        choose={"trigger_type": "cell_trigger", "polarity": "cell_polarity", "label": "cell_label"},
    )
    export.table(frame.round(1), nv.FIGURE2, caption(int(frame["n"].sum())), "fig2-table")
    st.subheader("Items behind a bar (click one, or choose)")
    a, b, c = st.columns(3)
    cell = {
        "trigger_type": pick("Trigger", sorted(frame["trigger_type"].unique()), "cell_trigger", a),
        "polarity": pick("Polarity", POLARITIES, "cell_polarity", b),
        "gold_label": pick("Label (empty = whole bar)", LABELS, "cell_label", c),
    }
    examples("figure2", cell, "fig2-items")


def table2(report: dict, choice: str) -> None:
    frame = report[nv.TABLE2].round(1)
    export.table(frame, nv.TABLE2, caption(int(frame["n"].iloc[-1])), "tab2")
    st.subheader("Pairs behind a cell")
    a, b = st.columns(2)
    cell = {
        "trigger_type": pick("Trigger", list(frame["trigger_type"]), "cell_trigger", a),
        "change": pick("Label change", ["no change", "E→{N,C}", "{N,C}→E", "other"], "cell_change", b),
    }
    examples("table2", cell, "tab2-items")


def figure3(report: dict, choice: str) -> None:
    frame = report[nv.FIGURE3]
    chart = nope_charts.figure3(frame)
    export.chart(
        chart,
        "NOPE Figure 3: rating spread per trigger and polarity",
        caption(int(frame["n"].sum())),
        "fig3",
        choose={"trigger_type": "cell_trigger", "polarity": "cell_polarity"},
    )
    export.table(frame.round(1), nv.FIGURE3, caption(int(frame["n"].sum())), "fig3-table")
    st.subheader("Items behind a bar (click one, or choose; most spread first)")
    a, b = st.columns(2)
    cell = {
        "trigger_type": pick("Trigger", sorted(frame["trigger_type"].unique()), "cell_trigger", a),
        "polarity": pick("Polarity", POLARITIES, "cell_polarity", b),
    }
    examples("figure3", cell, "fig3-items")


def table3(report: dict, choice: str) -> None:
    frame = report[nv.TABLE3].round(1)
    export.table(frame, nv.TABLE3, caption(int(frame["items"].sum())), "tab3")
    st.caption(
        "Unanimous: all five crowd labels agree. Individual = majority: share of single labels equal to the item's "
        "label."
    )


def figure5(report: dict, choice: str) -> None:
    frame = report[nv.FIGURE5]
    items = int(frame.loc[frame["trigger_type"] == "all", "n"].sum())  # main + adversarial
    pct = nope_charts.figure5_table(frame)
    chart = nope_charts.figure5(pct)
    export.chart(
        chart,
        f"NOPE Figure 5: accuracy per trigger ({choice})",
        caption(items, runs=[choice]),
        "fig5",
        choose={"trigger_type": "cell_trigger", "split": "cell_split"},
    )
    table = pct[["split", "trigger_type", "accuracy", "low", "high", "n"]].round(1)
    export.table(table, nv.FIGURE5, caption(items, runs=[choice]), "fig5-table")
    st.subheader("Items behind a bar (click one, or choose)")
    a, b = st.columns(2)
    cell = {
        "split": pick("Corpus", ["main", "adv"], "cell_split", a),
        "trigger_type": pick("Trigger", sorted(frame["trigger_type"].unique()), "cell_trigger", b),
    }
    examples("figure5", cell, "fig5-items", choice)


def table4(report: dict, choice: str) -> None:
    frame = report[nv.TABLE4]
    st.markdown(
        "**Accuracy (%) on projection subsets of the main negation pairs**, ours beside the paper's "
        f"Table 4 ({PAPER}; models trained on MNLI+SNLI+ANLI+FEVER)."
    )
    export.table(frame, nv.TABLE4, caption(int(frame["n"].sum()), runs=[choice]), "tab4")
    st.subheader("Items behind a cell")
    a, b = st.columns(2)
    cell = {
        "subset": pick("Subset", ["E→E", "E→{N,C}", "{N,C}→E"], "cell_subset", a),
        "polarity": pick("Member", POLARITIES, "cell_polarity", b),
    }
    examples("table4", cell, "tab4-items", choice)


def majority_n(report: dict, choice: str) -> None:
    frame = report[nv.MAJORITY_N]
    table = frame.assign(
        accuracy=(100 * frame["value"]).round(1), low=(100 * frame["low"]).round(1), high=(100 * frame["high"]).round(1)
    )[["run", "gold_label", "accuracy", "low", "high", "n"]]
    export.table(table, nv.MAJORITY_N, caption(int(frame["n"].sum()), runs=[choice]), "majn")
    st.subheader("The items")
    examples("majority_n", {}, "majn-items", choice)


def calibration(report: dict, choice: str) -> None:
    curve = report[nv.CURVE]
    chart = nope_charts.calibration(curve)
    n = int(curve.query("label == 'E'")["n"].sum())
    export.chart(chart, f"NOPE: crowd vs model label probabilities ({choice})", caption(n, runs=[choice]), "calib")
    export.table(report[nv.CALIBRATION].round(3), nv.CALIBRATION, caption(n, runs=[choice]), "calib-table")
    st.caption(
        "JSD: Jensen–Shannon divergence (bits) between the crowd's label shares and the model's probabilities; "
        "ECE: expected calibration error of the top label against the majority label (10 bins)."
    )


RENDER = dict(zip(SECTIONS, [figure2, table2, figure3, table3, figure5, table4, majority_n, calibration]))
MODEL_SECTIONS = {"Figure 5", "Table 4", "Majority N", "Calibration"}


def badge(row: pd.Series) -> None:
    if row["in_paper_tables"]:
        st.badge(f"In the paper's tables ({PAPER})", icon=":material/verified:", color="green")
    elif row["source"].startswith("paper"):
        st.badge(f"Paper predictions, not in its tables ({PAPER})", color="blue")
    else:
        st.badge(widgets.plain(row["source"]), color="gray")
    st.caption(
        f"{widgets.plain(row['kind'])} · model {widgets.plain(row['model'])} · training data "
        f"{widgets.plain(row['training data'])} · "
        f"{row['seeds']:,} run(s)" + (" · accuracy is the mean over seeds" if row["kind"] == "group" else "")
    )


st.title("NOPE: naturally occurring presuppositions")
st.info(
    "Figures 2–3 and Tables 2–3 come from NOPE's crowd ratings; model results come from the paper's stored "
    f"predictions ({PAPER}, `model_results/`) unless you pick another run. Live small models are weak on NOPE "
    "(a MiniLM cross-encoder scores below the always-E baseline), so read their runs as what they are."
)
choices = widgets.require(
    nv.run_choices,
    empty="No NOPE runs in the store: ingest NOPE with `python -m backend ingest --only nope` and reload.",
)

choice = st.selectbox(
    "Run or group",
    list(choices["name"]),
    key="run",
    bind="query-params",
    help="A group is every seed of one model × training data (the paper's tables show groups).",
)
badge(choices.set_index("name").loc[choice])
if choices.set_index("name").loc[choice, "contaminated"]:
    st.warning(
        f"{nv.FLAG}: {widgets.plain(choices.set_index('name').loc[choice, 'contaminated'])}; "
        "these numbers are not an evaluation of the model on NOPE."
    )
with st.expander("All NOPE runs and groups"):
    listing = choices.assign(run_ids=choices["run_ids"].map(", ".join))
    export.table(listing, "NOPE runs and groups", caption(len(listing)), "choices")
try:
    report = query(nv.report_for, choice)
except ValueError as exc:
    st.error(f"{widgets.message(exc)}. Pick another run or group.")
    urls.stop()
if report["note"]:
    st.warning(widgets.message(report["note"]))

for section, tab in zip(SECTIONS, st.tabs(SECTIONS, key="section", bind="query-params")):
    if tab.open:
        with tab:
            if section in MODEL_SECTIONS and nv.FIGURE5 not in report:
                st.info("This run did not predict every NOPE item: its model analyses are empty. Pick another run.")
            else:
                RENDER[section](report, choice)
