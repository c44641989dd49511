"""Explore: slice a dataset by facets, run, predicted label, correctness and text.

Every control is bound to the URL (the widget key is the query-parameter name), so a pasted link
reproduces the view. The metric line and the confusion matrix cover the whole slice; choosing a
cell ("gold→predicted") narrows the table; selecting a row opens it on the Example page.
"""

import pandas as pd
import streamlit as st

from backend.views import explore
from ui import charts, export, identity, urls, widgets
from ui.resources import StoreLocked, query, store

NO_RUN = "(none)"
ARROW = "→"
SHOWN = 500
FACET_TITLES = {
    "split": "Split",
    "gold_label": "Gold label",
    "trigger_type": "Trigger type",
    "polarity": "Polarity",
    "adversarial": "Adversarial",
    "answer_type": "Answer type",
    "question_type": "Question type",
    "hop": "Hops",
    "ambiguous": "Ambiguous",
}
SORT_TITLES = {
    "example_id": "example id",
    "gold_label": "gold label",
    "label_a": "run A's label",
    "p_a_desc": "run A most confident first",
    "p_a_asc": "run A least confident first",
    "disagree_first": "A and B disagree first",
    "split": "split",
}


def pick_dataset() -> str:
    """The dataset selectbox (URL `dataset`); stops the page when the store is missing or empty."""
    return widgets.dataset_select()


def pick_runs(runs: pd.DataFrame, best: str | None) -> tuple[str | None, str | None, list[str]]:
    """Run A (default: the dataset's best model run, else the first classification run) and optional run B; run A's
    label order."""
    ids = [NO_RUN] + list(runs["run_id"])
    why = dict(zip(runs["run_id"], runs["contaminated"]))
    classified = runs["task"].isin(explore.CLASSIFICATION_TASKS)
    first = (
        classified & (runs["contaminated"] == "") if (classified & (runs["contaminated"] == "")).any() else classified
    )
    label = lambda run: f"{run}  {explore.FLAG}" if why.get(run) else run  # noqa: E731
    run_a = st.selectbox(
        "Run A",
        ids,
        index=ids.index(best) if best in ids else 1 + int(first.to_numpy().argmax()) if first.any() else 0,
        key="run_a",
        bind="query-params",
        format_func=label,
        help="The slice holds the items run A predicted; metrics and correctness are run A's. "
        f"{explore.FLAG}: the run's model was trained on this dataset.",
    )
    run_b = st.selectbox("Run B (compare)", ids, index=0, key="run_b", bind="query-params", format_func=label)
    run_a, run_b = (None if r == NO_RUN else r for r in (run_a, run_b))
    counts = runs.set_index("run_id")[["predictions", "parsed"]]
    for name, run in (("A", run_a), ("B", run_b)):
        if run and counts.loc[run, "parsed"] < counts.loc[run, "predictions"]:
            said = widgets.parsed(*counts.loc[run, ["parsed", "predictions"]].astype(int))
            st.caption(f"Run {name}: {widgets.plain(said)}")
    for run in (run_a, run_b):
        if run and why.get(run):
            st.warning(
                f"{widgets.plain(run)}: {explore.FLAG} ({widgets.plain(why[run])}); its numbers here are not an "
                f"evaluation."
            )
    labels = runs.loc[runs["run_id"] == run_a, "labels"]
    return run_a, run_b, list(labels.iloc[0]) if len(labels) else []


def _yes_no(value) -> str:
    return {True: "yes", False: "no"}.get(value, str(value))


def pick_filters(dataset: str, labels_a: list[str], run_b: str | None) -> tuple[tuple, str, str]:
    """A multiselect per facet with at least two values, predicted label, run A's and run B's correctness, search."""
    filters = []
    found = query(explore.facets, dataset)
    headline = found.headline_split
    for facet, values in found.values.items():
        if len(values) > 1:
            title = FACET_TITLES.get(facet, widgets.plain(facet.removeprefix(explore.EXTRA)))  # a user's column name
            chosen = st.multiselect(
                title,
                values,
                default=[headline] if facet == "split" and headline in values else [],  # NOPE: main, adv apart
                key=facet,
                bind="query-params",
                format_func=_yes_no,
                placeholder="all (pooled)" if facet == "split" else "all",
            )
            if facet == "split":
                widgets.pooled(chosen, headline)
            filters.append((facet, tuple(chosen)))
    chosen = st.multiselect(
        "Predicted label (run A)",
        labels_a,
        key="label_a",
        bind="query-params",
        placeholder="all",
        disabled=not labels_a,
    )
    filters.append(("label_a", tuple(chosen)))
    correctness = (
        st.segmented_control(
            "Run A is",
            explore.CORRECTNESS,
            default="all",
            key="correct",
            bind="query-params",
            disabled=not labels_a,
            help="Needs a run A that predicts labels (not answers or passages).",
        )
        or "all"
    )
    b_is = (
        st.segmented_control(
            "Run B is",
            explore.CORRECTNESS,
            default="all",
            key="correct_b",
            bind="query-params",
            disabled=not run_b,
            help="Needs a run B that predicts labels.",
        )
        or "all"
    )
    if run_b and b_is != "all":
        filters.append(("correct_b", ("true" if b_is == "correct" else "false",)))
    search = st.text_input(
        "Search input / hypothesis", key="q", bind="query-params", placeholder="words, case-insensitive"
    )
    return tuple(f for f in filters if f[1]), correctness if labels_a else "all", search


