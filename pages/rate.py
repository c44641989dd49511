"""Rate: rate a run's outputs one by one. Writing runs get CREPE's four aspects (0–3, the rubric
beside the form), other runs binary acceptability. A rater id, previous/next with keyboard shortcuts
(P / N, S saves and moves on), each save upserted atomically; a rejected rating says why and keeps what
was typed. Above: every rating task, whatever its run. Below: agreement between raters per criterion, mean ratings,
and the ratings as CSV/Parquet."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from backend.views import rate
from ui import charts, export, identity, judges, urls, widgets
from ui import rating_tasks as tasks
from ui.charts import rate as rating_charts
from ui.resources import StoreError, StoreLocked, query, store


def pickers() -> tuple[pd.Series, str | None, str]:
    runs = widgets.require(
        rate.rateable_runs,
        empty="No run has outputs to rate yet: ask the models on the "
        "Playground page, or run one with `python -m backend predict` (see the README).",
    )
    left, middle, right = st.columns([3, 1, 1])
    run_id = left.selectbox("Run", list(runs["run_id"]), key="run", bind="query-params")  # the id: a stable link
    run = runs.set_index("run_id").loc[run_id]
    parsed = widgets.parsed(int(run["parsed"]), int(run["n"]))
    left.caption(f"{widgets.plain(run['task'])} run · {run['n']:,} outputs to rate · {widgets.plain(parsed)}")
    items = query(rate.targets, run_id)
    splits = ["all"] + sorted(items["split"].dropna().unique())
    split = middle.selectbox("Split", splits, key="split", bind="query-params")
    who = identity.actor()
    if who.signed_in:  # on a lab server you rate as yourself, never as a name typed or put in the URL
        right.text_input("Rater id", value=who.id, disabled=True, help="Signed in: your ratings carry your e-mail.")
        return run, None if split == "all" else split, who.id
    rater = right.text_input(
        "Rater id",
        key="rater",
        bind="query-params",
        max_chars=64,
        placeholder="e.g. your initials",
        help="Letters, digits and . _ - + @; your ratings are kept per rater id.",
    )
    return run, None if split == "all" else split, (rater or "").strip()


def move(step: int, total: int) -> None:
    st.session_state["item"] = min(max(1, int(st.session_state.get("item", 1)) + step), total)


def navigator(total: int) -> int:
    left, middle, right, _ = st.columns([1, 2, 1, 4], vertical_alignment="bottom")
    left.button("Previous", on_click=move, args=(-1, total), shortcut="P", icon=":material/arrow_back:")
    position = middle.number_input(f"Item (of {total:,})", 1, total, key="item", bind="query-params")
    right.button("Next", on_click=move, args=(1, total), shortcut="N", icon=":material/arrow_forward:")
    return int(position)


def show_item(item: pd.Series) -> None:
    """The input, the gold references, and what the model produced."""
    st.markdown(f"**{widgets.plain(item['example_id'])}** · split {widgets.plain(item['split'] or '—')}")
    st.markdown(f"> {widgets.plain(item['input'])}")
    if isinstance(item.get("context"), str) and item["context"]:
        st.markdown(f"**Context:** {widgets.plain(item['context'])}")
    if isinstance(item.get("hypothesis"), str) and item["hypothesis"]:
        st.markdown(f"**Hypothesis:** {widgets.plain(item['hypothesis'])}")
    gold = [
        (title, item.get(field))
        for field, title in (
            ("gold_answers", "Gold answers"),
            ("gold_presuppositions", "Gold presuppositions"),
            ("gold_corrections", "Gold corrections"),
        )
    ]
    for title, values in gold:
        if values is not None and len(values):
            st.markdown(f"**{widgets.plain(title)}:** " + " · ".join(map(widgets.plain, values)))
    if isinstance(item.get("gold_label"), str):
        st.markdown(f"**Gold label:** {widgets.plain(item['gold_label'])}")
    with st.container(border=True):
        st.markdown("**Model output**")
        st.markdown(widgets.plain(item["output_text"]) or "—")


def submit(run_id: str, criteria: list[str], example_id: str, rater: str, key: str) -> None:
    """Save the form's values (a callback, so moving on happens before the page reruns). Only what the
    user changed since the form was filled is written; a rating another tab changed meanwhile is not
    overwritten: the form then shows what is stored and says so."""
    values = {c: st.session_state.get(f"{key}|{c}") for c in criteria}
    try:
        with store() as con:
            written = rate.save(
                con,
                run_id,
                example_id,
                rater,
                values,
                st.session_state.get(f"{key}|note") or None,
                loaded=st.session_state.get(f"{key}|loaded", {}),
                actor=identity.actor(),
                task_id=st.session_state.get("task") if st.session_state.get("task") != tasks.NONE else None,
            )
    except rate.RatingConflict as exc:
        fill(key, criteria, exc.stored)
        st.session_state["rate_error"] = (key, str(exc), "")
        return
    except (rate.RatingError, PermissionError, StoreLocked, StoreError) as exc:
        said = (
            f"the store could not write it ({type(exc).__name__}); try again"
            if isinstance(exc, StoreError)
            else str(exc)
        )
        st.session_state["rate_error"] = (key, said, " Nothing saved before has changed; your choices are kept above.")
        return
    fill(key, criteria, {c: v for c, v in values.items() if v is not None} if written else {})
    st.session_state.pop("rate_error", None)
    st.session_state["saved_note"] = (
        f"Saved {example_id} as {rater}." if written else f"Cleared {rater}'s ratings of {example_id}."
    )
    if not st.session_state.get("todo"):  # with "only unrated" on, the next output takes this one's place
        move(1, int(st.session_state.get("total", 1)))


def fill(key: str, criteria: list[str], stored: dict) -> None:
    """Set the form's controls to the stored ratings and remember them as what the form was loaded with."""
    for criterion in criteria:
        value = stored.get(criterion)
        st.session_state[f"{key}|{criterion}"] = None if value is None else int(value)
    st.session_state[f"{key}|loaded"] = dict(stored)


