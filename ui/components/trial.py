"""The participant page's trial: a bundled `st.components.v2` component (trial.js, trial.css beside this file) that
draws the item, its control and Next, and measures the answer in the browser (issue 56). Streamlit's own slider always
has a value, so it cannot tell an untouched slider from a chosen middle; this one shows none until it is moved."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import streamlit as st

HERE = Path(__file__).parent
RENDER = st.components.v2.component(
    "plab_trial",
    js=(HERE / "trial.js").read_text(),
    css=(HERE / "trial.css").read_text(),
    isolate_styles=False,  # in the page's own DOM: its text is the page's (find, read aloud, tested as such)
)


def trial(key: str, data: dict, on_answer: Callable[[], None]) -> None:
    """Draw one trial under widget `key` (one per position: nothing carries over to the next). `data`: key,
    position, control (slider | choices), text, question, and the slider's min, max, step, left, right,
    require_movement or the choices' options [[label, value sent]]. `on_answer` runs when Next is pressed; it reads
    `answer_of(key)`."""
    RENDER(key=key, data=data, on_answer_change=on_answer)


def answer_of(key: str) -> dict | None:
    """What Next sent for the trial drawn under `key`: position, value, moved, rt_ms, left_count, left_ms."""
    state = st.session_state.get(key)
    return None if state is None else state.get("answer")
