"""Import: bring your own predictions (as a run) or dataset, check them against the store, read the
validation report, then save; list, replace and delete your runs. The same code as
`python -m backend import-run / import-dataset / delete-run`. Text from your files is shown as text."""

from __future__ import annotations

import hashlib

import streamlit as st

from backend.views import imports
from ui import identity, urls, widgets
from ui.resources import StoreLocked, query, store

GUESS = "(guess)"


def uploaded(label: str, key: str) -> tuple[bytes, str] | None:
    file = st.file_uploader(
        label,
        type=imports.FILE_TYPES,
        key=key,
        help="CSV, TSV, JSONL, JSON (a list of records) or Parquet; for a run also an lm-eval --log_samples JSONL "
        "or an Inspect .eval log",
    )
    return (file.getvalue(), file.name) if file is not None else None


@st.cache_data(show_spinner=False, max_entries=8)
def file_columns(data: bytes, name: str) -> list[str]:
    return imports.file_columns(data, name)


def mapping(roles: tuple[str, ...], columns: list[str], key: str) -> dict[str, str]:
    """A selectbox per role: a file column, or left to the guess."""
    chosen = {}
    for slot, role in zip(st.columns(4) * (len(roles) // 4 + 1), roles):
        column = slot.selectbox(widgets.plain(role), [GUESS, *columns], key=f"{key}|{role}")
        if column != GUESS:
            chosen[role] = column
    return chosen


def pairs_text(text: str) -> dict[str, str]:
    """'value=LABEL' per line (or comma-separated) → dict; lines without '=' are ignored."""
    items = [part.strip() for line in text.splitlines() for part in line.split(",")]
    return {k.strip(): v.strip() for k, _, v in (i.partition("=") for i in items if "=" in i)}


def show_problem(title: str, exc: Exception) -> None:
    st.error(title, icon=":material/error:")
    st.code(str(exc), language=None, wrap_lines=True)


def run_form(described: dict) -> None:
    file = uploaded("Predictions file", "run_file")
    if file and st.session_state.get("run_file_named") != file[1]:  # a new file: the dataset its name names
        st.session_state["run_file_named"] = file[1]
        named = imports.dataset_named_by(file[1], list(described))
        if named:
            st.session_state["run_dataset"] = named
    left, middle, right = st.columns(3)
    dataset = left.selectbox("Dataset", list(described), key="run_dataset", bind="query-params")
    model = middle.text_input(
        "Model name", key="run_model", placeholder=file[1].rsplit(".", 1)[0] if file else "my-model"
    )
    revision = right.text_input("Revision", key="run_revision", placeholder="checkpoint, commit, …")
    left, right = st.columns([2, 1])
    notes = left.text_input("Notes", key="run_notes")
    trained_on = right.text_input(
        "Trained on (datasets)",
        key="run_trained_on",
        placeholder="mnli, snli, imppres:train",
        help="The datasets the model was trained on (name, or name:split). A run on one of "
        "them is flagged as contaminated and left out of default comparisons.",
    )
    columns = file_columns(*file) if file else []
    chosen_for = (file[1] if file else None, dataset)
    if st.session_state.get("run_task_for") != chosen_for:  # a new file or dataset: the task its columns are for
        st.session_state["run_task_for"] = chosen_for
        st.session_state["run_task"] = imports.task_for(columns, described[dataset])
    with st.expander("Columns, labels and matching (guessed when left alone)"):
        task = st.selectbox(
            "Task",
            imports.TASKS["run"],
            key="run_task",
            help="Guessed from the file's columns and the dataset: question and answer make a QA run; "
            "presupposition and correction a writing run; premise and hypothesis an NLI run; a label, "
            "probabilities or logits the dataset's own task.",
        )
        chosen = mapping(imports.roles(task), columns, "run_map")
        a, b, c = st.columns(3)
        order = a.text_input(
            "Label order (for 0,1,2… and lists)", key="run_order", placeholder="entailment,neutral,contradiction"
        )
        label_map = b.text_input("Label map", key="run_label_map", placeholder="yes=FP, no=N")
        split = c.text_input("Only this split", key="run_split")
        match = a.radio("Match rows by", ["auto", "id", "text"], horizontal=True, key="run_match")
        strict = b.checkbox("Reject if any row matches no example", key="run_strict")
        run_id = c.text_input("Run id", key="run_id", placeholder=f"{dataset}/user/<model>")
    if file is None:
        st.info(
            "Choose a file to check. Accepted: one row per example with an id or its text, and a label, "
            "probabilities, logits, an answer, or a presupposition and correction (see the README)."
        )
        return
    options = imports.RunOptions(
        dataset=dataset,
        model=model.strip() or None,
        revision=revision.strip() or None,
        notes=notes.strip() or None,
        run_id=run_id.strip() or None,
        columns=chosen,
        task=task,
        split=split.strip() or None,
        match=match,
        strict=strict,
        label_order=tuple(x.strip() for x in order.split(",") if x.strip()),
        label_map=pairs_text(label_map),
        trained_on=tuple(x.strip() for x in trained_on.split(",") if x.strip()),
    )
    signature = hashlib.sha256(repr((file[1], hashlib.sha256(file[0]).hexdigest(), options)).encode()).hexdigest()
    if st.button("Check", type="primary", key="run_check", icon=":material/fact_check:"):
        try:
            with store() as con:
                st.session_state["run_plan"] = (signature, *imports.check_run(con, *file, options, list(described)))
        except (ValueError, LookupError, StoreLocked) as exc:
            show_problem("The file could not be checked", exc)
            return
    held = st.session_state.get("run_plan")
    if held and held[0] == signature:
        show_run_plan(held[1], held[2])
    else:
        st.caption(
            "Check the file to see the validation report; nothing is written before you save."
            if not held
            else "The file or the options changed since the last check: check again."
        )


def use_dataset(name: str) -> None:
    """Callback: choose the dataset the file's rows matched best."""
    st.session_state["run_dataset"] = name


def show_run_plan(plan: imports.RunPlan, best: tuple | None = None) -> None:
    """The validation report; `best`: the dataset the rows match best when none matched (() when no other does,
    None when it was not looked for)."""
    report = plan.report
    st.subheader("Validation report")
    a, b, c, d = st.columns(4)
    a.metric("Rows read", f"{report.rows:,}")
    b.metric("Matched", f"{report.matched:,}", help=f"by {widgets.plain(report.match_by)}")
    c.metric("Coverage", f"{report.coverage:.1%}", help=f"of {report.examples:,} examples")
    d.metric("Skipped / problems", f"{len(report.skipped):,} / {len(report.problems):,}")
    st.code(report.summary(), language=None, wrap_lines=True)
    if report.problems or report.skipped:
        st.dataframe(report.table(), hide_index=True, width="stretch")
    if best:
        st.warning(
            f"Its rows match **{widgets.plain(best[0])}** best: {best[1]:,} of {report.rows:,} rows. Use it, "
            "then check again.",
            icon=":material/lightbulb:",
        )
        st.button(f"Use {widgets.plain(best[0])}", key="run_use_best", on_click=use_dataset, args=(best[0],))
    elif best == ():
        st.info("No other dataset in the store matches its rows either: check the id or text column (and the split).")
    if not report.ok:
        st.error("Rejected: fix the problems above (or map columns and labels), then check again. Nothing was written.")
        return
    run_id = plan.run["run_id"]
    existing = query(imports.existing_run, run_id)
    replace = False
    if existing is not None:
        if existing != "user":
            st.error("That run id belongs to a built-in run; choose another run id.")
            return
        replace = st.checkbox("A run of yours has this id: replace it", key="run_replace")
    if st.button(
        "Save as a run",
        type="primary",
        disabled=existing is not None and not replace,
        key="run_save",
        icon=":material/save:",
    ):
        try:
            with store() as con:
                imports.save_run(con, plan, replace=replace, actor=identity.actor())
        except (ValueError, PermissionError, StoreLocked) as exc:
            show_problem("Not saved", exc)
            return
        st.session_state.pop("run_plan", None)
        st.success(f"Saved {len(plan.predictions):,} predictions as a run.")
        st.code(run_id, language=None)
        st.page_link(
            "pages/explore.py",
            label="Open it in Explore",
            icon=":material/filter_alt:",
            # every item the run predicted, on every split (a link without `split` opens the headline split)
            query_params={
                "dataset": plan.run["dataset_id"],
                "run_a": run_id,
                **query(imports.split_param, plan.run["dataset_id"]),
            },
        )
        st.page_link("pages/overview.py", label="See it on the Overview", icon=":material/dataset:")


def dataset_form() -> None:
    file = uploaded("Dataset file", "dataset_file")
    columns = file_columns(*file) if file else []
    if file and st.session_state.get("dataset_task_for") != file[1]:  # a new file: the task its columns are for
        st.session_state["dataset_task_for"] = file[1]
        st.session_state["dataset_task"] = imports.dataset_task_for(columns)
    left, middle, right = st.columns(3)
    name = left.text_input("Name (dataset id)", key="dataset_name", placeholder="my-pairs")
    task = middle.selectbox(
        "Task",
        imports.TASKS["dataset"],
        key="dataset_task",
        help="Guessed from the file's columns: a hypothesis makes NLI, answers without a label QA, a label without "
        "a hypothesis detection.",
    )
    split = right.text_input("Split (when the file has no split column)", value="all", key="dataset_split")
    with st.expander("Columns and labels (guessed when left alone)"):
        chosen = mapping(imports.DATASET_ROLES, columns, "dataset_map")
        a, b, c = st.columns(3)
        labels = a.text_input("Label set", key="dataset_labels", placeholder="E,N,C (nli) · N,FP (detect)")
        positive = b.text_input("Positive label", key="dataset_positive")
        label_map = c.text_input("Label map", key="dataset_label_map", placeholder="entailed=E, yes=FP")
        headline = a.text_input("Headline splits", key="dataset_headline", placeholder="all splits")
        train = b.text_input("Train split (baselines)", key="dataset_train")
        operator = c.text_input(
            "Operator column (Projection page)",
            key="dataset_operator",
            help="The column naming each item's operator (negation, question, modal, conditional, "
            "unembedded); with a trigger_type column, the dataset joins the Projection page.",
        )
    if file is None:
        st.info(
            "Choose a file: one row per example with its text (and hypothesis for NLI), a gold label or answers; "
            "a split, pair id and pair role are optional; every other column is kept and few-valued ones become facets."
        )
        return
    options = imports.DatasetOptions(
        name=name.strip(),
        task=task,
        columns=chosen,
        split=split.strip() or "all",
        labels=tuple(x.strip() for x in labels.split(",") if x.strip()),
        positive=positive.strip() or None,
        label_map=pairs_text(label_map),
        headline_splits=tuple(x.strip() for x in headline.split(",") if x.strip()),
        train_split=train.strip() or None,
        operator_column=operator.strip() or None,
    )
    signature = hashlib.sha256(repr((file[1], hashlib.sha256(file[0]).hexdigest(), options)).encode()).hexdigest()
    if st.button("Check", type="primary", key="dataset_check", icon=":material/fact_check:"):
        try:  # checked once per click, not on every rerun (a large file takes seconds)
            st.session_state["dataset_plan"] = (signature, *imports.check_dataset(*file, options))
        except ValueError as exc:
            show_problem("The file cannot be imported as it is", exc)
            return
    held = st.session_state.get("dataset_plan")
    if not held or held[0] != signature:
        st.caption(
            "Check the file to see what would be stored."
            if not held
            else "The file or the options changed since the last check: check again."
        )
        return
    _, bundle, description = held
    st.code(
        f"{widgets.counted(len(bundle.examples), 'example')}, {widgets.counted(len(bundle.pairs), 'pair')}; "
        f"task {description.task}; labels "
        f"{list(description.labels)}; headline splits {list(description.headline_splits)}; facets "
        f"{list(description.facets) or 'none'}; columns {description.columns}",
        language=None,
        wrap_lines=True,
    )
    exists = options.name in query(imports.described)
    replace = (
        st.checkbox("Replace my dataset of this name (my runs on it are kept)", key="dataset_replace")
        if exists
        else False
    )
    if st.button(
        "Save the dataset", type="primary", disabled=exists and not replace, key="dataset_save", icon=":material/save:"
    ):
        try:
            with store() as con:
                counts = imports.save_dataset(con, bundle, replace=replace, actor=identity.actor())
        except (ValueError, PermissionError, StoreLocked, imports.BaselinesFailed) as exc:
            show_problem(
                "Not saved" if not isinstance(exc, imports.BaselinesFailed) else "Saved, without baselines", exc
            )
            return
        st.session_state.pop("dataset_plan", None)
        st.success("Saved: " + ", ".join(f"{n:,} {widgets.plain(k)}" for k, n in counts.items()))
        st.page_link(
            "pages/explore.py",
            label="Open it in Explore",
            icon=":material/filter_alt:",
            query_params={"dataset": options.name},
        )


def my_runs() -> None:
    runs = query(imports.user_runs)
    if runs.empty:
        st.info("No imported runs yet.")
        return
    st.dataframe(runs, hide_index=True, width="stretch")
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    run_id = left.selectbox("Run", list(runs["run_id"]), key="delete_run")
    sure = right.checkbox("Yes, delete it", key="delete_sure")
    if st.button("Delete this run", disabled=not sure, key="delete_button", icon=":material/delete:"):
        try:
            with store() as con:
                imports.delete_run(con, run_id, actor=identity.actor())
        except (ValueError, LookupError, PermissionError, StoreLocked) as exc:
            show_problem("Not deleted", exc)
            return
        st.success("Deleted.")
        st.code(run_id, language=None)


st.title("Import")
st.caption(
    "Your own predictions and datasets, checked before anything is written. From a terminal: "
    "`python -m backend import-run FILE --dataset D`, `import-dataset FILE --name N --task T`; "
    "from a notebook: `backend.api.Lab().import_run(frame, dataset=...)`."
)
if not identity.may("import run"):
    st.info(f"Your role ({widgets.plain(identity.actor().role)}) reads and exports; importing needs the analyst role.")
    urls.stop()
found = widgets.require(imports.described, empty="The store is empty: run `python -m backend ingest`, then reload.")
runs_tab, dataset_tab, mine_tab = st.tabs(["Predictions", "Dataset", "Your runs"])
with runs_tab:
    run_form(found)
with dataset_tab:
    dataset_form()
with mine_tab:
    my_runs()