def rating_form(run: pd.Series, criteria: list[str], item: pd.Series, rater: str, saved: dict) -> None:
    """One control per criterion (pre-filled with this rater's saved values), a note, Save and next."""
    key = f"{run.name}|{item['example_id']}|{rater}"
    if st.session_state.get(f"{key}|loaded") != saved:  # first shown, or the store changed since: show what it holds
        fill(key, criteria, saved)
    with st.form(f"rate-{key}", border=True):
        for criterion in criteria:
            scale = rate.RUBRIC[criterion]
            name = (lambda v: f"{v:d} — {'yes' if v else 'no'}") if len(scale) == 2 else widgets.plain
            st.segmented_control(
                widgets.plain(rate.criterion_name(criterion)),
                list(scale),
                format_func=name,
                key=f"{key}|{criterion}",
                help=" · ".join(f"{v:d}: {widgets.plain(text)}" for v, text in scale.items()),
            )
        st.text_input("Note (optional)", key=f"{key}|note", max_chars=2000)
        st.form_submit_button(
            "Save and next",
            type="primary",
            shortcut="S",
            icon=":material/save:",
            on_click=submit,
            args=(run.name, criteria, item["example_id"], rater, key),
        )
    error = st.session_state.get("rate_error")
    if error and error[0] == key:
        st.error(f"Not saved: {widgets.plain(error[1])}.{widgets.message(error[2])}")


def rubric(criteria: list[str]) -> None:
    st.markdown("**Rubric**")
    for criterion in criteria:
        st.caption(
            f"**{widgets.plain(rate.criterion_name(criterion))}** — "
            + " · ".join(f"**{v:d}** {widgets.plain(text)}" for v, text in rate.RUBRIC[criterion].items())
        )


