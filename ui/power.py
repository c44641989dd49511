"""The Study page's power analysis, before launch: the study's design (conditions, items, Latin square or crossed)
simulated at several participant counts under assumed effects and variance components — typed, or what a study's
kept mixed-model fit estimates — each simulated study analysed by the analysis's own mixed model and test (or the
fast F1 test, named), as a job with a progress bar and the time left, then the power curve per contrast with exact
binomial 95% CIs. The numbers are `backend.metrics.power`'s."""

from __future__ import annotations

import streamlit as st

from backend.views import study as sv
from ui import export, identity, widgets
from ui.charts import power as power_charts
from ui.resources import query, store_ref

JOB = "_power_job"
TEST_NAMES = {"model": "the analysis's mixed model", "f1": "the fast F1 test"}
PAPER = "power_paper"
TYPED = "typed values"


def section(study_id: str) -> None:
    st.subheader("Power analysis")
    design = query(sv.power_design, study_id)
    if isinstance(design, str):
        st.info(f"No power analysis for this design: {widgets.plain(design)}.")
        return
    with st.expander("Simulate power at several participant counts", expanded=False):
        request = _request(study_id, design)
        if request is not None and identity.may("run power"):
            if st.button("Simulate", key="power_start", icon=":material/monitoring:"):
                try:
                    st.session_state[JOB] = sv.start_power(store_ref(), request, actor=identity.actor())
                except (ValueError, PermissionError) as exc:
                    st.error(widgets.message(exc))
        elif request is not None:
            st.info(f"Simulating needs the analyst role (yours: {widgets.plain(identity.actor().role)}).")
    key = st.session_state.get(JOB) or sv.power_latest(study_id)
    if key:
        _progress(study_id, key)
    runs = sv.power_runs(study_id)
    if runs:
        st.selectbox(
            "Power analysis for the paper", ["", *runs.values()], key=PAPER,
            format_func={"": "none", **{v: k for k, v in runs.items()}}.get,
            help="The run the methods text and the archive report (For the paper, below).",
        )  # fmt: skip


def _request(study_id: str, design: dict):
    conditions, own = design["conditions"], design["items"]
    k = len(conditions) if design["assignment"] == "latin" else 1
    fitted = query(sv.fitted_studies)
    source = st.selectbox(
        "Assume",
        [TYPED, *fitted],
        key="power_source",
        help="Typed effects and SDs, or what a study's kept mixed-model fit estimates (an earlier study's, this "
        "one's so far, or its pilot's answers — fit them under Mixed-effects model with Pilot answers on; the fit's "
        "reference condition is then the reference).",
    )
    left, middle, right = st.columns(3)
    counts_text = left.text_input(
        "Participant counts", " ".join(map(str, design["counts"])), key="power_counts",
        help=f"Whole numbers, spaced; multiples of the design's {k:,} list(s) fill each list equally.",
    )  # fmt: skip
    sims = middle.number_input("Simulations per count", 20, 5000, sv.DEFAULT_SIMS, step=20, key="power_sims")
    count = right.number_input(
        "Target items", k, 10_000, -(-own // k) * k, step=k, key="power_items",
        help=f"The study has {own:,}; a Latin square simulates a multiple of its {k:,} conditions.",
    )  # fmt: skip
    if count != own:
        st.caption(f"The study has {own:,} target items; this simulates the same design with {int(count):,}.")
    test = st.radio(
        "Each simulated study analysed by", list(sv.TESTS), key="power_test", horizontal=True,
        format_func=lambda v: TEST_NAMES.get(v, ""),
        help="The mixed model: each simulated study fitted by the model below and each contrast tested as the lab "
        "reports a real study (Satterthwaite t); about 0.05–0.25 s a study. F1: a by-participant t test, "
        "milliseconds a study; BENCHMARKS.md shows where it agrees with the model.",
    )  # fmt: skip
    formula = ""
    if test == "model":
        formula = st.text_input(
            "Analysis model (lme4's syntax over participant, item, condition, list, value)", "", key="power_formula",
            placeholder="empty: the generating model's structure, value ~ condition + (1 + condition || participant) "
            "+ (1 | item)",
        ).strip()  # fmt: skip
    try:
        counts = tuple(int(n) for n in counts_text.replace(",", " ").split())
    except ValueError:
        st.error(f"Participant counts: {widgets.plain(counts_text)!r}; expected whole numbers such as 20 40 60.")
        return None
    try:
        if source == TYPED:
            request = _typed(study_id, conditions, counts, int(sims), int(count), (test, formula))
        else:
            request = query(sv.power_request, study_id, counts, int(sims), int(count), (test, formula), *fitted[source])
    except ValueError as exc:
        st.error(widgets.message(exc))
        return None
    st.caption(
        f"Assumed, from {widgets.plain(request.source)}: {widgets.plain(sv.describe(request.assumed))}. Each simulated "
        f"study analysed by {widgets.plain(request.analysis())}."
    )
    return request


def _typed(study_id: str, conditions: list[str], counts: tuple[int, ...], sims: int, count: int, analysis):
    low, high = query(sv.scale, study_id)
    span = float(high - low)
    reference = st.selectbox("Reference condition", conditions, key="power_reference")
    st.caption(f"Answers on the study's scale ({low:g} to {high:g}); effects against {widgets.plain(reference)}.")
    columns = st.columns(4)
    intercept = columns[0].number_input(
        f"Mean in {widgets.plain(reference)}", float(low), float(high), float(low + span / 2), key="power_intercept"
    )
    others = [c for c in conditions if c != reference]
    effects = tuple(
        (c, columns[(i + 1) % 4].number_input(f"Effect of {widgets.plain(c)}", -span, span, span / 10, key=f"fx_{c}"))
        for i, c in enumerate(others)
    )
    sds = tuple(
        columns[i].number_input(f"SD {widgets.plain(name)}", 0.0, span, default * span, key=f"power_sd_{name}")
        for i, (name, default) in enumerate((("participant", 0.1), ("item", 0.1), ("slope", 0.05), ("residual", 0.25)))
    )
    return query(sv.typed_request, study_id, counts, sims, count, analysis, reference, intercept, effects, sds)


@st.fragment(run_every=2)
def _progress(study_id: str, key: str) -> None:
    found = sv.power_status(key)
    if found is None:
        if not sv.power_alive(key):
            st.error(f"The power simulation did not start: {widgets.plain(sv.power_last_line(key))}")
        return
    table = found["table"]
    if table is None:
        if not sv.power_alive(key):
            st.error(f"The power simulation stopped: {widgets.plain(sv.power_last_line(key))}")
            return
        eta = f", about {found['eta']:.0f} s left" if found["eta"] is not None else ""
        st.progress(
            found["done"] / max(found["total"], 1),
            text=f"Simulating: {found['done']:,} of {found['total']:,} studies{eta}",
        )
        return
    asked = found["request"]
    failed = int(table["failed"].max()) if "failed" in table else 0
    caption = (
        f"study {study_id}: power per contrast at α = 0.05, {int(table['sims'].iloc[0]):,} simulated studies per "
        f"count (95% CI: exact binomial); assumed ({asked['source']}): {sv.describe_assumed(asked['assumed'])}; "
        f"each simulated study analysed by {table['test'].iloc[0]}"
        + (
            f"; up to {failed:,} studies per count whose fit did not converge are left out (column failed)"
            if failed
            else ""
        )
    )
    export.chart(power_charts.curve(table), f"Power of {study_id}", caption, "power-curve")
    export.table(table.round(4), f"Power of {study_id}", caption, "power-table")
