"""Studies: run a human judgement study from the lab. Create one from a design (YAML: a dataset or a Studio family
set, the lists, controls, attention checks, order, question and scale, texts, and the exclusion rules declared
before data), make one signed link per participant, watch answers arrive per list, close it, and read people's
mean answer per condition before and after the exclusions, beside a model's, with the archive a paper needs
(`backend.views.study`)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from backend.views import study as sv
from ui import export, fits, identity, power, trial_types, urls, widgets
from ui.charts import gradient as gradient_charts
from ui.resources import StoreError, StoreLocked, computed, query, store, store_ref


def archive(study_id: str) -> bytes:
    """The archive's bytes when the button is pressed, for whoever presses it (the backend checks their role),
    reporting the model and power run chosen on the page."""
    with store() as con:
        return sv.archive_zip(con, study_id, *paper(), actor=identity.actor())


def paper() -> tuple[str, str | None]:
    """What "For the paper" reports: the model section's formula ("": the default) and the chosen power run."""
    return st.session_state.get(fits.PAPER, ""), st.session_state.get(power.PAPER) or None


def rating_results(study_id: str, dataset_id: str) -> None:
    """A rating study's results: the mean answer per condition before and after the exclusions, beside a run, per
    item, and the mixed-effects model."""
    st.subheader("Mean answer per condition")
    spec = query(sv.scale, study_id)
    means = query(sv.condition_means, study_id)
    caption = (
        f"study {study_id}: people's mean answer per condition, 95% CI (bootstrap over participants and items; none, "
        f"too few to estimate, under {sv.MIN_EACH} participants or items)"
    )
    if len(means):
        export.chart(
            gradient_charts.dots(
                means.rename(columns={"stage": "who", "condition": "group"}), "mean", "low", "high", "Mean answer", spec
            ),
            "Before and after the exclusions",
            caption,
            "study-means",
        )
    export.table(means.round(4), f"Condition means of {study_id}", caption, "study-means-table")

    runs = query(sv.runs, study_id)
    run = st.selectbox(
        "Beside a model: a run on the same items",
        list(runs["run_id"]),
        index=None,
        key="run",
        bind="query-params",
        placeholder="people only" if len(runs) else f"no NLI run on {dataset_id} yet",
    )
    if run:
        table = query(sv.beside_models, study_id, (run,))
        export.chart(
            gradient_charts.dots(
                table.rename(columns={"condition": "group"}), "mean", "low", "high", "Mean answer", spec
            ),
            "People (after the exclusions) and the run",
            f"study {study_id}: people after exclusions and run {run} (its expected answer on the study's scale)",
            "study-models",
        )
        rho = computed(sv.agreement, table).iloc[0]
        st.caption(
            f"Spearman ρ over {int(rho['groups'])} condition means: "
            + (
                f"{rho['rho']:.3f} [{rho['low']:.3f}, {rho['high']:.3f}]"
                if rho["rho"] == rho["rho"]
                else widgets.plain(rho["note"])
            )
        )
    with st.expander("Per item"):
        export.table(query(sv.item_means, study_id).round(4), f"Items of {study_id}", caption, "study-items")

    fits.section(study_id, query(sv.analysed, study_id))


st.title("Studies")
st.caption(
    "A judgement study on your own items: people answer through signed links (one per participant, each given the "
    "next list), blinded to gold and models; a rating study's answers become the crowd ratings of the study's "
    "dataset, so the Gradient, Projection and Explore pages show them too (a forced choice, reading or Maze study's "
    "are analysed here)."
)


def create(text: str, replace: bool) -> None:
    try:
        with store() as con:
            made = sv.create(con, text, replace, actor=identity.actor())
    except (sv.DataError, sv.StudyRefused, ValueError, PermissionError, StoreLocked, StoreError) as exc:
        st.session_state["_study_problem"] = str(exc)
        return
    st.session_state["study"] = made


def served() -> str:
    """The dashboard's address as this browser reached it (this page's URL without its own path, `study`), so the
    links work from where people reach the dashboard; the local address where no browser asked (a script's run)."""
    url = st.context.url
    return url.removesuffix("/study") if url else f"http://localhost:{st.get_option('server.port')}"