def show_metrics(summary: explore.SliceSummary, run_a: str | None) -> None:
    """n, and run A's accuracy and macro-F1 with their 95% bootstrap intervals."""
    n, acc, f1 = st.columns(3)
    n.metric("Examples in slice", f"{summary.n:,}")
    for column, name, est in ((acc, "Accuracy", summary.accuracy), (f1, "Macro-F1", summary.macro_f1)):
        if est is None:
            column.metric(f"{widgets.plain(name)} (run A)", "—", help="needs a classification run A and gold labels")
        else:
            column.metric(
                f"{widgets.plain(name)} (run A)",
                f"{100 * est.value:.1f}%",
                help=f"95% CI over n={est.n:,} items: Wilson's for accuracy (a proportion), a bootstrap of "
                f"{explore.RESAMPLES:,} resamples for macro-F1, none below 10 items",
            )
            column.caption(f"{widgets.plain(est.ci())} · n={est.n:,}")
    if summary.unlabelled:
        st.warning(
            f"Run A gave no label for {summary.unlabelled:,} of the {summary.scored:,} items scored here "
            f"({summary.unlabelled / summary.scored:.1%}): responses it could not parse, refusals, empty "
            "responses or errors. They count as wrong; filter by *correctness* to read them."
        )
    if run_a is None:
        st.caption("Choose a run A to see its accuracy, confusion matrix and predictions.")


def show_comparison(compare: explore.Comparison | None) -> None:
    """Run B against run A on the items both labelled: accuracies, B − A with a paired-bootstrap CI, McNemar."""
    if compare is None:
        st.caption("Run B labelled none of the items with a gold label in this slice: nothing to compare.")
        return
    diff = compare.difference
    a, b, delta = st.columns(3)
    a.metric("Accuracy A (items both labelled)", f"{100 * compare.accuracy_a.value:.1f}%")
    b.metric("Accuracy B", f"{100 * compare.accuracy_b.value:.1f}%", help="95% bootstrap CI below")
    b.caption(f"{widgets.plain(compare.accuracy_b.ci())} · n={compare.n:,}")
    delta.metric(
        "B − A",
        f"{100 * diff.difference:+.1f} pts",
        help=f"Paired bootstrap over the same items ({explore.RESAMPLES:,} resamples); McNemar's exact test on the "
        f"items "
        "exactly one run got right.",
    )
    delta.caption(
        f"95% CI [{100 * diff.low:+.1f}, {100 * diff.high:+.1f}] · paired bootstrap p "
        f"{widgets.plain(p_text(diff.p_value))} · "
        f"McNemar p {widgets.plain(p_text(compare.mcnemar_p))}"
    )


def p_text(p: float) -> str:
    """'< 0.001' below the resolution of the bootstrap (1,000 resamples), else '= 0.042'."""
    return "< 0.001" if p < 0.001 else f"= {p:.3f}"


def show_confusion(summary: explore.SliceSummary, dataset: str, caption: str) -> tuple:
    """The gold × predicted heatmap (counts) and the URL-bound cell picker; the cell's filters."""
    table = summary.confusion
    long = table.stack().rename("n").reset_index()
    long["cell"] = long["gold"].astype(str) + ARROW + long["predicted"].astype(str)
    counts = dict(zip(long["cell"], long["n"]))
    options = [f"{g}{ARROW}{p}" for g in summary.labels for p in summary.labels]
    cell = st.pills(
        "Confusion cell (gold→predicted; or click one) filters the table",
        options,
        key="cell",
        bind="query-params",
        format_func=widgets.option,
        help="Counts are in the heatmap: " + ", ".join(f"{widgets.plain(c)} {counts.get(c, 0):,}" for c in options),
    )
    long["chosen"] = long["cell"] == cell
    export.chart(
        charts.confusion,
        f"Confusion matrix: {dataset}",
        caption,
        key="confusion",
        choose={"cell": "cell"},
        args=(long, tuple(table.columns), tuple(table.index)),
    )
    if not cell:
        return ()
    gold, predicted = cell.split(ARROW)
    return (("gold_label", (gold,)), ("label_a", (predicted,)))


