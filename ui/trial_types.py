"""The Study page's results of a forced choice, self-paced reading or Maze study (issue 63, item 6), in place of the
mean answer per condition and the linear mixed model a rating study has: the numbers are
`backend.analysis.trial_types`'s, each table with its n and what its interval is."""

from __future__ import annotations

import streamlit as st

from backend.views import study as sv
from ui import export, widgets
from ui.charts import reading
from ui.resources import query

NOT_RATING = (
    "The mean answer on a scale, the linear mixed model and the power analysis by simulation are for rating studies; "
    "this study's own analyses follow."
)


def section(study_id: str, kind: str) -> None:
    st.caption(NOT_RATING)
    if kind == "forced_choice":
        st.subheader("Choices per condition")
        export.table(
            query(sv.choice_shares, study_id).round(4),
            f"Choices of {study_id}",
            f"study {study_id}, after exclusions: times each condition was chosen out of the trials that offered it, "
            "Wilson 95% CI over trials (it treats one participant's trials as unrelated; the model below does not)",
            "study-choices",
        )
        fitted = query(sv.choice_fit, study_id)
        st.subheader("Mixed logistic model")
        if fitted is None:
            st.info(
                "With three or more sentences to choose from no mixed logistic model is fitted: the analysis engine "
                "(mixedlm) has no multinomial mixed model."
            )
            return
        table, text = fitted
        if table.empty:
            st.warning(widgets.plain(text))  # why it did not converge; no estimate is shown
            return
        st.markdown(widgets.plain(text))
        export.table(table, f"Choice model of {study_id}", f"study {study_id}: {text}", "study-choice-model")
        return
    times = query(sv.region_times, study_id)
    st.subheader("Reading times per region")
    caption = (
        f"study {study_id}, after exclusions: reading time per region and condition, from the key press that showed "
        "the region to the one that left it (the key events' timestamps, browser clock)"
        + ("; the Maze: regions chosen right only" if kind == "maze" else "")
    )
    if len(times):
        export.chart(reading.regions(times), "Mean reading time per region", caption, "study-regions")
    export.table(times.round(1), f"Reading times of {study_id}", caption, "study-regions-table")
    if kind == "maze":
        st.subheader("Sentences completed")
        export.table(
            query(sv.maze_completed, study_id).round(4),
            f"Maze completion of {study_id}",
            f"study {study_id}, after exclusions: Maze sentences completed without a wrong choice, Wilson 95% CI over "
            "sentences",
            "study-maze",
        )