def agreement_block(run_id: str, dataset: str, criteria: list[str]) -> None:
    st.subheader("Agreement and mean ratings")
    agree = query(rate.agreement, run_id)
    if agree.empty:
        st.info("No ratings of this run yet.")
        return
    caption = charts.provenance(dataset, int(agree["ratings"].sum()), runs=[run_id])
    if (agree["items"] == 0).all():
        st.info("Agreement needs at least two raters on the same outputs: ask a colleague to rate with their own id.")
    export.table(
        agree,
        "Inter-rater agreement",
        caption,
        key="agreement",
        column_config={
            "alpha": st.column_config.NumberColumn("Krippendorff's α", format="%.3f"),
            "alpha_low": st.column_config.NumberColumn("α low", format="%.3f"),
            "alpha_high": st.column_config.NumberColumn("α high", format="%.3f"),
            "kappa": st.column_config.NumberColumn("mean pairwise Cohen's κ", format="%.3f"),
        },
    )
    means = query(rate.summary, run_id)
    if not means.empty:
        top = max(max(rate.RUBRIC[c]) for c in criteria)
        export.chart(rating_charts.means(means, top), "Mean ratings", caption, key="means")


def export_block(run_id: str, dataset: str) -> None:
    st.subheader("Ratings")
    scope = st.segmented_control(
        "Export", ["this run", "all runs"], default="this run", key="scope", bind="query-params"
    )
    frame = query(rate.ratings_frame, run_id if scope != "all runs" else None)
    if frame.empty:
        st.info("No ratings to export yet.")
        return
    export.table(
        frame,
        "Ratings",
        charts.provenance(dataset, len(frame), runs=[run_id] if scope != "all runs" else None),
        key="ratings",
    )


def browse(run_id: str, split: str | None, rater: str, mine: dict) -> pd.Series | None:
    """Every output of the run (and split), one at a time with Previous / Next; None when none is left."""
    items = query(rate.targets, run_id, split)
    done = int(items["example_id"].isin(list(mine)).sum())
    st.progress(done / max(len(items), 1), text=f"{done:,} of {len(items):,} rated by {widgets.plain(rater or '—')}")
    if st.toggle("Only outputs I have not rated", key="todo", bind="query-params", disabled=not rater):
        items = items[~items["example_id"].isin(list(mine))]
    if items.empty:
        if done:
            st.success("You have rated every output here.")
        else:
            st.warning("This run has no outputs in that split.")
        return None
    st.session_state["total"] = len(items)
    if int(st.session_state.get("item", 1)) > len(items):
        st.session_state["item"] = len(items)
    return items.iloc[navigator(len(items)) - 1]


st.title("Rate")
if identity.actor().blinded:  # a rater (or a link holder): their assigned task, blinded, and nothing else
    tasks.blinded(identity.actor())
    urls.stop()
tasks.overview()  # every rating task, on any run: each opens below with its run, progress, agreement and links
run, split, rater = pickers()
criteria = query(rate.criteria_of, run.name)
mine = query(rate.rater_values, run.name, rater) if rater else {}
task_id = tasks.picker(run.name)
if task_id:
    if identity.may("create link"):
        tasks.links_form(task_id)
    item = tasks.served(run.name, task_id, rater)
else:
    item = browse(run.name, split, rater, mine)
if "saved_note" in st.session_state:
    st.toast(widgets.plain(st.session_state.pop("saved_note")), icon=":material/check:")

if item is not None:
    left, right = st.columns([3, 2])
    with left:
        show_item(item)
    with right:
        if not identity.may("rate"):
            st.info(f"Your role ({widgets.plain(identity.actor().role)}) does not rate; an analyst or owner does.")
        elif not rater:
            st.info("Type a rater id above to rate.")
        else:
            rating_form(run, criteria, item, rater, mine.get(item["example_id"], {}))
        rubric(criteria)

agreement_block(run.name, run["dataset_id"], criteria)
judges.judge_block(run.name, run["dataset_id"], run["task"])
export_block(run.name, run["dataset_id"])
if identity.may("create rating task"):
    tasks.new_task_form(run.name)
