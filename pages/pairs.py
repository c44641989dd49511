"""Minimal pairs: pick a pair set and a run; the 2×2 outcome table, pair accuracy, flip rate and
McNemar's test; then the pairs side by side with the differing words highlighted. Every picker is
bound to the URL, so a pasted link reproduces the view."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from backend.views import pairs as pv
from ui import charts, export, urls, widgets
from ui.resources import query

PER_PAGE = 25
NOTES = {
    "negation": "member a is the non-negated item, b the negated one (same trigger, same hypothesis)",
    "adversarial": "member b's hypothesis is minimally changed so it is no longer presupposed",
    "minimal": "member a is a valid question, b the same question with one entity swapped (a false assumption)",
}


def percent(estimate) -> str:
    return "—" if math.isnan(estimate.value) else f"{100 * estimate.value:.1f}%"


def interval(estimate) -> str:
    return "no pairs" if estimate.n == 0 else f"{widgets.plain(estimate.ci())}, n={estimate.n:,}"


def summary_block(summary: dict, title: str, cap: str) -> None:
    """Metrics (pair accuracy, flip rate vs gold, McNemar) and the 2×2 table with downloads."""
    acc, flip, gold = summary["pair accuracy"], summary["flip rate"], summary["gold flip rate"]
    a, b, c, d = st.columns(4)
    a.metric(
        "Pairs",
        f"{summary['n']:,}",
        help=f"{widgets.plain(widgets.counted(summary['not predicted'], 'pair'))} without a prediction, left out",
    )
    b.metric("Pair accuracy (both right)", percent(acc), help=interval(acc))
    gap = (
        None
        if math.isnan(gold) or math.isnan(flip.value)
        else f"{100 * (flip.value - gold):+.1f} pts vs gold {100 * gold:.1f}%"
    )
    c.metric(
        "Prediction flip rate",
        percent(flip),
        delta=gap,
        delta_color="off",
        help=f"Share of pairs whose two predictions differ; {interval(flip)}. Gold labels differ in {100 * gold:.1f}%.",
    )
    d.metric(
        "McNemar p",
        f"{summary['McNemar p']:.3g}",
        help="Exact McNemar test: is 'a right only' as common as 'b right only'?",
    )
    left, right = st.columns([2, 3])
    with left:
        export.table(summary["table"], f"{title} 2x2", cap, "pairs-2x2")
    row = {
        "pairs": summary["n"],
        **summary["outcomes"],
        "pair accuracy": acc.value,
        "pair accuracy low": acc.low,
        "pair accuracy high": acc.high,
        "flip rate": flip.value,
        "flip rate low": flip.low,
        "flip rate high": flip.high,
        "gold flip rate": gold,
        "McNemar p": summary["McNemar p"],
    }
    with right:
        export.table(pd.DataFrame([row]).round(4), f"{title} summary", cap, "pairs-summary")


def text(value) -> str:
    return value if isinstance(value, str) else ""


def verdict(pred, right) -> str:
    if pred is None or (isinstance(pred, float) and math.isnan(pred)):
        return "no prediction"
    return f"predicted **{widgets.plain(pred)}** {'✓' if right else '✗'}"


def member(column, dataset: str, row, side: str, premise: str, hypothesis: str) -> None:
    """One member: role, gold label and prediction, the highlighted texts, and a link to the Example page."""
    column.markdown(
        f"**{widgets.plain(side)} · {widgets.plain(row[f'role_{side}'])}** — gold "
        f"**{widgets.plain(row[f'gold_label_{side}'])}** · "
        f"{verdict(row[f'pred_{side}'], row[f'right_{side}'])}"
    )
    body = f"<div>{premise}</div>" + (f"<div><i>Hypothesis:</i> {hypothesis}</div>" if hypothesis else "")
    column.html(body)
    column.page_link(
        "pages/example.py",
        label=f"Open {widgets.plain(row[f'example_{side}'])}",
        icon=":material/article:",
        query_params={"dataset": dataset, "example": row[f"example_{side}"]},
    )


def show_pair(dataset: str, row) -> None:
    """Both members side by side; removed words struck through on a, added words marked on b."""
    premise = pv.diff_html(text(row["input_a"]), text(row["input_b"]))
    hypothesis = pv.diff_html(text(row["hypothesis_a"]), text(row["hypothesis_b"]))
    facets = " · ".join(text(row[f]) for f in ("trigger_type", "hop") if text(row[f]))
    with st.container(border=True):
        st.markdown(
            f"{widgets.plain(row['pair_id'])} · {widgets.plain(facets or dataset)}"
            + (f" · **{widgets.plain(row['outcome'])}**" if text(row["outcome"]) else "")
        )
        left, right = st.columns(2)
        member(left, dataset, row, "a", premise[0], hypothesis[0])
        member(right, dataset, row, "b", premise[1], hypothesis[1])


def facet_filter(rows: pd.DataFrame, column: str, label: str, key: str, where) -> str | None:
    values = sorted(v for v in rows[column].dropna().unique())
    if len(values) < 2:
        return None
    return where.selectbox(label, values, index=None, key=key, bind="query-params", placeholder="all")


st.title("Minimal pairs")
st.caption("Two items that differ minimally: does the model's answer change when, and only when, the gold label does?")
sets = widgets.require(
    pv.pair_sets, empty="No pair sets in the store: ingest NOPE or Syn-(QA)² (`python -m backend ingest`) and reload."
)

top = st.columns([2, 3])
pair_set = top[0].selectbox(
    "Pair set",
    list(sets["pair_set"]),
    key="pairs",
    bind="query-params",
    help="dataset / kind / corpus split of member a",
)
info = sets.set_index("pair_set").loc[pair_set]
dataset, kind, split = info["dataset"], info["kind"], info["split"]
runs = query(pv.runs_for, dataset)
run = top[1].selectbox(
    "Run",
    list(runs["run_id"]),
    index=0 if len(runs) else None,
    key="run",
    bind="query-params",
    placeholder="no runs: gold labels only",
)
st.caption(
    f"{widgets.plain(widgets.counted(int(info['count']), 'pair'))}; "
    f"{NOTES.get(kind, f'a = {widgets.plain(info.role_a)}, b = {widgets.plain(info.role_b)}')}."
    + (
        " Run from the paper's tables (Parrish et al. 2021)."
        if run and runs.set_index("run_id").loc[run, "in_paper_tables"]
        else ""
    )
)
if run:
    widgets.worth(dataset, (run,))
origin = widgets.generated_from(dataset)

base = (("split", split),)
every = query(pv.pair_rows, dataset, kind, None, base)
f1, f2, f3 = st.columns([1, 1, 3])
base += (
    ("trigger_type", facet_filter(every, "trigger_type", "Trigger", "trigger", f1)),
    ("hop", facet_filter(every, "hop", "Hop", "hop", f2)),
)
filters = {k: v for k, v in base if v}
title = f"{dataset} {kind} pairs ({split})"
outcome = None
if run:
    try:
        summary = query(pv.pair_summary, dataset, kind, run, base)
    except ValueError as exc:
        st.error(f"{widgets.message(exc)}. Pick another run.")
        urls.stop()
    summary_block(summary, title, charts.provenance(origin, summary["n"], filters, [run]))
    options = list(pv.OUTCOMES) + ([pv.MISSING] if summary["not predicted"] else [])
    outcome = f3.segmented_control(
        "Outcome cell",
        options,
        key="outcome",
        bind="query-params",
        help="Pick a cell of the 2×2 table to list only its pairs",
    )
else:
    st.info(
        "No classification run for this dataset: showing gold labels only. Add one with `python -m backend predict`."
    )

rows = query(pv.pair_rows, dataset, kind, run, base + (("outcome", outcome),))
if rows.empty:
    st.info("No pairs match these filters: clear the trigger, hop or outcome filter.")
    urls.stop()
pages = math.ceil(len(rows) / PER_PAGE)
st.subheader(widgets.plain(widgets.counted(len(rows), "pair")) + (f" · {outcome}" if outcome else ""))
page = st.pagination(pages, key="page", bind="query-params") if pages > 1 else 1
page = min(max(page, 1), pages)
for _, row in rows.iloc[(page - 1) * PER_PAGE : page * PER_PAGE].iterrows():
    show_pair(dataset, row)
st.caption(
    f"Page {page:,} of {pages:,}, {PER_PAGE} pairs a page. Struck-through words are only in a, marked words only in b."
)
with st.expander("All listed pairs as a table (CSV / Parquet)"):
    export.table(
        rows,
        f"{title} list",
        charts.provenance(origin, len(rows), {**filters, "outcome": outcome}, [run] if run else None),
        "pairs-list",
    )