with st.expander("New study", expanded=not len(query(sv.listing))):
    shown = query(sv.example)
    st.caption(
        "The design, as YAML (README: *Studies* lists every field). "
        + (
            f"The example is over **{widgets.plain(shown['dataset'])}**, a dataset in the store."
            if shown["stored"]
            else f"The example is over the Studio's example family set, **{widgets.plain(shown['dataset'])}**, which "
            "is not in the store yet: open the Studio page, keep the example template of *From a template* and "
            "press *Save as a dataset*; then come back and create the study."
        )
    )
    if not shown["stored"]:
        st.page_link("pages/studio.py", label="Studio: save the example family set", icon=":material/science:")
    with st.form("new-study", border=False):
        text = st.text_area("Design", shown["text"], height=360, max_chars=20_000)
        replace = st.checkbox("Replace the study of this name (only before its first response)")
        submitted = st.form_submit_button("Create study", disabled=not identity.may("create study"))
    if submitted:
        create(text, replace)
    if "_study_problem" in st.session_state:
        st.error(f"No study created: {widgets.message(st.session_state.pop('_study_problem'))}")

found = query(sv.listing)
if found.empty:
    st.info("No study yet: create one above, or with `python -m backend study create design.yaml`.")
    urls.stop()
study_id = st.selectbox("Study", list(found["study_id"]), key="study", bind="query-params")
row = query(sv.study, study_id)
frozen = f"frozen since its first response ({row['frozen_at']:%Y-%m-%d %H:%M} UTC)" if row["frozen_at"] else "no "
frozen += "" if row["frozen_at"] else "response yet: the design can still change"
st.caption(
    f"{widgets.plain(row['status'])} · design version {int(row['version'])} · over "
    f"{widgets.plain(row['dataset_id'])} · {widgets.plain(frozen)} · by {widgets.plain(row['created_by'] or '—')}"
)
if "_study_closed" in st.session_state:
    left_out = widgets.counted(st.session_state.pop("_study_closed"), "participant")
    st.success(f"Closed: {widgets.plain(left_out)} left out by the exclusions (or not finished).")
with st.expander("Design"):
    st.code(row["design_text"], language="yaml")

st.subheader("Participants")
# no form: Enter in a box makes nothing, the button does
if row["status"] == "open" and identity.may("create study link"):
    a, b, c = st.columns([1, 1, 3])
    count = a.number_input("Links to make", 1, 1000, 10, key="link_count")
    days = b.number_input("Valid for (days)", 1, 365, 30, key="link_days")
    base = c.text_input(
        "The dashboard's address, as participants reach it",
        served(),
        key="link_base",
        persist_state="session",  # kept after a visit to another page
        help="Where your browser reached this dashboard; change it when participants reach it by another address.",
    )
    if st.button("Make links", type="primary"):
        try:
            with store() as con:
                new = sv.make_links(con, store_ref(), study_id, int(count), float(days), actor=identity.actor())
        except (sv.StudyRefused, ValueError, PermissionError, StoreLocked, StoreError) as exc:
            st.error(f"No links made: {widgets.message(exc)}")
        else:
            urls_made = pd.DataFrame({"participant": [k.person for k in new], "link": [k.url(base) for k in new]})
            st.success(f"{len(new):,} link(s) made: send each to one participant. They are shown once.")
            export.table(urls_made, f"Links to {study_id}", f"signed links to study {study_id}", "study-links")


@st.fragment(run_every="5s")
def live() -> None:
    """Progress per list, refreshed every 5 s while the page is open."""
    lists = query(sv.progress, study_id)
    if lists.empty:
        st.caption("Nobody has opened a link yet.")
        return
    st.dataframe(lists, hide_index=True)
    st.caption(f"{int(lists['started'].sum())} started, {int(lists['finished'].sum())} finished (refreshed every 5 s)")


live()
if row["status"] == "open" and identity.may("pilot study"):  # pilot: take the study yourself, never analysed
    piloted = query(sv.pilots, study_id)
    if st.button(
        "Make a pilot link",
        icon=":material/link:",
        help="A link that opens the study for you as a participant: every list in turn, answers stored apart, never "
        "analysed or exported; the design can still be replaced (which deletes pilot answers).",
    ):
        try:
            with store() as con:
                pilot = sv.pilot_links(con, store_ref(), study_id, actor=identity.actor())[0]
        except (sv.StudyRefused, ValueError, PermissionError, StoreLocked, StoreError) as exc:
            st.error(f"No pilot link made: {widgets.message(exc)}")
        else:
            st.success("Your pilot link (shown once): open it to take the study as a participant.")
            st.code(pilot.url(st.session_state.get("link_base") or served()), language=None)
    if piloted["participants"]:
        st.caption(
            widgets.plain(
                f"{widgets.counted(piloted['participants'], 'pilot')}, "
                f"{widgets.counted(piloted['answers'], 'pilot answer')}: never analysed."
            )
        )
