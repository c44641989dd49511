"""Minimal-pair studio: build projection families and minimal pairs — from a template of items ×
conditions, from one sentence whose variants the rules propose, or false-assumption question pairs from
facts — preview them, store them as your dataset, run a model on them in the background, and open
their pairs and projection cells."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from backend.views import studio
from ui import charts, export, identity, widgets
from ui.resources import StoreLocked, computed, query, store, store_ref

SHOWN = 200  # preview rows


def preview(made: studio.Expansion, source: str) -> None:
    items, conditions = made.frame["item"].nunique(), len(made.conditions)
    a, b, c, d = st.columns(4)
    a.metric("Dataset", made.name)
    b.metric("Items (families)", f"{items:,}")
    c.metric("Sentences", f"{len(made.frame):,}", help=f"{items:,} items × {conditions:,} conditions")
    d.metric("Pairs", f"{items * (conditions - 1):,}")
    st.markdown(f"**Preview** (the first {min(SHOWN, len(made.frame)):,} of {len(made.frame):,} sentences)")
    export.table(
        made.frame.head(SHOWN),
        f"Preview of {made.name}",
        charts.provenance(made.name, len(made.frame), {"template": source}),
        f"preview-{source}",
    )


def save(made: studio.Expansion, source: str, key: str) -> None:
    """Replace checkbox and Save button; on success, what to run and where to look."""
    if not identity.may("import dataset"):
        st.caption(f"Saving needs the analyst role (yours: {widgets.plain(identity.actor().role)}).")
        return
    replace = st.checkbox(
        f"Replace my dataset {widgets.plain(made.name)} if it exists (its runs are kept)", key=f"{key}_replace"
    )
    if not st.button("Save as a dataset", type="primary", key=f"{key}_save", icon=":material/save:"):
        return
    try:
        with store() as con:
            counts = studio.save_template(con, made, source, replace, actor=identity.actor())
    except (studio.DataError, ValueError, PermissionError, StoreLocked) as exc:
        st.error("Not saved", icon=":material/error:")
        st.code(str(exc), language=None, wrap_lines=True)
        return
    st.success(
        f"Stored {widgets.plain(made.name)}: " + ", ".join(f"{n:,} {widgets.plain(k)}" for k, n in counts.items())
    )
    st.caption(
        "Run a model on it in the *Run a model* tab (it says how to get one if none can run here), or in a "
        "terminal (`python -m backend models` lists the models that load here):"
    )
    st.code(f".venv/bin/python -m backend predict --model MODEL --dataset {made.name}", language="bash")
    for pair_set in studio.template_pairs(made):
        st.page_link(
            "pages/pairs.py",
            label=f"Minimal pairs: {widgets.plain(pair_set)}",
            icon=":material/compare_arrows:",
            query_params={"pairs": pair_set},
        )
    st.page_link(
        "pages/projection.py",
        label="Its cells on the Projection page",
        icon=":material/stacked_line_chart:",
        query_params={"cell_dataset": made.name},
    )


def expanded(text: str, source: str) -> studio.Expansion | None:
    try:
        return computed(studio.expand, text, source)
    except studio.TemplateError as exc:
        st.error(
            "This cannot be expanded: fix it and the preview follows. Nothing was stored.", icon=":material/error:"
        )
        st.code(str(exc), language=None, wrap_lines=True)
        return None


def from_template() -> None:
    st.caption(
        "A template lists conditions (each with its operator, premise, hypothesis and gold label, with `{slot}`s) "
        "and items that fill the slots — listed, or every combination of the filler lists. Each item becomes a "
        "family: its first condition is paired with every other. See the README for the format."
    )
    upload = st.file_uploader("Template file (YAML)", type=["yaml", "yml"], key="template_file")
    if upload is not None:
        text, source = upload.getvalue().decode("utf-8", errors="replace"), upload.name
    else:
        text, source = (
            st.text_area("Template", value=studio.example_template(), height=420, key="template_text"),
            "template.yaml",
        )
    made = expanded(text, source)
    if made is not None:
        preview(made, source)
        save(made, source, "template")


def from_sentence() -> None:
    st.caption(
        "Type a premise with a presupposition trigger and the presupposition: the rules propose its negated, "
        "polar-question, modal and conditional-antecedent variants (or say why they cannot). Edit any cell "
        "before saving; the first row is the family's base."
    )
    sentence = st.text_input(
        "Premise (a declarative sentence)", key="family_sentence", placeholder="Jo stopped smoking."
    )
    presupposition = st.text_input(
        "Presupposition (the hypothesis of every variant)", key="family_presupposition", placeholder="Jo used to smoke."
    )
    left, right = st.columns(2)
    name = left.text_input("Dataset name", key="family_name", placeholder="my-family")
    trigger = right.text_input(
        "Trigger (required)",
        key="family_trigger",
        placeholder="e.g. change_of_state",
        help="The trigger's family, by which the Projection page groups items (e.g. "
        "change_of_state, factive, cleft, aspectual).",
    )
    if not sentence.strip() or not presupposition.strip():
        st.info("Type a premise and its presupposition to see the variants.")
        return
    try:
        proposed = studio.variants(sentence)
    except studio.CannotTransform as exc:
        st.warning(
            f"The rules cannot transform this sentence: {widgets.message(exc)}. Rephrase it, or write the "
            "variants as a template."
        )
        return
    refused = {op: text for op, text in proposed.items() if isinstance(text, studio.CannotTransform)}
    for operator, why in refused.items():
        st.warning(f"No {widgets.plain(operator)} variant: {widgets.message(why)}.")
    rows = pd.DataFrame(
        [
            {"operator": op, "premise": text, "hypothesis": presupposition.strip(), "gold": "E"}
            for op, text in proposed.items()
            if op not in refused
        ]
    )
    edited = st.data_editor(
        rows,
        key=f"family_rows-{sentence}-{presupposition}",
        hide_index=True,
        width="stretch",
        column_config={
            "operator": st.column_config.TextColumn(disabled=True),
            "gold": st.column_config.SelectboxColumn(options=list(studio.LABELS)),
        },
    )
    if not name.strip() or not trigger.strip():
        st.info("Name the dataset and its trigger to save the family: the Projection page groups families by trigger.")
        return
    text = studio.variant_template(name.strip(), trigger.strip(), edited.to_dict("records"))
    made = expanded(text, f"{name.strip()}.yaml")
    if made is not None:
        save(made, f"{name.strip()}.yaml", "family")


SOURCES = {
    "hotpotqa": "HotpotQA bridge questions (multi-hop, staged)",
    "musique": "MuSiQue single-hop sub-questions (staged)",
    "triples": "Your relation triples (CSV)",
}


def from_facts() -> None:
    st.caption(
        "Syn-(QA)²-style pairs: a question whose assumption holds (N) and its counterpart with one entity "
        "swapped for a similar one for which it does not (FP). Similarity is the bundled embedder's cosine "
        "between the entities' paragraphs (the paper's Wikidata properties are not available offline); each "
        "step says how many candidates it keeps. A triples CSV has subject, relation, object and a template "
        "question with {subject}."
    )
    left, middle, right = st.columns([2, 1, 1])
    source = left.selectbox("Facts", list(SOURCES), format_func=SOURCES.get, key="facts_source")
    threshold = middle.slider("Least similarity", 0.0, 1.0, studio.SIMILARITY, 0.05, key="facts_threshold")
    name = right.text_input("Dataset name", key="facts_name", placeholder="my-false-assumptions")
    upload = None
    if source == "triples":
        upload = st.file_uploader("Triples CSV", type=["csv"], key="facts_file")
        if upload is None:
            st.info("Upload a CSV with the columns subject, relation, object, template.")
            return
    args = (source, threshold, upload.getvalue() if upload else None, upload.name if upload else "triples.csv")
    if st.button("Generate", key="facts_generate", icon=":material/auto_awesome:"):
        st.session_state["facts_args"] = args
    if st.session_state.get("facts_args") != args:  # embedding the facts takes seconds: only when asked
        st.info("Press Generate to find the pairs (the staged files take a few seconds on a CPU).")
        return
    try:
        with st.spinner("Embedding the entities' paragraphs…"):
            generated = computed(studio.generate_facts, *args)
    except (studio.DataError, ValueError) as exc:
        st.error("No pairs were generated", icon=":material/error:")
        st.code(str(exc), language=None, wrap_lines=True)
        return
    st.dataframe(pd.DataFrame(generated.steps, columns=["kept", "n"]), hide_index=True)
    pairs = pd.DataFrame(generated.rows)
    if pairs.empty:
        st.warning("No candidate passed every step: lower the least similarity or add facts.")
        return
    export.table(
        pairs.head(SHOWN)[["question", "counterpart", "entity", "replacement", "similarity", "hop", "source_id"]],
        "Generated false-assumption pairs",
        charts.provenance(name or source, len(pairs), {"threshold": threshold}),
        f"facts-{source}",
    )
    if not name.strip():
        st.info("Name the dataset to save the pairs.")
        return
    if not identity.may("import dataset"):
        st.caption(f"Saving needs the analyst role (yours: {widgets.plain(identity.actor().role)}).")
        return
    replace = st.checkbox(f"Replace my dataset {widgets.plain(name.strip())} if it exists", key="facts_replace")
    if st.button("Save as a dataset", type="primary", key="facts_save", icon=":material/save:"):
        try:
            made = studio.facts_bundle(generated, name.strip(), upload.name if upload else studio.STAGED[source])
            with store() as con:
                counts = studio.save_dataset(con, made, replace=replace, actor=identity.actor())
        except (studio.DataError, ValueError, PermissionError, StoreLocked) as exc:
            st.error("Not saved", icon=":material/error:")
            st.code(str(exc), language=None, wrap_lines=True)
            return
        st.success(
            f"Stored {widgets.plain(name.strip())}: "
            + ", ".join(f"{n:,} {widgets.plain(k)}" for k, n in counts.items())
            + ". Run a detector on it in the next tab."
        )


@st.fragment(run_every=2)
def job_progress(run_id: str, dataset: str) -> None:
    """The started run's progress, refreshed every 2 s (only this fragment reruns)."""
    with store() as con:
        state = studio.progress(con, run_id, dataset)
    done, total = state["done"], max(state["total"], 1)
    eta = f", about {state['eta'] / 60:.1f} min left" if state["eta"] else ""
    answers = (
        widgets.plain(widgets.parsed(state["parsed"], done))
        if done
        else "no answer yet (loading the model and the examples)"
    )
    st.progress(
        min(done / total, 1.0),
        text=f"{widgets.plain(run_id)}: {widgets.plain(state['status'])} — {done:,} of {state['total']:,} "
        f"examples, {answers}{eta}",
    )
    if done and state["parsed"] < done:
        st.warning(
            f"{done - state['parsed']:,} of the {done:,} answers could not be read (an error, or a response not in "
            "its template's format): they count as wrong. Explore's *correctness* filter lists them."
        )
    if state["log"]:
        st.caption(widgets.plain(state["log"]))
    if state["status"] == "stopped":
        st.warning("The run's process stopped before the end (see its last log line): start it again to resume.")
    if state["status"] == "complete":
        sets = query(studio.stored_pair_sets)
        for pair_set in sets.loc[sets["dataset"] == dataset, "pair_set"]:
            st.page_link(
                "pages/pairs.py",
                label=f"Its pairs: {widgets.plain(pair_set)}",
                icon=":material/compare_arrows:",
                query_params={"pairs": pair_set, "run": run_id},
            )
        st.page_link(
            "pages/projection.py",
            label="See its projection cells",
            icon=":material/stacked_line_chart:",
            query_params={"cell_dataset": dataset},
        )