def warn_bias(summary: explore.SliceSummary) -> None:
    """Say so when a run gives one label to (almost) the whole slice: its accuracy is then mostly that label's share."""
    compare = summary.compare
    bias_b = compare and compare.shares.rename(columns={"gold": "gold_share", "run B": "predicted_share"})
    for who, bias, items in (
        ("run A", summary.bias, "this slice"),
        ("run B", bias_b, f"the {compare.n:,} items it labelled" if compare else ""),
    ):
        skew = explore.dominant_label(bias) if bias is not None else None
        if skew:
            st.warning(
                f"**Response bias:** {who} answers **{widgets.plain(skew['label'])}** for "
                f"{skew['predicted_share']:.1%} of "
                f"{items}, where {skew['gold_share']:.1%} of the gold labels are {widgets.plain(skew['label'])}; its "
                f"accuracy "
                "here says little beyond that share.",
                icon=":material/balance:",
            )


def show_bias(summary: explore.SliceSummary, dataset: str, caption: str) -> None:
    """Each label's share among the gold labels and among the runs' predictions (the Syn-(QA)² response-bias view)."""
    if summary.compare:  # over the items both runs labelled, so the three bars share one denominator
        shares = summary.compare.shares
        caption += f" · items both runs labelled: {summary.compare.n:,}"
    else:
        shares = summary.bias.rename(columns={"gold_share": "gold", "predicted_share": "run A"})
    who = [c for c in ("gold", "run A", "run B") if c in shares]
    long = shares.melt(id_vars="label", value_vars=who, var_name="who", value_name="share")
    export.chart(
        charts.label_shares,
        f"Label shares: {dataset}",
        caption,
        key="bias",
        args=(long, tuple(summary.labels), tuple(who)),
    )


def show_table(dataset: str, where: explore.Slice, sort: str, count: int, caption: str) -> None:
    """At most 500 rows with a link column; selecting a row opens the Example page; full-slice downloads."""
    frame = query(explore.slice_frame, where, sort=sort, limit=SHOWN)
    values = query(explore.facets, dataset).values  # facets constant over the dataset say nothing
    constant = [c for c in explore.FACETS if c != "gold_label" and c in frame and len(values.get(c, ())) < 2]
    frame = frame.drop(columns=constant).loc[:, lambda f: f.notna().any()]
    frame.insert(0, "open", widgets.example_links(dataset, frame["example_id"]))
    matches = f"**{count:,} examples match**" if count != 1 else "**1 example matches**"
    st.markdown(matches + (f"; the first {SHOWN} are shown (sorted by {SORT_TITLES[sort]})." if count > SHOWN else "."))
    config = {
        "open": st.column_config.LinkColumn("open", display_text="open ↗", width="small"),
        "input": st.column_config.TextColumn(width="large"),
        "p_a": st.column_config.NumberColumn(format="%.3f"),
        "p_b": st.column_config.NumberColumn(format="%.3f"),
    }
    event = st.dataframe(
        frame,
        hide_index=True,
        width="stretch",
        column_config=config,
        key="rows",
        on_select="rerun",
        selection_mode="single-row",
    )
    st.caption(widgets.plain(caption) + " · select a row to open it")
    if event.selection.rows:
        chosen = frame["example_id"].iloc[event.selection.rows[0]]
        # `dataset` is bound to a widget here, so Streamlit refuses to set it through query_params; the
        # Example page's `dataset` selectbox shares this one's key and state, and writes it back to the URL.
        st.switch_page("pages/example.py", query_params={"example": chosen})
    export.downloads(
        lambda: query(explore.slice_frame, where, sort=sort, limit=None).dropna(axis=1, how="all"),
        slice_title(where, count),  # the pinned table's title and the download's file name
        caption,
        key="slice",
        suffix=" (full slice)",
    )


def slice_title(where: explore.Slice, count: int) -> str:
    """What the listed table holds, as its pinned title says it: dataset, split, filters, runs and rows."""
    words = active(where.filters, where.search, where.correctness)
    split = words.pop("split", "")
    chosen = [f"{k}={v}" for k, v in words.items() if v not in ("", "all")]
    runs = " vs ".join(r for r in (where.run_a, where.run_b) if r)
    parts = [", ".join([where.dataset, f"split {split}" if split else "all splits", *chosen]), runs, f"{count:,} rows"]
    return " · ".join(p for p in parts if p)


