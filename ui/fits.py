"""A mixed-effects model section (Study and Gradient pages): choose the fixed effect, write the model in lme4's
syntax (the maximal structure the design justifies is proposed, and what each grouping factor is is said), the
coding and the reference level; see the kept fit of the answers as they are now — the formula as text to copy, the
engine, convergence, each coefficient's Satterthwaite t test, each term's likelihood-ratio test once, pairwise
comparisons, the random effects, each with downloads — or, for a fit that did not converge, why and the simpler
models to choose from, with no number; or a button that fits it as a job, with its progress. The numbers are
`backend.analysis.mixed_model`'s; nothing is fitted while the page renders."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from backend.views import fits as fv
from backend.views import study as sv
from ui import export, identity, widgets
from ui.resources import query, store_ref

JOB = "_fit_job"
PAPER = "_fit_paper_formula"
CODINGS = {"treatment": "treatment", "sum": "sum (deviation)", "helmert": "Helmert"}


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
    base = labels[pick]
    known = query(fv.columns, base)
    coding = middle.radio(
        "Contrast coding", list(CODINGS), format_func=lambda v: CODINGS.get(v, ""), key="fit_coding", horizontal=True,
        help="Of every factor in the fixed part. Treatment: each level against the reference; sum: each level "
        "against the mean of the level means (the reference coded -1); Helmert: each level against the mean of the "
        "levels before it.",
    )  # fmt: skip
    levels = ["", *known["levels"]]
    reference = right.selectbox(
        "Reference level", levels, key="fit_reference", format_func=lambda v: v or "the coding's default",
        disabled=coding == "helmert",
        help="Treatment: the level the others are compared with (default: the first in sorted order); sum: the "
        "level coded -1 (default: the last).",
    )  # fmt: skip
    st.caption(
        "Grouping factors and facets a formula may name: "
        + "; ".join(f"**{widgets.plain(name)}**: {widgets.plain(what)}" for name, what in known["groups"].items())
        + ". The response is **value**."
    )
    written = st.text_input(
        "Model (lme4's formula syntax)",
        value=known["default"],
        key=f"fit_formula_{base.condition}",
        help="Crossed or nested grouping factors ((1 | a/b)), correlated (1 + x | g) or uncorrelated (1 + x || g) "
        "slopes, interactions (a * b). Proposed: the maximal random-effects structure the design justifies (Barr et "
        "al. 2013): a slope for the condition by each grouping factor within whose levels it varies.",
    )
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
    formula = "" if written.strip() == known["default"] else written.strip()
    st.session_state[PAPER] = formula  # what the page's "For the paper" reports
    model = replace(base, formula=formula, coding=coding, reference="" if coding == "helmert" else reference,
                    pilot=pilot)  # fmt: skip
    problem = query(fv.formula_problem, replace(model, formula=written.strip()))
    if problem:
        st.error(widgets.message(problem))
        return
    fitted = fv.load(query(fv.kept_path, model))
    if fitted is None:
        _start(model, written.strip())
        return
    if pilot:  # what the export says it is
        dataset, analysed = f"{dataset} (pilot answers)", "its pilots (never analysed with the real answers)"
    _show(fitted, dataset, analysed, query(fv.scale_note, model.dataset), known["groups"])


def _start(model, formula: str) -> None:
    job = st.session_state.get(JOB)
    if job and fv.alive(job):
        _fitting(job)
        return
    st.info(
        "No fit of this model on the answers as they are now. A fit takes seconds here (about 1 s for 5,000 "
        "ratings with correlated slopes, with every test); it runs in a process of its own and is kept until the "
        f"answers change. In a terminal: python -m backend study model {widgets.plain(model.dataset)} --condition "
        f"{widgets.plain(model.condition)} --formula '{widgets.plain(formula)}' --coding {widgets.plain(model.coding)}"
        f"{' --reference ' + widgets.plain(model.reference) if model.reference else ''}"
        f"{' --pilot' if model.pilot else ''}."
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


def _show(fitted, dataset: str, analysed: str, note: str, groups: dict[str, str]) -> None:
    st.code(fitted.formula, language=None)  # the formula as text to copy (a copy button), never escaped Markdown
    counts = "; ".join(
        f"{widgets.plain(name)}: {n:,} levels ({widgets.plain(groups.get(name, ''))})"
        for name, n in fitted.groups.items()
    )
    st.caption(
        f"{fitted.n:,} answers; {counts}. {widgets.plain(fitted.coding) + '. ' if fitted.factors else ''}"
        f"REML, mixedlm {widgets.plain(fitted.versions.get('mixedlm', ''))} (checked against R's lme4 and lmerTest "
        f"in the tests), fitted in {fitted.seconds:.1f} s."
    )
    if not fitted.converged:
        st.error(
            "The fit did not converge, so it has no estimates to report: "
            + "; ".join(widgets.plain(check) for check in fitted.checks)
        )
        if fitted.simpler:
            st.markdown("Simpler models to choose from (copy one into the model above):")
            for name, formula in fitted.simpler:
                st.caption(widgets.plain(name))
                st.code(formula, language=None)
        return
    st.caption("Convergence: " + "; ".join(widgets.plain(check) for check in fitted.checks) + ".")
    if fitted.singular:
        st.warning(
            "Singular fit (as lme4's isSingular): a variance component is estimated at zero, or a correlation at ±1 — "
            "the random effects are more than these data support. lme4 reports such a fit too; a simpler model may "
            "be the one to report."
        )
    caption = (
        f"dataset {dataset}: {fitted.formula}; {fitted.n:,} answers; REML (mixedlm); t tests with Satterthwaite's "
        "degrees of freedom (as lmerTest)" + (f"; people: {analysed}" if analysed else "")
    )
    export.table(_printed(fitted.fixed), f"Fixed effects of {dataset}", caption, "fit-fixed")
    tested = fitted.terms[fitted.terms["note"] == ""]
    if len(tested):
        export.table(
            _printed(tested.drop(columns="note")),
            f"Likelihood-ratio tests of {dataset}",
            f"{caption}; each term tested once: ML fits with and without it (as lme4's drop1)",
            "fit-terms",
        )
        for row in fitted.terms[fitted.terms["note"] != ""].itertuples():
            st.warning(f"{widgets.plain(row.term)}: not tested ({widgets.plain(row.note)}).")
    if len(fitted.pairwise):
        export.table(
            _printed(fitted.pairwise),
            f"Pairwise comparisons of {dataset}",
            f"{caption}; differences of estimated marginal means, p_adjusted by {fitted.correction} within each factor",
            "fit-pairs",
        )
    export.table(fitted.variance, f"Random effects of {dataset}", caption, "fit-variance")
    if len(fitted.correlations):
        export.table(fitted.correlations, f"Random-effect correlations of {dataset}", caption, "fit-correlations")
    for line in [*fitted.notes, note]:
        if line:
            st.caption(widgets.plain(line))
    st.download_button(
        "Model summary (Markdown)", fitted.summary(groups) + ("\n\n" + note if note else ""), f"{dataset}-model.md"
    )


def _printed(frame: pd.DataFrame) -> pd.DataFrame:
    """A table as a paper prints it: p values as '< .001' or three significant digits, the rest rounded."""
    out = frame.copy()
    for column in ("p", "p_adjusted"):
        if column in out:
            out[column] = out[column].map(fv.p_text)
    return out.round(dict.fromkeys(("estimate", "se", "low", "high", "t", "chi2"), 4) | {"df": 1})
