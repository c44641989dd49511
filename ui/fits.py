"""A mixed-effects model section (Study and Gradient pages): choose the fixed effect, slopes and coding; the kept fit
of the answers as they are now — formula, coding, fixed effects with SE, 95% CI and both p values, variance
components, convergence and singularity, each with downloads — or a button that fits it as a job, with its progress.
The numbers are `backend.analysis.mixed_model`'s; nothing is fitted while the page renders."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from backend.views import fits as fv
from backend.views import study as sv
from ui import export, identity, widgets
from ui.resources import query, store_ref

JOB = "_fit_job"


def section(dataset: str, analysed: str = "", pilot_only: bool = False) -> None:
    """The model of `dataset`'s answers (`analysed`: what the page says of a study's participants); `pilot_only`:
    a study before launch, whose pilot's answers are all there is to fit."""
    st.subheader("Mixed-effects model")
    found = query(fv.choices, dataset)
    if isinstance(found, str):
        st.info(f"No mixed model: {widgets.plain(found)}.")
        return
    labels = {m.label(): m for m in found}
    left, middle, right = st.columns(3, vertical_alignment="bottom")
    pick = left.selectbox("Fixed effect", list(labels), key="fit_condition", disabled=len(labels) == 1)
    slopes = middle.toggle(
        "By-participant slopes",
        value=True,
        key="fit_slopes",
        help="For the condition, where the design supports them (each participant saw at least 2 conditions); "
        "when the fit with slopes does not converge, intercepts only, with a note.",
    )
    coding = right.radio("Contrast coding", ["treatment", "sum"], key="fit_coding", horizontal=True)
    pilot = pilot_only or (
        query(sv.pilots, dataset)["answers"] > 0
        and st.toggle(
            "Pilot answers",
            key="fit_pilot",
            help="Fit the pilot's answers instead (never analysed with the real ones): what a power analysis may "
            "assume before launch.",
        )
    )
    if pilot_only:
        st.caption("Before launch: a model of the pilot's answers (never analysed with the real ones), whose estimates "
                   "the power analysis above can assume once it is fitted.")  # fmt: skip
    model = replace(labels[pick], slopes=slopes, coding=coding, pilot=pilot)
    target = query(fv.kept_path, model)
    fitted = fv.load(target)
    if fitted is None:
        _start(model)
        return
    if pilot:  # what the export says it is
        dataset, analysed = f"{dataset} (pilot answers)", "its pilots (never analysed with the real answers)"
    _show(fitted, dataset, analysed, query(fv.scale_note, model.dataset))


def _start(model) -> None:
    job = st.session_state.get(JOB)
    if job and fv.alive(job):
        _fitting(job)
        return
    st.info(
        "No fit of the answers as they are now. A fit takes seconds to a few minutes here (statsmodels: about 10 s "
        "for 5,000 ratings with slopes); it runs in a process of its own and is kept until the answers change. In a "
        f"terminal: python -m backend study model {widgets.plain(model.dataset)} --condition "
        f"{widgets.plain(model.condition)}{' --pilot' if model.pilot else ''}."
    )
    if job:  # the job ended without a fit of this model: say why
        st.error(f"The last fit did not finish: {widgets.plain(fv.last_line(job))}")
    if not identity.may("fit model"):
        st.info(f"Fitting a model needs the analyst role (yours: {widgets.plain(identity.actor().role)}).")
        return
    if st.button("Fit the model", type="primary", key="fit_start", icon=":material/functions:"):
        try:
            st.session_state[JOB] = fv.start(store_ref(), model, actor=identity.actor())
        except (ValueError, PermissionError) as exc:
            st.error(widgets.message(exc))
            return
        _fitting(st.session_state[JOB])


@st.fragment(run_every=2)
def _fitting(key: str) -> None:
    """The fit's progress; reruns the page when it has ended."""
    if fv.alive(key):
        st.info("Fitting in the background…", icon=":material/hourglass:")
        return
    st.rerun()


def _show(fitted, dataset: str, analysed: str, note: str) -> None:
    st.markdown(f"`{widgets.plain(fitted.formula)}`")
    st.caption(
        f"{widgets.plain(fitted.coding)}. {fitted.n:,} ratings from {fitted.participants:,} participants on "
        f"{fitted.items:,} items; {widgets.plain(fitted.method)}, statsmodels MixedLM "
        f"{widgets.plain(fitted.versions.get('statsmodels', ''))} "
        f"(fitted in {fitted.seconds:.1f} s; checked against R's lme4 in the tests)."
    )
    if not fitted.converged:
        st.warning("The fit did not converge: its numbers are not estimates to report.")
    if fitted.singular:
        st.warning(
            "Singular fit (as lme4's isSingular): a variance component is estimated at or near zero — the random "
            "effects are more than these data support; consider a simpler model."
        )
    caption = (
        f"dataset {dataset}: {fitted.formula}; {fitted.n:,} ratings, {fitted.participants:,} participants, "
        f"{fitted.items:,} items; REML; p_wald: Wald z test, p_lrt: likelihood-ratio test of the condition"
        + (f"; people: {analysed}" if analysed else "")
    )
    export.table(fitted.fixed, f"Fixed effects of {dataset}", caption, "fit-fixed")
    export.table(fitted.variance, f"Variance components of {dataset}", caption, "fit-variance")
    for line in [*fitted.notes, note]:
        if line:
            st.caption(widgets.plain(line))
    st.download_button(
        "Model summary (Markdown)", fitted.summary() + ("\n\n" + note if note else ""), f"{dataset}-model.md"
    )
