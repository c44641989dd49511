"""Overview: loaded datasets (counts per split and label), each run's headline metric with n and CI
beside the baselines, every run on every saved slice, missing datasets and models and how to add them."""

import streamlit as st

from backend.views import overview
from ui import charts, export, urls, widgets
from ui.resources import StoreLocked, query

SHOWN_RUNS = 150  # runs drawn per dataset and split (a store can hold thousands)

st.title("Presupposition Lab")
st.caption("Questions and sentences that take something for granted: CREPE, Syn-(QA)², NOPE, IfQA, FalseQA.")

try:
    loaded = query(overview.loaded_datasets)
except (FileNotFoundError, StoreLocked) as exc:  # an empty store is shown below, with how to fill it
    st.error(f"{widgets.message(exc)}. Then reload this page.")
    urls.stop()

st.subheader("Loaded datasets")
if loaded.empty:
    st.warning("The store is empty: run `python -m backend ingest` (see the README) and reload.")
else:
    columns = ["dataset_id", "title", "examples", "license", "citation", "source", "loaded_at", "normalised"]
    table = loaded[columns].rename(columns={"normalised": "text changed by the loader"})
    export.table(
        table.merge(query(overview.table_counts), on="dataset_id"),
        "Loaded datasets",
        charts.provenance("all", int(loaded["examples"].sum())),
        key="datasets",
    )
for row in loaded.itertuples():
    for note in row.notes or []:  # file paths; a generated dataset's origin, then its template
        first, _, rest = note.partition("\n")
        st.info(f"**{widgets.plain(row.dataset_id)}** — {widgets.plain(first)}")
        if rest.strip():
            with st.expander(f"{widgets.plain(row.dataset_id)}: the template it was generated from"):
                st.code(rest, language="yaml")

board = query(overview.headline)
if not board.empty:
    st.subheader("Runs: headline metric with 95% CI")
    st.caption(
        "Paper-reported runs are the predictions published with the papers; baselines are computed here. "
        "n is the number of evaluated items; the interval is Wilson's for a proportion (accuracy, exact match, "
        f"Recall@20) and a {overview.RESAMPLES:,}-resample bootstrap for other figures (macro-F1, unigram F1), none "
        "below 10 items. *baseline: random* is the one seeded draw stored as a run; the verdicts on the Model cards "
        "set runs against random guessing's expectation instead (a third for three labels). *bias* "
        f"names "
        f"the label a classifier gives to at least {overview.BIAS_AT_LEAST:.0%} of the items "
        f"({100 * overview.BIAS_OVER_GOLD:.0f} "
        "points more often than it is gold): its score then says little beyond that label's share. *unparsed* counts a "
        "prompted run's responses that gave no answer in its template's format (unparsed, refused, empty or "
        "failed), of n: they count as wrong; *cost* is what its requests for those items cost at the endpoint's "
        "registered prices (answers from the cache cost nothing)."
    )
    datasets = sorted(board["dataset"].unique())
    dataset = st.segmented_control(
        "Dataset",
        datasets,
        key="board",
        bind="query-params",
        format_func=widgets.option,
        default="nope" if "nope" in datasets else datasets[0],
    )
    shown = board[board["dataset"] == dataset]
    flagged = shown[shown["contaminated"] != ""]
    if not flagged.empty:
        with_flagged = st.toggle(
            f"Include contaminated runs ({flagged['run'].nunique():,})",
            key="contaminated",
            bind="query-params",
            help="Runs whose model was trained on this dataset: their scores are not evaluations.",
        )
        if with_flagged:
            st.warning(
                f"{overview.FLAG}: "
                + "; ".join(
                    f"{widgets.plain(r)} ({widgets.plain(why)})"
                    for r, why in flagged.drop_duplicates("run")[["run", "contaminated"]].itertuples(index=False)
                )
            )
        else:
            shown = shown[shown["contaminated"] == ""]
            st.caption(
                f"Left out: {', '.join(widgets.plain(r) for r in flagged['run'].unique())}, whose model was "
                "trained on this dataset (contaminated)."
            )
    metrics = shown.groupby("split")["metric"].nunique()
    for (split, metric), part in shown.groupby(["split", "metric"], sort=False):  # a QA run on qaqa: its own chart
        every, tag = part, split if metrics[split] == 1 else f"{split}-{metric}"
        if len(part) > SHOWN_RUNS:  # thousands of runs: a chart and table of the best, every run in the downloads
            part = part.nlargest(SHOWN_RUNS, "value")
            st.caption(
                f"{len(every):,} runs on {widgets.plain(split)}: the {SHOWN_RUNS} best are drawn and listed; "
                "the *all runs* downloads below the table hold every one."
            )
        caption = charts.provenance(dataset, int(part["n"].max()), {"split": split}, None)
        clicked = f"board-run-{dataset}-{tag}"
        whole, partial = part[part["part"] == ""], part[part["part"] != ""]
        if not partial.empty:
            st.caption(
                f"Not drawn or ranked: {len(partial):,} runs over part of {widgets.plain(split)} (see *part* at the "
                "end of the table); a score on fewer items is not comparable with the runs over every item."
            )
        part = part.sort_values("part", key=lambda p: p != "", kind="stable")  # the partial runs last
        export.chart(
            charts.interval_dots(whole, f"{metric} ({split})").add_params(charts.pick("run")),
            f"{dataset} {metric} on {split}",
            caption,
            key=f"board-{dataset}-{tag}",
            choose={"run": clicked},
        )
        if st.session_state.get(clicked) in set(part["run"]):
            run = st.session_state[clicked]
            st.page_link(
                "pages/explore.py",
                label=f"Explore {widgets.plain(run)}'s predictions on {widgets.plain(split)}",
                icon=":material/filter_alt:",
                query_params={"dataset": dataset, "run_a": run, "split": split},
            )
        links = [urls.page_url("explore", dataset=dataset, run_a=run, split=split) for run in part["run"]]
        export.table(
            part.round(4).assign(explore=links),
            f"{dataset} {metric} on {split}",
            caption,
            key=f"board-table-{dataset}-{tag}",
            column_config={"explore": st.column_config.LinkColumn("explore", display_text="open ↗")},
        )
        if len(every) > len(part):
            export.downloads(
                lambda every=every: every.round(4),
                f"{dataset} {metric} on {split} (all runs)",
                caption,
                key=f"board-all-{dataset}-{tag}",
                suffix=" (all runs)",
            )
    st.caption("Click a run's dot, or its *open* link, to browse its predictions in Explore.")