def open_saved() -> None:
    """`?slice=NAME` opens a saved slice: its filters replace the URL's, and the page reruns with them."""
    name = st.query_params.get("slice")
    if not name:
        return
    try:
        params = query(explore.saved_slice_params, name)
    except explore.SliceError as exc:
        if " " in name:  # perhaps a name with a `+` typed into the address bar
            urls.read_as_plus()
        st.warning(f"{widgets.message(exc)}: showing Explore without it (the Overview lists the saved slices).")
        return
    st.query_params.clear()
    for key, value in params.items():
        st.query_params[key] = value
    st.rerun()


def save_slice(where: explore.Slice) -> None:
    """Name the current facet filters and search (run filters are not part of a slice) and store them."""
    with st.expander("Save this slice", icon=":material/bookmark_add:"):
        name = st.text_input("Slice name", key="slice_name", max_chars=80)
        replace = st.checkbox("Replace a saved slice of that name", key="slice_replace")
        if st.button("Save slice", key="slice_save"):
            try:
                with store() as con:
                    explore.save_slice(con, name.strip(), where, replace=replace, actor=identity.actor())
            except (explore.SliceError, PermissionError, StoreLocked) as exc:
                st.error(f"Not saved — {widgets.message(exc)}")
                return
            st.success(
                f"Saved {widgets.plain(name.strip())}: the Overview scores every run on it; `?slice=` opens it here."
            )


def active(filters: tuple, search: str, correctness: str) -> dict:
    """The filters in words, for provenance captions."""
    words = {facet: "|".join(_yes_no(v) for v in values) for facet, values in filters}
    return {**words, "search": search, "correct": correctness}


st.title("Explore")
open_saved()
with st.sidebar:
    dataset = pick_dataset()
    runs = query(explore.runs_for, dataset)
    run_a, run_b, labels_a = pick_runs(runs, query(explore.best_run, dataset))
    filters, correctness, search = pick_filters(dataset, labels_a, run_b)
    sort = st.selectbox(
        "Sort",
        list(explore.SORTS),
        key="sort",
        bind="query-params",
        help="; ".join(f"{widgets.plain(k)}: {widgets.plain(v)}" for k, v in SORT_TITLES.items()),
    )
    where = explore.Slice(dataset, filters, run_a, run_b, search, correctness)
    if identity.may("save slice"):
        save_slice(where)

try:
    summary = query(explore.slice_summary, where, tuple(labels_a))
except ValueError as exc:
    st.error(f"{widgets.message(exc)}. Change the filter in the sidebar, or open Explore without URL parameters.")
    urls.stop()
used_runs = [r for r in (run_a, run_b) if r]
show_metrics(summary, run_a)
widgets.worth(dataset, used_runs, splits=where.splits)  # the splits shown (none chosen: every one)
if run_b and summary.accuracy is not None:
    show_comparison(summary.compare)
warn_bias(summary)
if summary.n == 0:
    st.info("No examples match these filters: remove a filter, clear the search, or choose another run A.")
    urls.stop()

cell_filters = ()
if summary.confusion is not None:
    caption = charts.provenance(dataset, summary.scored, active(filters, search, correctness), used_runs)
    left, right = st.columns([3, 2])
    with left:
        cell_filters = show_confusion(summary, dataset, caption)
    with right:
        show_bias(summary, dataset, caption)

listed = where.narrowed(cell_filters)
count = query(explore.slice_count, listed) if cell_filters else summary.n
caption = charts.provenance(dataset, count, active(listed.filters, search, correctness), used_runs)
if cell_filters:  # the metric line above covers the whole slice; the table, one cell of it
    st.caption(
        f"Listed: the {count:,} items of confusion cell {widgets.plain(st.session_state.get('cell'))} "
        f"(gold→predicted), of the {summary.n:,} in the slice; the accuracy and macro-F1 above are the "
        "whole slice's."
    )
if count == 0:
    st.info("No examples in this confusion cell: choose another cell or clear it.")
else:
    show_table(dataset, listed, sort, count, caption)
on_map = {
    facet: [explore.url_value(facet, v) for v in values]
    for facet, values in filters
    if facet in query(explore.facets, dataset).values
}
st.page_link(
    "pages/map.py",
    label="See this slice highlighted on the embedding map",
    icon=":material/scatter_plot:",
    query_params={"dataset": dataset, **({"run_a": run_a} if run_a else {}), **on_map},
)
