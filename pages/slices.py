"""Slice finder: the facet combinations (up to three deep) where a run errs significantly more than it
does overall — or, with a run B, where B is worse than A (or where B's advantage shrinks) — each with n,
rate or B − A (accuracy, as on Explore), 95% interval, lift and a Benjamini–Hochberg-corrected p-value,
and a link that opens the slice in Explore."""

import pandas as pd
import streamlit as st

from backend.views import slices
from ui import charts, export, urls, widgets
from ui.charts import slices as slice_charts
from ui.resources import query

NO_RUN = "(none)"
SHOWN = 100
TESTS = {
    "one run": "Test: one-sided exact binomial of the slice's errors against the overall error rate.",
    "worse": "B − A is accuracy (negative: B is worse). Test: is the slice's B − A below 0? McNemar's exact "
    "test (one-sided) on the items exactly one run got right; lift = the slice's B − A minus the overall.",
    "shrinks": "B − A is accuracy (negative: B is worse). Test: is the slice's B − A below that of the items "
    "outside it (one-sided Welch t-test)? A slice where B is better, but less than overall, counts; "
    "lift = the slice's B − A minus the overall.",
}


def pick_splits(dataset: str) -> tuple[str, ...]:
    """The splits searched (URL `split`): the dataset's headline split by default; none chosen pools them all."""
    values = query(slices.facet_values, dataset).get("split", [])
    if len(values) < 2:
        return ()
    headline = query(slices.headline_split, dataset)
    chosen = st.multiselect(
        "Split",
        values,
        default=[headline] if headline in values else [],
        key="split",
        bind="query-params",
        placeholder="all (pooled)",
        help="Slices are found within these splits, and the overall rate or B − A is theirs.",
    )
    widgets.pooled(chosen, headline)
    return tuple(chosen)


def controls(dataset: str) -> tuple:
    runs = query(slices.runs_for, dataset)
    runs = runs[runs["task"].isin(slices.CLASSIFICATION_TASKS)]
    if runs.empty:
        st.info("No classification run on this dataset: run one (`python -m backend predict`) or import one.")
        urls.stop()
    ids = list(runs["run_id"])
    run_a = st.selectbox("Run A", ids, key="run_a", bind="query-params")
    run_b = st.selectbox(
        "Run B (compare B with A)", [NO_RUN] + [r for r in ids if r != run_a], key="run_b", bind="query-params"
    )
    run_b = None if run_b == NO_RUN else run_b
    question = st.radio(
        "Find slices where B's accuracy is",
        list(slices.QUESTIONS),
        key="question",
        bind="query-params",
        disabled=run_b is None,  # the URL value is the option: no format_func
        help="Both in accuracy, B − A (negative: B is worse), as on Explore. *Worse*: the slice's "
        "B − A is tested against 0 (McNemar's exact test). *Shrinks*: against the B − A of the "
        "items outside it (Welch), so a slice where B is better, but less than overall, counts.",
    )
    support = st.number_input("Least items in a slice", 5, 100_000, 30, 5, key="support", bind="query-params")
    depth = st.slider(
        "Facets per slice (at most)", 1, slices.MAX_DEPTH, slices.MAX_DEPTH, key="depth", bind="query-params"
    )
    others = ()
    if run_b is None:
        candidates = [r for r in ids if r != run_a and runs.set_index("run_id").loc[r, "source"] != "baseline"]
        others = tuple(
            st.multiselect(
                "Other runs' correctness as facets",
                candidates,
                default=[],
                key="others",
                help="Slices such as 'RoBERTa wrong ∧ trigger = clefts'. Each adds "
                "combinations to test (and to correct for).",
            )
        )
    return run_a, run_b, int(support), int(depth), others, question


def chart(table: pd.DataFrame, metric: str, overall: float, caption: str) -> None:
    top = table[table["significant"]].head(15)
    if top.empty:
        return
    export.chart(
        slice_charts.worst(top, metric, overall),
        f"The most significant slices ({metric}; dashed: overall)",
        caption,
        key="slices-chart",
    )


st.title("Slice finder")
with st.sidebar:
    dataset = widgets.dataset_select()
    splits = pick_splits(dataset)
    run_a, run_b, support, depth, others, question = controls(dataset)
found = query(slices.find, dataset, run_a, run_b, support, depth, others, None, question, splits)
split_param = query(slices.split_param, dataset, splits)
metric = "B − A" if run_b else "error rate"
if run_b:
    st.subheader(f"Slices {widgets.plain(slices.QUESTIONS[question])}")
a, b, c, d = st.columns(4)
a.metric("Items scored", f"{found.n:,}")
b.metric(
    "B − A accuracy, overall" if run_b else "Error rate, overall",
    f"{100 * found.overall:+.1f} pts" if run_b else f"{100 * found.overall:.1f}%",
)
c.metric(
    "Slices tested",
    f"{found.tested:,}",
    help=f"every combination of up to {depth:d} of {len(found.facets)} facets "
    f"with at least {support:,} items; the p-values are corrected for all of them (Benjamini–Hochberg)",
)
significant = found.slices[found.slices["significant"]] if found.tested else found.slices
d.metric("Significant (q < 0.05)", f"{int(significant['worse'].sum()):,}" if found.tested else "0")
st.caption(
    f"Searched in {found.seconds:.2f} s over the facets: "
    + ", ".join(widgets.plain(f) for f in found.facets)
    + ". "
    + TESTS[question if run_b else "one run"]
)
if not found.tested:
    st.info("No slice has that many items: lower the least number of items.")
    urls.stop()
worse = found.slices[found.slices["worse"]]
caption = charts.provenance(
    dataset,
    found.n,
    {"split": ", ".join(splits) or "all", "support": support, "depth": depth},
    [r for r in (run_a, run_b) if r],
)
chart(worse, metric, found.overall, caption)
shown = worse.head(SHOWN).copy()
shown.insert(
    0,
    "open",
    [
        urls.page_url("explore", **slices.explore_params(dataset, run_a, run_b, f, v, split_param))
        for f, v in zip(shown["facets"], shown["values"])
    ],
)
columns = ["open", "slice", "same as", "n", metric, "low", "high", "lift", "p", "q (BH)", "significant"]
if run_b:
    columns[5:5] = ["overall B − A", "A right, B wrong", "B right, A wrong"]
said = {"one run": "err more than overall", "worse": "have B worse than A", "shrinks": "shrink B's advantage"}
st.markdown(
    f"**{len(worse):,} slices** {said[question if run_b else 'one run']}; the {min(SHOWN, len(worse)):,} "
    "most significant:"
)
export.table(
    shown[columns],
    "Slices",
    caption,
    "slices",
    column_config={
        "open": st.column_config.LinkColumn("Explore", display_text="open ↗", width="small"),
        metric: st.column_config.NumberColumn(format="%.3f"),
        "overall B − A": st.column_config.NumberColumn(format="%.3f"),
        "low": st.column_config.NumberColumn(format="%.3f"),
        "high": st.column_config.NumberColumn(format="%.3f"),
        "lift": st.column_config.NumberColumn(format="%.2f"),
        "p": st.column_config.NumberColumn(format="%.2e"),
        "q (BH)": st.column_config.NumberColumn(format="%.2e"),
    },
)
chosen = st.selectbox("Open a slice in Explore", list(shown["slice"]), key="open_slice", index=0)
# a full link, as the table's: st.page_link drops the URL values of keys this page binds too (dataset, run_a)
st.link_button(
    f"Explore {widgets.plain(chosen)}",
    shown.loc[shown["slice"] == chosen, "open"].iloc[0],
    icon=":material/filter_alt:",
)
