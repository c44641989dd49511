"""A study's participant page, the only page their signed link opens: the instructions and consent, then one trial
at a time on the study's scale (a slider with end labels, a 7-point scale, or choices), then the completion code.
Every answer is stored when given, so a reload continues where they were; nothing else of the lab is shown."""

from __future__ import annotations

import streamlit as st

from backend.views import participate
from ui import identity, urls, widgets
from ui.resources import StoreError, StoreLocked, store

who = identity.actor()
study_id = participate.study_of(who)
if study_id is None:
    st.info("This page is for a study's participants: open the link you were sent.")
    urls.stop()


def refused(exc: Exception) -> None:
    st.error(widgets.message(exc))
    urls.stop()


try:
    with store() as con:
        design = participate.design(con, study_id)
        screen = participate.screen(con, study_id, who)
except (participate.StudyRefused, PermissionError, StoreLocked, StoreError) as exc:
    refused(exc)


def start() -> None:
    """Callback: join as whoever acts now (the link resolved again, not the one this page was drawn for)."""
    try:
        now = identity.actor()
        with store() as con:
            participate.join(con, participate.study_of(now), now)
    except (participate.StudyRefused, PermissionError, StoreLocked, StoreError) as exc:
        st.session_state["_study_error"] = str(exc)


def submit(position: int, key: str) -> None:
    given = st.session_state.get(key)
    try:
        now = identity.actor()
        with store() as con:
            participate.answer(con, participate.study_of(now), position, given, now)
    except (participate.StudyRefused, PermissionError, StoreLocked, StoreError) as exc:
        st.session_state["_study_error"] = str(exc)


if "_study_error" in st.session_state:
    st.error(widgets.message(st.session_state.pop("_study_error")))

if screen.kind == "welcome":
    st.title("Welcome")
    if design.instructions:
        st.markdown(widgets.plain(design.instructions))
    if design.consent:
        st.subheader("Consent")
        st.markdown(widgets.plain(design.consent))
    agreed = st.checkbox("I have read this and agree to take part.", key="consent") if design.consent else True
    st.button("Start", type="primary", disabled=not agreed, on_click=start)
    urls.stop()

if screen.kind == "done":
    st.title("Thank you!")
    st.success("Your answers are saved.")
    if screen.code:
        st.markdown("Your completion code (enter it where you found this study):")
        st.code(screen.code, language=None)
    urls.stop()

scale = design.scale
st.progress(screen.position / max(screen.total, 1), text=f"Question {int(screen.position) + 1} of {int(screen.total)}")
if screen.trial_kind == "practice":
    st.caption("Practice: this question shows how the study works.")
if screen.text:
    st.markdown(f"### {widgets.plain(screen.text)}")
key = f"answer-{screen.position}"  # a new widget per trial: no answer carries over to the next
if screen.trial_kind == "native":
    st.radio(widgets.plain(screen.question), participate.NATIVE, index=None, key=key, horizontal=True)
elif scale.kind == "slider":
    st.markdown(f"**{widgets.plain(screen.question)}**")
    st.slider(
        "Your answer",
        float(scale.min),
        float(scale.max),
        float(scale.min + scale.max) / 2,
        step=(scale.max - scale.min) / 100,
        format=" ",  # no number above the thumb: people place it between the end labels, as in the experiments
        key=key,
        label_visibility="collapsed",
    )
    left, right = st.columns(2)
    left.caption(f"← {widgets.plain(scale.left)}")
    right.caption(f"{widgets.plain(scale.right)} →", text_alignment="right")
elif scale.kind == "likert":
    points = scale.points
    names = {p: f"{p:+d}" if p else "0" for p in points}
    names[points[0]] += f" ({scale.left})" if scale.left else ""
    names[points[-1]] += f" ({scale.right})" if scale.right else ""
    st.radio(
        widgets.plain(screen.question),
        points,
        index=None,
        key=key,
        horizontal=True,
        format_func=lambda p: widgets.option(names[p]),
    )
else:
    st.radio(
        widgets.plain(screen.question),
        [label for label, _ in scale.options],
        index=None,
        key=key,
        horizontal=True,
        format_func=widgets.option,
    )
st.button(
    "Next",
    type="primary",
    on_click=submit,
    args=(screen.position, key),
    disabled=st.session_state.get(key) is None,
)