saved = query(overview.saved_slices)
if not saved.empty:
    st.subheader("Saved slices: every run on every slice")
    st.caption(
        "Slices saved from Explore (*Save this slice*); accuracy with a Wilson 95% interval over the slice's items "
        "the run labelled. Open a slice by name in Explore (`explore?slice=NAME`)."
    )
    export.table(
        saved.assign(open=[urls.page_url("explore", slice=name) for name in saved["name"]]),
        "Saved slices",
        charts.provenance("saved slices", len(saved)),
        key="saved-slices",
        column_config={"open": st.column_config.LinkColumn("Explore", display_text="open ↗")},
    )
    scores = query(overview.slice_matrix)
    if scores.empty:
        st.caption("No classification run labelled any item of the saved slices yet.")
    else:
        include = scores["contaminated"] == ""
        if not include.all():
            st.caption(
                f"Contaminated runs ({overview.FLAG}) are left out of the matrix: "
                + ", ".join(widgets.plain(r) for r in scores.loc[~include, "run"].unique())
            )
        shown = scores[include].assign(
            cell=lambda f: [
                f"{100 * a:.1f} [{100 * lo:.1f}, {100 * hi:.1f}] n={n:,}"
                for a, lo, hi, n in zip(f["accuracy"], f["low"], f["high"], f["n"])
            ]
        )
        grid = shown.pivot_table(index="run", columns="slice", values="cell", aggfunc="first").fillna("—")
        export.table(
            grid.reset_index(),
            "Accuracy (%) of every run on every saved slice",
            charts.provenance(
                ", ".join(sorted(scores["dataset"].unique())),
                int(scores["items"].max()),
                {"slices": ", ".join(saved["name"])},
            ),
            key="slice-matrix",
        )
        with st.expander("The same as numbers (one row per slice × run)"):
            export.table(
                scores.round(4),
                "Saved slices × runs",
                charts.provenance("saved slices", len(scores)),
                key="slice-matrix-long",
            )

labelled = loaded[loaded["examples"] > 0]
if not labelled.empty:
    st.subheader("Examples per split and gold label")
    for column, dataset_id in zip(st.columns(len(labelled)), labelled["dataset_id"]):
        column.markdown(f"**{widgets.plain(dataset_id)}**")
        column.dataframe(query(overview.split_label_table, dataset_id), width="stretch")

missing = query(overview.missing_datasets)
if not missing.empty:
    st.subheader("Missing datasets")
    for row in missing.itertuples():
        st.warning(
            f"**{widgets.plain(row.title)}** ({widgets.plain(row.dataset_id)}) is not loaded. To add it, "
            f"{widgets.message(row.how_to_add)}; "
            "then run `python -m backend ingest`."
        )

st.subheader("Models")
models = overview.model_status()
export.table(
    models,
    "Models",
    charts.provenance("models", len(models)),
    key="models",
    column_config={
        "available": st.column_config.CheckboxColumn(),
        "quality": st.column_config.TextColumn(width="large"),
    },
)
for row in models[~models["available"]].itertuples():
    st.caption(
        f"**{widgets.plain(row.model)}** is not available here: {widgets.message(row.remedy)}"
    )  # `commands` kept