def no_model(task: str) -> None:
    """Never a dead end: the ways to get a model for `task`, with a button for the one that runs from here."""
    st.warning(f"No model that can be loaded here does {widgets.plain(task)} yet. Ways on:", icon=":material/route:")
    training = studio.TRAINING.get(task)
    if training:
        command, model, cost = training
        st.markdown(
            f"1. **Train one here**: the bundled MiniLM fine-tuned as {widgets.plain(model)}, "
            f"{widgets.plain(cost)}, in the background (in a terminal: python -m backend "
            f"{widgets.plain(' '.join(command))}). When it is done it is listed in the Model box above."
        )
        key = f"train-{task}"
        if studio.alive(key):
            widgets.job_progress("Training", studio.last_line(key))
            st.button("Refresh", key="train_refresh", icon=":material/refresh:")
        elif identity.may("train") and st.button(
            f"Train {widgets.plain(model)} now", type="primary", key="train_start", icon=":material/school:"
        ):
            try:
                studio.start_training(store_ref(), task, actor=identity.actor())
            except (ValueError, PermissionError) as exc:
                st.error(widgets.message(exc))
            st.rerun()
        elif studio.job_log(key):
            st.caption(f"The last training said: {widgets.plain(studio.last_line(key))}")
    st.markdown(
        "2. **Register a model you have** (a local folder, or a hub id when online) in "
        "data/registry.local.toml: see the README's *Models and live inference*; `python -m backend models` "
        "says which load here.\n3. **Import a run** you made elsewhere: its predictions, on the Import page."
    )
    st.page_link("pages/imports.py", label="Import a run", icon=":material/upload_file:")


