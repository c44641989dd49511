"""A study's participant page, the only page their signed link opens: the instructions and consent, then one trial
at a time on the study's scale (a slider with end labels, a 7-point scale, or choices), drawn and timed in the browser
by ui.components.trial, then the design's demographic questions on one form (not timed), then the debrief and the
completion code. Every answer is stored when given, with its response time, so a reload continues where they were;
nothing else of the lab is shown. On every screen *Withdraw my answers* (with a confirm step) deletes their answers;
their link then shows only that they were withdrawn.

A general link's participant is sent on to their platform once finished: at once when the design has no debrief;
with a debrief, the page shows it and waits for *Continue* (it follows the completion URL), so the debrief is read
before the platform's page replaces it."""

from __future__ import annotations

import html

import streamlit as st

from backend.views import participate
from ui import identity, urls, widgets
from ui.components import trial
from ui.resources import StoreError, StoreLocked, store, store_ref

who = identity.actor()
study_id = participate.study_of(who)
if study_id is None:
    st.info("This page is for a study's participants: open the link you were sent.")
    urls.stop()


def refused(exc: Exception) -> None:
    st.error(widgets.message(participate.said(exc)))
    urls.stop()


# A general link (one URL on Prolific, SONA or MTurk; issue 56): the platform's id comes in the URL, and joining
# issues this browser a personal link's token, kept in a cookie and put in the URL in place of the general link, so
# only this browser goes on as that participant; reopening the general link here finds the cookie and resumes.
COOKIE_DAYS = 60
# Inside a platform's frame on another site (MTurk's HIT) a SameSite=Lax cookie is a third-party one and is not
# kept, so there the token goes in a partitioned cookie (CHIPS: SameSite=None; Secure; Partitioned), kept for the
# worker site alone: a reload of the HIT resumes, and no other site or browser holds it. Secure cookies need https,
# or localhost.
KEEP = (
    "const kept = document.getElementById('plab-kept').dataset; const framed = window.self !== window.top; "
    "document.cookie = kept.name + '=' + kept.token + '; path=/; max-age=' + kept.age + "
    "(framed ? '; SameSite=None; Secure; Partitioned' : '; SameSite=Lax');"
)


ANSWERED = "_study_answered"  # this session gave an answer (issue 63, item 3: a finished link reopens to withdraw)
CONTINUE = "display:inline-block;padding:0.4rem 1rem;border-radius:0.5rem;background:#ff4b4b;color:white"


def withdrawn(found) -> None:
    """What a withdrawn participant reads: their answers are gone, and what to do on the platform they came from."""
    st.info(participate.WITHDRAWN)
    if found.platform is not None and found.platform.name in participate.LEAVING:
        st.info(participate.LEAVING.get(found.platform.name, ""))


def switch_to(token: str) -> None:
    """Go on as the participant whose personal token this browser holds: the URL and the session carry it now."""
    st.query_params.clear()
    st.query_params[urls.LINK] = token
    st.session_state[identity.TOKEN] = token
    st.session_state["_study_cookie"] = token
    st.rerun()


def screening(found) -> dict | None:
    """The design's screening questions (issue 63, item 5), asked with the welcome: the answers, or None until every
    one is answered."""
    answers = {
        q.name: st.radio(
            widgets.plain(q.question), q.options, index=None, key=f"screen-{q.name}", format_func=widgets.plain
        )
        for q in found.screening
    }
    return None if None in answers.values() else answers


def start_general(params: dict, answers: dict | None = None) -> None:
    """Callback of Start on a general link: join with the URL's platform id (and the screening answers); the token
    is switched to next run."""
    st.session_state[ANSWERED] = True  # screened out at once: sent on to the platform straight away
    try:
        now = identity.actor()
        with store() as con:
            token = participate.join_general(con, store_ref(), participate.study_of(now), params, now, answers)
        st.session_state["_study_switch"] = token
    except (participate.StudyRefused, PermissionError, StoreLocked, StoreError) as exc:
        st.session_state["_study_error"] = participate.said(exc)


def general_page() -> None:
    """Who opens the general link: a platform's preview (instructions only), a browser that already holds the
    participant with this id (resumed), another browser with it (told so), or someone new (the welcome)."""
    if "_study_switch" in st.session_state:
        switch_to(st.session_state.pop("_study_switch"))
    params = {name: st.query_params.get(name) for name in st.query_params if name != urls.LINK}
    kept = st.context.cookies.get(participate.cookie(study_id))
    kept = kept if isinstance(kept, str) else None  # (a page run without a browser, as AppTest's, has no cookie)
    try:
        with store() as con:
            shown = participate.design(con, study_id)
            kind, token = participate.arrive(con, store_ref(), study_id, params, kept, who)
    except (participate.StudyRefused, PermissionError, StoreLocked, StoreError) as exc:
        refused(exc)
    if kind == "resume":
        switch_to(token)
    if "_study_error" in st.session_state:
        st.error(widgets.message(st.session_state.pop("_study_error")))
    if kind == "taken":
        st.title("You have already started this study")
        st.warning(participate.TAKEN)
        urls.stop()
    if kind == "withdrawn":
        st.title("Your answers were withdrawn")
        withdrawn(shown)
        urls.stop()
    st.title("Welcome")
    if shown.instructions:
        st.markdown(widgets.plain(shown.instructions))
    if kind == "preview":
        st.info("This is a preview. Accept the task to take part.")
        urls.stop()
    if shown.consent:
        st.subheader("Consent")
        st.markdown(widgets.plain(shown.consent))
    agreed = st.checkbox("I have read this and agree to take part.", key="consent") if shown.consent else True
    answers = screening(shown)
    ready = agreed and answers is not None
    st.button("Start", type="primary", disabled=not ready, on_click=start_general, args=(params, answers))
    if shown.consent and "no_consent" in shown.completion_codes:
        onward = participate.no_consent(shown, params)
        if onward is not None and st.button("I do not agree", key="no_consent"):
            st.info("Thank you for your time. You are taken back to where you found this study.")
            send_on(onward, at_once=True)
    urls.stop()


