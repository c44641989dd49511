"""The Rate page's rating tasks: every task listed (whatever its run's source) with its progress, pick or create
one (overlap k, a sample, a guideline); in a task each rater is served the next item still short of k raters that
they have not rated, with the guideline, progress per rater and overall, and agreement over the task's items. A
rater's page names its task and items only by opaque handles. The logic is `backend.analysis.rating_tasks`'s."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from backend.views import rate
from ui import identity, urls, widgets
from ui.resources import StoreError, StoreLocked, query, store, store_ref

NONE = "(none: browse every output)"


def overview() -> None:
    """Every rating task, on any run (a model's, an import's, a paper's), with its progress and live links; each opens
    here with its run, where its agreement and links are."""
    found = query(rate.every_task)
    if found.empty:
        return
    found = found.assign(open=[urls.page_url("rate", run=r, task=t) for r, t in zip(found["run_id"], found["task_id"])])
    with st.expander(f"Rating tasks ({len(found):,})", icon=":material/assignment:"):
        st.dataframe(
            found[["open", *rate.EVERY_TASK, "created_by", "created_at"]],
            hide_index=True,
            column_config={
                "open": st.column_config.LinkColumn("open", display_text="open ↗", width="small"),
                "complete": st.column_config.NumberColumn("complete (k raters)"),
                "overlapping": st.column_config.NumberColumn("≥ 2 raters"),
                "overlap": st.column_config.NumberColumn("k"),
                "links": st.column_config.NumberColumn("live links"),
            },
        )


def picker(run_id: str) -> str | None:
    """The URL-bound task picker; the chosen task id or None."""
    found = query(rate.tasks, run_id)
    chosen = st.selectbox(  # options shown as their ids: Streamlit binds the shown text to the URL
        "Rating task",
        [NONE, *found["task_id"]],
        key="task",
        bind="query-params",
        help="A task hands out the run's outputs so that each is rated by k people; you get one item at a time.",
    )
    return None if chosen == NONE else chosen


def new_task_form(run_id: str) -> None:
    """Hand this run's outputs out to raters: overlap, a sample, the guideline."""
    with st.expander("New rating task"), st.form("new-task", border=False):
        overlap = st.number_input("Raters per item (overlap k)", 1, 20, 2)
        sample = st.number_input("Items (0 = every output)", 0, 1_000_000, 0)
        guideline = st.text_area("Guideline for the raters", max_chars=rate.MAX_GUIDELINE)
        if st.form_submit_button("Create task"):
            create(run_id, int(overlap), guideline, int(sample) or None)


def create(run_id: str, overlap: int, guideline: str, sample: int | None) -> None:
    try:
        with store() as con:
            task_id = rate.create_task(con, run_id, overlap, guideline, sample, actor=identity.actor())
    except (rate.RatingError, PermissionError, StoreLocked, StoreError) as exc:
        st.error(f"No task created: {widgets.message(exc)}.")
        return
    st.session_state["task"] = task_id
    st.rerun()


def served(run_id: str, task_id: str, rater: str) -> pd.Series | None:
    """The guideline, the task's progress, and the item served to this rater (None when none is left)."""
    state = query(rate.task_progress, task_id)
    task = state["task"]
    st.info(f"**Guideline:** {widgets.plain(task['guideline'])}")
    st.progress(
        state["complete"] / max(state["items"], 1),
        text=f"{state['complete']:,} of {state['items']:,} items rated by {int(task['overlap']):,} people; "
        f"{state['overlapping']:,} by two or more",
    )
    if len(state["raters"]):
        st.dataframe(state["raters"], hide_index=True)
    agreement = query(rate.task_agreement, task_id)
    if len(agreement):
        st.dataframe(agreement, hide_index=True)
    if not rater:
        return None
    try:
        with store() as con:  # a write: the item is claimed for this rater
            example_id = rate.next_item(con, task_id, rater, actor=identity.actor())
    except (rate.RatingError, PermissionError, StoreLocked, StoreError) as exc:
        st.error(f"No item served: {widgets.message(exc)}.")
        return None
    if example_id is None:
        st.success("Nothing left for you in this task: every item is rated by you or by enough people.")
        return None
    items = query(rate.targets, run_id)
    return items[items["example_id"] == example_id].iloc[0]


def blinded(who) -> None:
    """The Rate page of a rater or link holder: their assigned task's guideline, the item served to them (input and
    output only: no gold, no model score, no one else's ratings, no agreement), the scale, and their own progress."""
    with store() as con:
        assigned = rate.assigned(con, who)
    if not assigned:
        st.info("Nothing is assigned to you to rate. Whoever invited you can send you a link to a rating task.")
        return
    task_id = (  # shown by number: an id made before tasks' ids were random names the run
        assigned[0]
        if len(assigned) == 1
        else st.selectbox("Rating task", assigned, key="task", format_func=lambda t: f"Task {assigned.index(t) + 1}")
    )
    with store() as con:
        task = rate.brief(con, task_id)
        done, total = rate.done_by(con, task_id, who.id)
    st.info(f"**Guideline:** {widgets.plain(task['guideline'])}")
    st.progress(done / max(total, 1), text=f"You have rated {done:,} of {total:,} items.")
    if "saved_note" in st.session_state:
        st.toast(widgets.plain(st.session_state.pop("saved_note")), icon=":material/check:")
    example_id = None
    try:
        with store() as con:  # a write: the item is claimed for this rater
            example_id = rate.next_item(con, task_id, who.id, actor=who)
            item = rate.blind_item(con, task_id, example_id) if example_id else None
    except (rate.RatingError, PermissionError, StoreLocked, StoreError) as exc:
        st.error(f"No item served: {widgets.message(_blind_said(exc, task, example_id))}.")
        return
    if item is None:
        st.success("Nothing left for you in this task: thank you!")
        return
    _blind_form(task, item, who)


def _blind_said(exc: Exception, task: dict, example_id: str | None) -> str:
    """What a rater is told of a refusal: its message with the run, task and item ids it names left out."""
    said = str(exc)
    for name in (task["run_id"], task["task_id"], example_id):
        said = said.replace(name, "…") if name else said
    return said


def _blind_form(task: dict, item: dict, who) -> None:
    st.markdown(f"> {widgets.plain(item['input'])}")
    for field, title in (("context", "Context"), ("hypothesis", "Hypothesis")):
        if item[field]:
            st.markdown(f"**{title}:** {widgets.plain(item[field])}")
    with st.container(border=True):
        st.markdown("**Output to rate**")
        st.markdown(widgets.plain(item["output_text"] or "") or "—")
    key = f"blind-{rate.handle(store_ref(), task['task_id'], item['example_id'])}"  # names neither: see rate.handle
    with st.form(key, border=True):
        for criterion in task["criteria"]:
            scale = rate.RUBRIC[criterion]
            st.radio(
                widgets.plain(rate.criterion_name(criterion)),
                list(scale),
                index=None,
                horizontal=True,
                format_func=lambda v, scale=scale: f"{v:d} — {widgets.plain(scale[v])}",
                key=f"{key}|{criterion}",
            )
        st.text_input("Note (optional)", key=f"{key}|note", max_chars=2000)
        st.form_submit_button("Save and next", type="primary", on_click=_blind_save, args=(task, item, key))
    said = st.session_state.get("rate_error")
    if said and said[0] == key:
        st.error(f"Not saved: {widgets.plain(said[1])}.")


def _blind_save(task: dict, item: dict, key: str) -> None:
    """Callback: save as whoever acts now (the link or account, resolved again: never the one the page was drawn
    for, whose link may have been withdrawn since)."""
    values = {c: st.session_state.get(f"{key}|{c}") for c in task["criteria"]}
    try:
        who = identity.actor()
        with store() as con:
            rate.save(
                con,
                task["run_id"],
                item["example_id"],
                who.id,
                values,
                st.session_state.get(f"{key}|note") or None,
                loaded={},
                actor=who,
                task_id=task["task_id"],
            )
    except (rate.RatingError, PermissionError, StoreLocked, StoreError) as exc:
        st.session_state["rate_error"] = (key, _blind_said(exc, task, item["example_id"]))
        return
    st.session_state.pop("rate_error", None)
    st.session_state["saved_note"] = "Saved."


def links_form(task_id: str) -> None:
    """Signed links to this task for people without accounts (each opens only this task, blinded), and revoking."""
    with st.expander("Links for raters", icon=":material/link:"):
        with st.form("task-links", border=False):
            people = st.text_input("Rater ids, separated by spaces", max_chars=2000, placeholder="rater-1 rater-2")
            days = st.number_input("Valid for (days)", 1, 365, 14)
            made = st.form_submit_button("Create links")
        if made:
            try:
                with store() as con:
                    new = rate.make_links(
                        con, store_ref(), task_id, people.split(), float(days), actor=identity.actor()
                    )
            except (ValueError, PermissionError, StoreLocked, StoreError) as exc:
                st.error(f"No link made: {widgets.message(exc)}.")
            else:
                base = st.context.url.split("?")[0].rsplit("/", 1)[0] if st.context.url else "http://localhost:8501"
                st.caption("Send each person their own link (it opens this task only, blinded):")
                st.code("\n".join(f"{link.person}: {link.url(base)}" for link in new), language=None)
        found = query(rate.task_links, task_id)
        if found.empty:
            return
        st.dataframe(found, hide_index=True)
        live = list(found.loc[found["state"] == "live", "link_id"])
        if live:
            left, right = st.columns([3, 1], vertical_alignment="bottom")
            chosen = left.selectbox("Link", live, key="revoke_link")
            if right.button("Revoke", key="revoke_button", icon=":material/link_off:"):
                try:
                    with store() as con:
                        rate.revoke_link(con, chosen, actor=identity.actor())
                except (PermissionError, StoreLocked, StoreError) as exc:
                    st.error(f"Not revoked: {widgets.message(exc)}.")
                else:
                    st.rerun()
