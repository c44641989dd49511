"""Retrieval: what BM25, dense and hybrid retrieval find for one question, side by side, with the
gold passage marked and its rank in each; Recall@K curves with 95% intervals from the stored
retrieval runs; and, for a retrieval-augmented QA run, every error attributed to a *retrieval miss*
(no gold passage among the passages the reader saw) or a *reading miss* (one was there). A click
on a bar of the attribution chart, or a pill, narrows the table; each row opens its example."""

from __future__ import annotations

import streamlit as st

from backend.views import retrieval as inspector
from ui import charts, export, widgets
from ui.charts import retrieval as retrieval_charts
from ui.resources import query, retrievers, store

DATASET = "ifqa"  # the dataset with gold passages (qrels) in the corpus; chosen below when there are several


def pick_question() -> tuple[str, list[str], str]:
    """An IfQA example (URL `example`) or a typed question (URL `q`); its gold passages."""
    left, right = st.columns([1, 3])
    example_id = left.text_input(
        "IfQA example id", key="example", bind="query-params", placeholder="e.g. S-dev-0"
    ).strip()
    typed = right.text_input(
        "…or type a question",
        key="q",
        bind="query-params",
        max_chars=1000,
        placeholder="If the Berlin Wall had not fallen, …",
    ).strip()
    if typed:
        return typed, [], "typed question (no gold passage)"
    if not example_id:
        return "", [], ""
    try:
        row = query(inspector.example_row, DATASET, example_id)
    except KeyError as exc:
        st.error(f"Example id: {widgets.message(exc.args[0])}")
        return "", [], ""
    return row["input"], query(inspector.gold_doc_ids, DATASET, example_id), f"{DATASET} {example_id}"


def side_by_side(question: str, gold: list[str], source: str) -> None:
    st.subheader("Hits side by side")
    k = st.slider("Hits per retriever", 1, 50, 10, key="k", bind="query-params")
    try:
        with st.spinner("Loading the retrieval indexes (once per server)…"):
            shared = retrievers()
    except FileNotFoundError as exc:
        st.error(widgets.message(exc))
        return
    with store() as con:
        hits, ranks = inspector.side_by_side(con, shared, question, k, gold)
    st.markdown(f"**{widgets.plain(source)}** — {widgets.plain(question)}")
    if gold:
        st.caption(f"{len(gold)} gold passage(s); ranks looked up within each retriever's top {inspector.GOLD_DEPTH}.")
    for column, (name, part) in zip(st.columns(len(shared)), hits.groupby("retriever", sort=False)):
        rank = ranks.loc[ranks["retriever"] == name, "gold_rank"].iloc[0]
        found = (
            "no gold passage"
            if not gold
            else (f"gold at rank {rank}" if rank else f"gold not in top {inspector.GOLD_DEPTH}")
        )
        with column:
            st.markdown(f"#### {widgets.plain(name)}\n{widgets.plain(found)}")
            for row in part.itertuples():
                st.markdown(f"**{row.rank:d}.** ({row.score:.3f}) {widgets.passage_markdown(row, 200)}")
    with st.expander("As a table (CSV/Parquet)"):
        export.table(
            hits, "Retrieved passages", charts.provenance(DATASET, len(hits), {"question": question[:80]}), key="hits"
        )


def recall_curves() -> None:
    st.subheader("Recall@K")
    split = st.selectbox("Split", ["all", "S-dev", "S-test"], key="split", bind="query-params")
    curves = query(inspector.recall_curves, DATASET, None if split == "all" else split)
    if curves.empty:
        st.info(
            "No stored retrieval runs: run `python -m backend index` (it evaluates BM25, dense and hybrid on IfQA)."
        )
        return
    figure = retrieval_charts.recall_curves(curves)
    caption = charts.provenance(
        DATASET,
        int(curves.groupby("retriever")["n"].max().iloc[0]),
        {"split": split},
        runs=sorted(set(curves["retriever"])),
    )
    export.chart(figure, "Recall@K by retriever", caption, key="recall")
    with st.expander("Table"):
        export.table(curves, "Recall at K", caption, key="recall-table")


def attribution() -> None:
    st.subheader("QA errors: retrieval miss or reading miss?")
    runs = query(inspector.qa_runs, DATASET)
    if runs.empty:
        st.info(
            "No retrieval-augmented QA run yet. Make one with `python -m backend predict --model smollm2-135m "
            "--dataset ifqa --split S-dev --retriever hybrid`, then reload."
        )
        return
    left, right = st.columns([3, 1])
    run_id = left.selectbox("QA run", list(runs["run_id"]), key="qa_run", bind="query-params")
    by = right.selectbox("Break down by", ["(none)", "answer_type", "split"], key="by", bind="query-params")
    frame = query(inspector.error_attribution, run_id)
    summary = inspector.attribution_summary(frame, None if by == "(none)" else by)
    caption = charts.provenance(DATASET, len(frame), {"by": by}, runs=[run_id])
    outcomes = list(summary["outcome"].unique())
    outcome = st.pills(
        "Show (or click a bar)", outcomes, key="outcome", bind="query-params", format_func=widgets.option
    )
    export.chart(
        retrieval_charts.attribution(summary, None if by == "(none)" else by, outcome),
        "Where QA errors come from",
        caption,
        key="attribution",
        choose={"outcome": "outcome"},
    )
    export.table(
        summary,
        "Attribution summary",
        caption,
        key="attribution-summary",
        column_config={c: st.column_config.NumberColumn(format="%.3f") for c in ("share", "low", "high")},
    )
    shown = frame if not outcome else frame[frame["outcome"] == outcome]
    shown = shown.assign(open=widgets.example_links(DATASET, shown["example_id"]))
    export.table(
        shown,
        "QA predictions with their outcome",
        charts.provenance(DATASET, len(shown), {"outcome": outcome}, runs=[run_id]),
        key="attribution-rows",
        column_config={"open": st.column_config.LinkColumn("open", display_text="open")},
    )
    st.caption("A row's *open* link shows the example with the passages each run retrieved, gold ones marked.")


st.title("Retrieval")
widgets.require(inspector.loaded_datasets, empty="The store is empty: run `python -m backend ingest` and reload.")
scored = query(inspector.datasets_with_gold)
if len(scored) > 1:
    DATASET = st.selectbox("Dataset (with gold passages)", scored, key="dataset", bind="query-params")
elif scored:
    DATASET = scored[0]
question, gold, source = pick_question()
if question:
    side_by_side(question, gold, source)
else:
    st.info(
        f"Type an example id of {widgets.plain(DATASET)} (e.g. S-dev-0 for IfQA) or a question to see the three "
        f"retrievers' hits side by side."
    )
recall_curves()
attribution()