if participate.is_general(who):
    general_page()
if "_study_cookie" in st.session_state:  # this browser keeps its participant token for the general link
    kept_as = {"name": participate.cookie(study_id), "token": st.session_state.pop("_study_cookie")}
    st.html(  # the values as escaped attributes, read by a constant script (never text inside the script)
        f'<div id="plab-kept" data-name="{html.escape(kept_as["name"])}" data-token="{html.escape(kept_as["token"])}" '
        f'data-age="{COOKIE_DAYS * 86400:d}"></div><script>{KEEP}</script>',
        unsafe_allow_javascript=True,
    )


try:
    with store() as con:
        design = participate.design(con, study_id)
        screen = participate.screen(con, study_id, who)
except (participate.StudyRefused, PermissionError, StoreLocked, StoreError) as exc:
    refused(exc)


def acted(act) -> None:
    """Run `act(con, study, actor)` as whoever acts now (the link resolved again, not the one this page was drawn
    for), keeping a refusal for the next run to show in plain words."""
    try:
        now = identity.actor()
        with store() as con:
            act(con, participate.study_of(now), now)
    except (participate.StudyRefused, PermissionError, StoreLocked, StoreError) as exc:
        st.session_state["_study_error"] = participate.said(exc)


def start(answers: dict | None = None) -> None:
    """Callback of Start: join (with the screening answers)."""
    st.session_state[ANSWERED] = True
    acted(lambda con, study, now: participate.join(con, study, now, answers))


def submit(position: int, key: str) -> None:
    """Callback of Next: the answer and what the browser measured, stored at the position this tab showed."""
    sent = trial.answer_of(key) or {}
    measured = {name: sent.get(name) for name in ("moved", "rt_ms", "left_count", "left_ms")}
    measured |= {name: sent[name] for name in participate.TYPED if name in sent}  # a reading or Maze trial's regions
    acted(lambda con, study, now: participate.answer(con, study, position, sent.get("value"), measured, now))
    st.session_state[ANSWERED] = True  # a done screen right after this is sent on at once; reopened later, it waits


def send_demographics(questions) -> None:
    """Callback of the demographics form's *Continue*: the answers as the form holds them, checked and stored as one
    (a refusal names the question; the form keeps what was entered)."""
    answers = {question.name: st.session_state.get(f"demographic-{question.name}") for question in questions}
    acted(lambda con, study, now: participate.give_demographics(con, study, answers, now))
    st.session_state[ANSWERED] = True


def withdraw() -> None:
    """Callback of the confirm button: withdraw (their answers deleted)."""
    acted(participate.withdraw)


def withdraw_control() -> None:
    """*Withdraw my answers*, then a confirm step: on every screen."""
    with st.popover("Withdraw my answers"):
        st.markdown(
            "You may stop and withdraw at any time, without giving a reason. Every answer you gave in this study is "
            "then deleted, and this link takes no more answers."
        )
        st.button("Yes, withdraw and delete my answers", type="primary", key="withdraw", on_click=withdraw)


def to_platform(at_once: bool) -> None:
    """Send the participant on to their platform's completion URL, when they came through a general link."""
    try:
        with store() as con:
            onward = participate.completion(con, study_id, who)
    except (participate.StudyRefused, PermissionError, StoreLocked, StoreError):
        return
    if onward is not None:
        send_on(onward, at_once)


