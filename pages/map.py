"""Map: a dataset's inputs as a 2-D map of the bundled embedder's vectors (UMAP, or PCA as the fast
fallback), coloured by a run's correctness, the gold label or any facet. Drag a rectangle to list
the items inside it; Explore's facet filters (same URL parameters) highlight their points."""

import streamlit as st

from backend.views import map as embedding_map
from ui import charts, export, identity, urls, widgets
from ui.charts import map as map_charts
from ui.resources import query, store_ref

NO_RUN = "(none)"
SHOWN = 500


@st.fragment(run_every=3)
def computing(key: str) -> None:
    """The map job's progress; reruns the page when the map is cached."""
    if embedding_map.alive(key):
        widgets.job_progress("Computing the map in the background", embedding_map.last_line(key))
        return
    st.session_state.pop("map_job", None)
    st.rerun()


def missing(dataset: str, method: str) -> None:
    st.info(
        f"No {widgets.plain(method.upper())} map of {widgets.plain(dataset)} yet. Computing it embeds every item "
        "with the bundled embedder — the slow part, 20 to 90 items a second on 2 CPU cores (70 s for NOPE's "
        "2,732 items), shown with the time left — then reduces the vectors to 2-D (PCA: under a second; UMAP: "
        "about 25 s for NOPE). The embeddings are kept, so the other method needs only its reduction; the map is "
        "cached until the dataset changes. It runs in a process of its own; in a terminal: python -m backend map "
        f"{widgets.plain(dataset)} --method {widgets.plain(method)}."
    )
    job = st.session_state.get("map_job")
    if job and embedding_map.alive(job):
        computing(job)
        return
    if not identity.may("make map"):
        st.info(f"Computing a map needs the analyst role (yours: {widgets.plain(identity.actor().role)}).")
        return
    if st.button("Compute the map", type="primary", key="map_compute", icon=":material/scatter_plot:"):
        try:
            st.session_state["map_job"] = embedding_map.start_map(store_ref(), dataset, method, actor=identity.actor())
        except (ValueError, PermissionError) as exc:
            st.error(widgets.message(exc))
            return
        computing(st.session_state["map_job"])
    elif job:  # the job ended without writing the map: say why
        st.error(f"The map was not computed: {widgets.plain(embedding_map.last_line(job))}")


def colour_field(frame, run: str | None) -> str:
    facets = [c for c in frame.columns if c not in ("example_id", "x", "y", "input", "predicted", "correct")]
    options = (["correct"] if run else []) + sorted(facets, key=lambda c: c != "gold_label")  # the label first
    return st.selectbox(
        "Colour by",
        options,
        key="colour",
        bind="query-params",
        help="A run's correctness (right / wrong), the gold label or any facet",
    )


def highlight_filters(dataset: str) -> tuple:
    """Explore's facet multiselects (the same URL parameters), to highlight the points they select."""
    chosen = []
    for facet, values in query(embedding_map.facet_values, dataset).items():
        if 1 < len(values) <= 50:
            picked = st.multiselect(
                widgets.plain(facet.removeprefix(embedding_map.EXTRA)),
                values,
                key=facet,
                bind="query-params",
                placeholder="all",
                format_func=lambda v: {True: "yes", False: "no"}.get(v, str(v)),
            )
            if picked:
                chosen.append((facet, tuple(picked)))
    return tuple(chosen)


st.title("Map")
with st.sidebar:
    dataset = widgets.dataset_select()
    method = (
        st.segmented_control("Method", list(embedding_map.METHODS), default="umap", key="method", bind="query-params")
        or "umap"
    )  # no format_func: the URL keeps the id
    runs = query(embedding_map.runs_for, dataset)
    runs = runs[runs["task"].isin(embedding_map.CLASSIFICATION_TASKS)]
    run = st.selectbox("Run (correctness)", [NO_RUN] + list(runs["run_id"]), key="run_a", bind="query-params")
    run = None if run == NO_RUN else run
    st.caption("Highlight (Explore's filters)")
    filters = highlight_filters(dataset)
try:
    where = query(embedding_map.path, dataset, method)
except ValueError as exc:
    st.error(f"{widgets.message(exc)}.")
    urls.stop()
if not where.is_file():  # the file, not a cached answer: a map computed since shows at once
    missing(dataset, method)
    urls.stop()
frame = query(embedding_map.points, dataset, method, run, where.stat().st_mtime)
with st.sidebar:
    colour = colour_field(frame, run)
frame = frame.assign(highlighted=embedding_map.matches(frame, filters))
caption = charts.provenance(
    dataset,
    len(frame),
    {"method": method, "colour": colour, **{f: "|".join(map(str, v)) for f, v in filters}},
    [run] if run else None,
)
event = export.chart(
    map_charts.points(frame, colour, highlighted=bool(filters)),
    f"{method.upper()} map of {dataset}",
    caption,
    key="map",
    select=True,
)
if filters:
    st.caption(f"{int(frame['highlighted'].sum()):,} of {len(frame):,} points match the highlight filters.")
box = (event.selection.get("region") or {}) if event else {}
if box.get("x") and box.get("y"):
    inside = embedding_map.inside(frame, box)
    st.markdown(
        f"**{len(inside):,} items in the selected region**"
        + (f" (the first {SHOWN} shown)" if len(inside) > SHOWN else "")
    )
    table = inside.head(SHOWN).drop(columns=["x", "y", "highlighted"])
    table.insert(0, "open", widgets.example_links(dataset, table["example_id"]))
    export.table(
        table,
        f"Items in a region of the {method} map of {dataset}",
        caption,
        "map-region",
        column_config={"open": st.column_config.LinkColumn("open", display_text="open ↗", width="small")},
    )
else:
    st.caption("Drag a rectangle on the map to list the items inside it.")