def run_model() -> None:
    st.caption(
        "Run a model on one of your datasets in the background: it runs as its own process (the dashboard "
        "stays responsive for everyone), writes as it goes, and resumes where it stopped if started again."
    )
    mine = query(studio.model_choices)
    if not mine:
        st.info("Save a generated dataset first (or import one).")
        return
    left, right = st.columns(2)
    dataset = left.selectbox("Your dataset", list(mine), key="job_dataset")
    task, models = mine[dataset]
    model = right.selectbox("Model", models, key="job_model", placeholder="no model here can run on it")
    if not models:
        no_model(task)
        return
    note = computed(studio.quality, model)  # e.g. that a tiny model's answers say little about what models can do
    if note:
        st.caption(f":material/info: {widgets.plain(note)}")
    prompts = studio.template_choices(model, task)
    template = (
        st.selectbox(
            "Prompt template",
            prompts,
            key="job_template",
            help="How the model is asked (`python -m backend prompts` lists them; add yours in "
            "data/prompts/). Each template is a run of its own.",
        )
        if prompts
        else None
    )
    if identity.may("run model") and st.button("Run", type="primary", key="job_start", icon=":material/play_arrow:"):
        try:
            st.session_state["job"] = (
                studio.start_run(store_ref(), model, dataset, task, template, actor=identity.actor()),
                dataset,
            )
        except (ValueError, PermissionError) as exc:
            st.error(widgets.message(exc))
    if "job" in st.session_state:
        job_progress(*st.session_state["job"])


st.title("Minimal-pair studio")
template_tab, sentence_tab, facts_tab, run_tab = st.tabs(
    ["From a template", "From one sentence", "From facts", "Run a model"]
)
with template_tab:
    from_template()
with sentence_tab:
    from_sentence()
with facts_tab:
    from_facts()
with run_tab:
    run_model()