platform = query(sv.platform, study_id)
CAP = (
    "The cap counts everyone the link started whose data are kept, in progress or finished, so it never admits more "
    "than it says; a withdrawn or deleted participant frees their place, and pilots never count."
)
# What these buttons did is kept for the run they start (their callbacks run first), so the section that shows it
# opens itself: an expander a rerun redraws may have closed.
PERSONAL = "_personal_said"


def personal(key: str, act, *args) -> None:
    """Callback of a general-link or personal-data button: run `act(con, study, *args, actor=...)` as whoever
    presses it; keep (key, result) or (key, refusal in words) for the next run to show in its section."""
    try:
        with store() as con:
            st.session_state[PERSONAL] = (key, study_id, act(con, study_id, *args, actor=identity.actor()), None)
    except (sv.StudyRefused, ValueError, PermissionError, StoreLocked, StoreError) as exc:
        st.session_state[PERSONAL] = (key, study_id, None, exc)


said = st.session_state.pop(PERSONAL, None)  # shown in the run the press started, once
said = said if said and said[1] == study_id else None  # and only on its own study
if said:  # its section opens, and stays open on later runs (a prop turned back to False would close it)
    st.session_state["_general_open" if said[0] == "general" else "_personal_open"] = True


def shown(key: str, refused: str):
    """What the button `key` did: its result, or None after showing why it was refused (prefixed `refused`)."""
    if not said or said[0] != key:
        return None
    if said[3] is not None:
        st.error(widgets.message(f"{refused}: {said[3]}"))
        return None
    return said[2]


def general(con, study, cap: int, days: float, *, actor):
    return sv.general_link(
        con, store_ref(), study, cap, days, st.session_state.get("link_base") or served(), actor=actor
    )


if platform and row["status"] == "open" and identity.may("create general link"):
    with st.expander(f"General link for {widgets.plain(platform)}", expanded="_general_open" in st.session_state):
        st.caption(
            f"One URL to post on {widgets.plain(platform)}: it adds each participant's id, and the lab starts one "
            "participant per id, lets only the browser that started continue, and sends them back with the code "
            "(README: *Recruitment platforms*)."
        )
        a, b = st.columns(2)
        cap = a.number_input("Most participants (cap)", 1, 100_000, 100, key="general_cap", help=CAP)
        days = b.number_input("Valid for (days)", 1, 365, 30, key="general_days")
        st.button("Make the general link", on_click=personal, args=("general", general, int(cap), float(days)))
        url = shown("general", "No general link made")
        if url:
            st.success("General link made (shown once): paste it as the study's URL on the platform.")
            st.code(url, language=None)
if platform and identity.may("manage platform ids"):
    with st.expander("Platform ids and demographics (personal data)", expanded="_personal_open" in st.session_state):
        st.caption(
            "Only the study's maker and owners see these, and each reading is logged; they are in no other page, "
            "methods.md, export or shareable archive, and leave with a participant who withdraws or is deleted."
        )
        a, b = st.columns(2)
        a.button("Show the platform ids", on_click=personal, args=("ids", sv.platform_ids))
        b.button("Show the demographics", on_click=personal, args=("demographics", sv.demographics))
        for key, refused in (("ids", "Not shown"), ("demographics", "Not shown")):
            table = shown(key, refused)
            if table is not None:
                st.dataframe(table, hide_index=True)
        freed = st.text_input(
            "Release a platform id",
            key="release_id",
            help="When a participant asks to go on in another browser: the old browser's link stops working, and the "
            "next browser to open the general link with this id continues the same answers.",
        )
        st.button("Release", disabled=not freed.strip(), on_click=personal, args=("release", sv.release, freed.strip()))
        person = shown("release", "Not released")
        if person:
            st.success(f"Released: participant {widgets.plain(person)} continues in the next browser.")
        back = st.text_input(
            "A submission returned on the platform (its platform id)",
            key="returned_id",
            help="Frees its place under the general link's cap and its list slot; the answers stay, never analysed.",
        )
        st.button(
            "Mark returned",
            disabled=not back.strip(),
            on_click=personal,
            args=("returned", sv.mark_returned, back.strip()),
        )
        person = shown("returned", "Not marked")
        if person:
            st.success(f"Marked returned: participant {widgets.plain(person)}; their place is free again.")
        st.button(
            "Prepare the archive with platform ids", on_click=personal, args=("zip", sv.archive_with_platform_ids)
        )
        prepared = shown("zip", "Not prepared")
        if prepared:
            st.download_button(
                "Archive with platform ids and demographics (zip: for the lab's own records, not to share)",
                prepared,
                file_name=f"{study_id}-with-platform-ids.zip",
                mime="application/zip",
                on_click="ignore",  # no rerun: the button stays until the page runs again
            )
