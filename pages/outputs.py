"""Side by side: two runs' generated outputs (QA answers, written presuppositions and corrections) next
to the gold, with per-item scores, the words that differ, the human ratings from the Rate page,
filters such as "A right, B wrong", and the items they disagree on most first."""

import pandas as pd
import streamlit as st

from backend.views import outputs
from backend.views.pairs import diff_html
from ui import charts, export, judges, urls, widgets
from ui.resources import query

PER_PAGE = 20
SORTS = {"disagreement": "most disagreement first", "example_id": "example id"}
SCORE_NAMES = {"em": "exact match", "f1": "F1", "bleu": "BLEU"}


def pick_runs():
    available = widgets.require(
        outputs.runs,
        empty="No QA or writing run with outputs is stored: run one with "
        "`python -m backend predict --model smollm2-135m --dataset ifqa --task qa --limit 100` "
        "(see the README) or import one on the Import page.",
    )
    datasets = sorted(available["dataset_id"].unique())
    dataset = st.selectbox("Dataset", datasets, key="dataset", bind="query-params")
    runs = available[available["dataset_id"] == dataset]
    ids = list(runs["run_id"])
    run_a = st.selectbox("Run A", ids, key="run_a", bind="query-params")
    others = [
        r
        for r in ids
        if r != run_a and runs.set_index("run_id").loc[r, "task"] == runs.set_index("run_id").loc[run_a, "task"]
    ]
    run_b = st.selectbox("Run B", others, key="run_b", bind="query-params") if others else None
    return dataset, run_a, run_b, runs.set_index("run_id")[["quality", "task"]], datasets


def show_summary(result: dict, caption: str) -> None:
    if not result["scored"]:
        st.info(
            "No item here has gold answers or references: compare the outputs by reading them and by the Rate "
            "page's ratings."
        )
    columns = st.columns(len(result["means"]["a"]) * 2 + 1)
    columns[0].metric("Items both answered", f"{result['n']:,}")
    i = 1
    for side in ("a", "b"):
        for score, est in result["means"][side].items():
            shown = f"{est.value:.1f}" if score == "bleu" else f"{100 * est.value:.1f}%"
            columns[i].metric(
                f"{SCORE_NAMES[score]} ({side.upper()})",
                shown,
                help=f"mean over items, 95% bootstrap CI ({outputs.RESAMPLES:,} resamples)",
            )
            scale = 1 if score == "bleu" else 100
            columns[i].caption(f"[{scale * est.low:.1f}, {scale * est.high:.1f}]")
            i += 1
    counts = " · ".join(f"{widgets.plain(k)}: {v:,}" for k, v in result["outcomes"].items())
    st.caption(f"{counts} · McNemar p = {result['mcnemar_p']:.3g} · {widgets.plain(caption)}")


def show_item(row) -> None:
    left_html, right_html = diff_html(row.output_a, row.output_b)
    with st.container(border=True):
        st.markdown(f"**{widgets.plain(row.example_id)}** · {widgets.plain(row.outcome)} · {widgets.plain(row.input)}")
        st.caption(f"Gold: {widgets.plain(row.gold) or '—'}")
        a, b = st.columns(2)
        for column, side, text, rated in ((a, "a", left_html, row.rated_a), (b, "b", right_html, row.rated_b)):
            scores = (
                " · ".join(
                    f"{SCORE_NAMES[s]} {getattr(row, f'{s}_{side}'):.2f}"
                    for s in ("em", "f1", "bleu")
                    if hasattr(row, f"{s}_{side}") and pd.notna(getattr(row, f"{s}_{side}"))
                )
                or "no gold"
            )
            column.markdown(f"**{side.upper()}** — {scores}")
            column.html(f"<div style='white-space:pre-wrap'>{text or '<i>(empty)</i>'}</div>")  # escaped by diff_html
            column.caption(f"Ratings: {widgets.plain(rated)}" if rated else "Not rated yet (Rate page)")


st.title("Side by side")
st.caption(
    "Two runs' generated outputs on the same items. QA: exact match and token F1 against the acceptable "
    f"answers (right = exact match). Writing: unigram F1 and sentence BLEU against the gold presuppositions "
    f"and corrections, or the gold answers where a dataset has only those (right = F1 ≥ {outputs.RIGHT_F1}). "
    f"Struck-through words are only in A, marked words only in B."
)
asked = st.query_params.get("dataset")  # before the picker replaces a value it cannot take
with st.sidebar:
    dataset, run_a, run_b, about, datasets = pick_runs()
    quality = about["quality"]
    outcome = (
        st.segmented_control(
            "Show", ["all", *outputs.OUTCOMES, outputs.NO_GOLD], default="all", key="outcome", bind="query-params"
        )
        or "all"
    )
    sort = st.selectbox("Sort", list(SORTS), format_func=SORTS.get, key="sort", bind="query-params")
if asked and asked not in datasets and asked in widgets.loaded_dataset_ids():
    st.info(
        f"Side by side compares generated outputs (QA and writing runs); {widgets.plain(asked)} has none. Compare "
        f"its classification runs on Explore (run A and run B), or here the outputs on {widgets.plain(dataset)}."
    )
    st.page_link(
        "pages/explore.py",
        label=f"Compare runs on {widgets.plain(asked)} in Explore",
        icon=":material/filter_alt:",
        query_params={"dataset": asked},
    )
if run_b is None:
    st.info(f"Only one run of this task on {widgets.plain(dataset)}: run or import another to compare.")
    urls.stop()
try:
    frame = query(outputs.side_by_side, run_a, run_b)
except ValueError as exc:
    st.error(f"{widgets.message(exc)}.")
    urls.stop()
caption = charts.provenance(dataset, len(frame), {"outcome": outcome}, [run_a, run_b])
show_summary(outputs.summary(frame), caption)
for side, run in (("A", run_a), ("B", run_b)):
    if quality.get(run):
        st.caption(f"**{side}** {widgets.plain(run)}: {widgets.plain(quality[run])}")
judges.pairwise_block(run_a, run_b, dataset, about.loc[run_a, "task"])
shown = frame if outcome == "all" else frame[frame["outcome"] == outcome]
shown = (
    shown.sort_values(["disagreement", "example_id"], ascending=[False, True])
    if sort == "disagreement"
    else shown.sort_values("example_id")
)
if shown.empty:
    st.info("No item has this outcome: choose another.")
    urls.stop()
pages = max(1, -(-len(shown) // PER_PAGE))
page = st.number_input("Page", 1, pages, 1, key="page", bind="query-params") if pages > 1 else 1
st.markdown(f"**{len(shown):,} items**" + (f" · page {page:,} of {pages:,}" if pages > 1 else ""))
for row in shown.iloc[(page - 1) * PER_PAGE : page * PER_PAGE].itertuples():
    show_item(row)
with st.expander("All listed items as a table (CSV / Parquet / LaTeX)"):
    export.table(shown.drop(columns=["task"]), f"{dataset}: {run_a} vs {run_b}", caption, "outputs")