def send_on(onward, at_once: bool) -> None:
    """Send a finished general-link participant on to their platform: the browser follows the completion URL (for
    MTurk: posts the form to turkSubmitTo) `at_once`, and a visible link or button does it when a script cannot, or
    when the participant is to read a debrief first (then only the button does)."""
    st.markdown(
        "Taking you back to where you found this study…" if at_once else "When you have read this, press *Continue*."
    )
    if onward.fields:  # MTurk: a form POST of the assignmentId (values escaped; the URL is mturk.com's own)
        hidden = "".join(
            f'<input type="hidden" name="{html.escape(name)}" value="{html.escape(str(value))}">'
            for name, value in onward.fields.items()
        )
        st.html(
            f'<form id="plab-complete" method="POST" action="{html.escape(onward.url)}">{hidden}'
            f'<button type="submit">{"Submit the task" if at_once else "Continue"}</button></form>'
            + ('<script>document.getElementById("plab-complete").submit();</script>' if at_once else ""),
            unsafe_allow_javascript=True,
        )
        return
    if at_once:
        st.html(  # the URL as an escaped attribute, followed by a constant script
            f'<a id="plab-onward" href="{html.escape(onward.url)}"></a>'
            "<script>window.location.assign(document.getElementById('plab-onward').href);</script>",
            unsafe_allow_javascript=True,
        )
    # a plain link, followed in this tab (a link button opens a new one, leaving the study's tab behind: issue 63)
    st.html(f'<a id="plab-continue" href="{html.escape(onward.url)}" style="{CONTINUE}">Continue</a>')


if "_study_error" in st.session_state:
    st.error(widgets.message(st.session_state.pop("_study_error")))

if screen.kind == "withdrawn":
    st.title("Your answers were withdrawn")
    withdrawn(design)
    urls.stop()

if screen.pilot:
    st.caption("Pilot: you are previewing this study. Your answers are stored apart and never analysed.")

if screen.kind == "welcome":
    st.title("Welcome")
    if design.instructions:
        st.markdown(widgets.plain(design.instructions))
    if design.consent:
        st.subheader("Consent")
        st.markdown(widgets.plain(design.consent))
    agreed = st.checkbox("I have read this and agree to take part.", key="consent") if design.consent else True
    answers = screening(design)
    st.button("Start", type="primary", disabled=not agreed or answers is None, on_click=start, args=(answers,))
    withdraw_control()
    urls.stop()

if screen.kind == "screened":
    st.title("Thank you")
    st.info(participate.ENDED.get(participate.SCREENED, ""))
    if screen.code:
        st.markdown("Your code (enter it where you found this study):")
        st.code(screen.code, language=None)
    to_platform(at_once=st.session_state.pop(ANSWERED, False))
    urls.stop()

if screen.kind == "demographics":
    st.title("A few questions about you")
    st.markdown("Last, please answer these questions. Those marked *optional* may be left blank.")
    with st.form("demographics"):
        for question in design.demographics:
            asked = widgets.plain(question.question) + ("" if question.required else " (optional)")
            key = f"demographic-{question.name}"
            if question.kind == "choice":
                st.radio(asked, question.options, index=None, key=key, format_func=widgets.plain)
            elif question.kind == "text":
                st.text_input(asked, max_chars=participate.MAX_ANSWER, key=key)
            else:
                st.number_input(asked, min_value=question.min, max_value=question.max, value=None, key=key)
        st.form_submit_button("Continue", type="primary", on_click=send_demographics, args=(design.demographics,))
    withdraw_control()
    urls.stop()

if screen.kind == "done":
    st.title("Thank you!")
    st.success("Your answers are saved.")
    if screen.debrief:
        st.markdown(widgets.plain(screen.debrief))
    if screen.code:
        st.markdown("Your completion code (enter it where you found this study):")
        st.code(screen.code, language=None)
    # at once only straight after the last answer: a link reopened later (to withdraw, say) waits for Continue
    to_platform(at_once=not screen.debrief and st.session_state.pop(ANSWERED, False))
    withdraw_control()
    urls.stop()

scale = design.scale
st.progress(screen.position / max(screen.total, 1), text=f"Question {int(screen.position) + 1} of {int(screen.total)}")
if screen.trial_kind == "practice":
    st.caption("Practice: this question shows how the study works.")
key = f"trial-{screen.position}"  # a new component per position: no value, no key press carries over to the next
shown = {"key": key, "position": int(screen.position), "text": screen.text, "question": screen.question}
if screen.trial_kind == "native":
    shown |= {"control": "choices", "options": [[answer, answer] for answer in participate.NATIVE]}
elif scale.kind == "slider":
    shown |= {"control": "slider", "min": scale.min, "max": scale.max, "step": (scale.max - scale.min) / 100}
    shown |= {"left": scale.left, "right": scale.right, "require_movement": design.require_movement}
elif scale.kind == "likert":
    names = {p: f"{p:+d}" if p else "0" for p in scale.points}
    names[scale.points[0]] += f" ({scale.left})" if scale.left else ""
    names[scale.points[-1]] += f" ({scale.right})" if scale.right else ""
    shown |= {"control": "choices", "options": [[names[p], p] for p in scale.points]}
elif design.trial.kind == "forced_choice":  # sent back as the place in the order shown: no condition in the page
    shown |= {"control": "choices", "sentences": True, "text": ""}
    shown |= {"options": [[sentence, n] for n, sentence in enumerate(screen.shown["options"])]}
elif design.trial.kind in ("reading", "maze"):
    shown |= {"control": design.trial.kind, "question": ""} | screen.shown
else:
    shown |= {"control": "choices", "options": [[label, label] for label, _ in scale.options]}
trial.trial(key, shown, on_answer=lambda: submit(screen.position, key))
withdraw_control()