with st.expander("Links"):
    st.dataframe(query(sv.study_links, study_id), hide_index=True)
closing = row["status"] == "open" and identity.may("close study")
KEPT = "No one joins or answers any more; from then on every page reads only the participants the exclusions keep."
sure = closing and st.checkbox(  # issue 63, item 7: closing was one click, and cannot be undone
    "Close it for good: no one joins or answers after this", key="close_sure", help=KEPT
)
if closing and st.button("Close the study", help=KEPT, disabled=not sure):
    try:
        with store() as con:
            closed = sv.close(con, study_id, actor=identity.actor())
    except (sv.StudyRefused, PermissionError, StoreLocked, StoreError) as exc:
        st.error(f"Not closed: {widgets.message(exc)}")
    else:
        st.session_state["_study_closed"] = len(closed["excluded"])
        st.rerun()  # the page again, as closed

kind = query(sv.trial_kind, study_id)  # rating, or a forced choice, reading or Maze study (issue 63, item 6)
if kind == "rating":
    power.section(study_id)  # before launch too: how many participants to pay for
people = query(sv.participants, study_id)
if people.empty:
    # before launch: a model of the pilot's answers, for the power analysis
    if kind == "rating" and query(sv.pilots, study_id)["answers"]:
        fits.section(study_id, pilot_only=True)
    urls.stop()
st.subheader("Exclusions")
st.caption(
    "The rules declared with the design, in their order: a participant is counted under the first that names them."
)
st.caption(
    f"Gradient, Projection, Example and their exports read {widgets.plain(query(sv.analysed, study_id))}. This page "
    "shows the answers both before and after the exclusions."
)
log = query(sv.exclusion_log, study_id)
export.table(log, f"Exclusions of {study_id}", f"study {study_id}: exclusion log", "study-exclusions")
with st.expander("Per participant"):
    export.table(people, f"Participants of {study_id}", f"study {study_id}: participants", "study-people")
    if identity.may("delete participant data"):  # on request: responses, ratings and row; logged, no answers kept
        st.caption("Delete one participant's data on their request (their answers and ratings; the log keeps who, "
                   "when and why, never an answer, and a restore deletes them again).")  # fmt: skip
        a, b = st.columns(2)
        gone = a.selectbox("Participant", list(people["participant_id"]), index=None, key="delete_who")
        why = b.text_input("Why", "asked by e-mail", key="delete_why")
        sure = st.checkbox("Yes, delete this participant's answers for good", key="delete_sure")
        if st.button("Delete this participant's data", disabled=not (gone and sure)):
            try:
                with store() as con:
                    deleted = sv.delete_participant(con, study_id, gone, why, actor=identity.actor())
            except (sv.StudyRefused, PermissionError, StoreLocked, StoreError) as exc:
                st.error(f"Nothing deleted: {widgets.message(exc)}")
            else:
                st.success(
                    f"Deleted {widgets.plain(gone)}: {deleted['responses']:,} answers, {deleted['ratings']:,} ratings."
                )
    gone_log = query(sv.deletions, study_id)
    if len(gone_log):
        st.caption("Deleted on request or withdrawn:")
        st.dataframe(gone_log, hide_index=True)

if kind != "rating":
    trial_types.section(study_id, kind)
else:
    rating_results(study_id, row["dataset_id"])

st.subheader("For the paper")
st.markdown(widgets.plain(query(sv.methods, study_id)))
with store() as con:
    st.text(sv.analyses(con, study_id, *paper()))
st.download_button(
    "Archive (zip): responses, design, orders, exclusions, means, the model and power, methods",
    lambda: archive(study_id),
    file_name=f"{study_id}.zip",
    mime="application/zip",
    disabled=not identity.may("export"),
)
