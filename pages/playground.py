"""Playground: ask the live models anything. Type a question (or a premise and hypothesis), or load
any example and edit it ("what if the presupposition were removed or negated?"): the retrieved
passages, each chosen model's output with probabilities, latency, device and quality note, and the
original and edited versions side by side. Every answer is stored as a row of a live run."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from backend.views import playground
from ui import charts, export, identity, urls, widgets
from ui.resources import StoreLocked, query, released, retrievers, store, store_ref

MODES = {"Question": "question", "NLI pair": "nli"}  # label (shown and in the URL) → mode
RETRIEVERS = ["hybrid", "bm25", "dense", "none"]
HITS_SHOWN = 20


def fields(mode: str) -> tuple[str, ...]:
    return ("premise", "hypothesis") if mode == "nli" else ("question",)


def load_example(mode: str) -> None:
    """Copy the chosen example into the original and the editable fields (a button callback)."""
    dataset, example_id = st.session_state.get("source"), (st.session_state.get("example") or "").strip()
    try:
        row = query(playground.example_row, dataset, example_id)
    except KeyError as exc:
        st.session_state["load_error"] = f"Example id: {exc.args[0]}"
        return
    values = {"question": row["input"], "premise": row["input"], "hypothesis": row.get("hypothesis") or ""}
    st.session_state.pop("load_error", None)
    st.session_state["original"] = {
        "dataset": dataset,
        "example": example_id,
        **{name: values[name] for name in fields(mode)},
    }
    for name in fields(mode):
        st.session_state[name] = values[name]
    st.session_state.pop("answers", None)


def start_from_example(mode: str) -> None:
    with st.expander("Start from an example", expanded="original" not in st.session_state):
        left, middle, right = st.columns([1, 1, 1], vertical_alignment="bottom")
        left.selectbox("Dataset", query(playground.datasets_by_input)[mode], key="source", bind="query-params")
        middle.text_input(
            "Example id",
            key="example",
            bind="query-params",
            placeholder="e.g. test-0 (FalseQA), S-dev-0 (IfQA), 1 (NOPE)",
        )
        right.button("Load into the editor", on_click=load_example, args=(mode,), icon=":material/edit_note:")
        if "load_error" in st.session_state:
            st.error(widgets.message(st.session_state["load_error"]))


def editor(mode: str) -> dict[str, str]:
    """The editable text, bounded like the backend (playground.MAX_CHARS): longer text is cut at the bound."""
    if mode == "nli":
        text = {
            "premise": st.text_area(
                "Premise", key="premise", max_chars=playground.MAX_CHARS["premise"], height=120, bind="query-params"
            ),
            "hypothesis": st.text_input(
                "Hypothesis", key="hypothesis", max_chars=playground.MAX_CHARS["hypothesis"], bind="query-params"
            ),
        }
    else:
        text = {
            "question": st.text_area(
                "Question",
                key="question",
                max_chars=playground.MAX_CHARS["question"],
                height=80,
                bind="query-params",
                placeholder="e.g. Why did Einstein win a Nobel Prize for relativity?",
            )
        }
    st.caption(
        " · ".join(
            f"{widgets.plain(name.capitalize())}: at most {playground.MAX_CHARS[name]:,} characters" for name in text
        )
        + " (longer text is cut there; the models read about the first 256 tokens)."
    )
    return text


def engine_picker(mode: str) -> tuple[list[playground.Engine], str, int]:
    engines = playground.engines(mode)
    named = {f"{e.model} · {e.label}": e for e in engines}  # every engine: a link's choice is kept, never widened
    ready = {name: e for name, e in named.items() if e.available}
    fast = [name for name, e in ready.items() if not e.model.startswith("smollm2")] or list(ready)[:1]
    left, middle, right = st.columns([3, 1, 1])
    chosen = left.multiselect(
        "Models",
        list(named),
        default=fast,
        key="engines",
        bind="query-params",
        help="Small generators take seconds per answer on a CPU; the classifiers take milliseconds.",
    )
    retriever = middle.selectbox(
        "Retriever", RETRIEVERS if mode == "question" else ["none"], key="retriever", bind="query-params"
    )
    k = right.number_input("Passages the models read", 1, 20, 5, key="k", bind="query-params")
    missing = [e for e in engines if not e.available]
    if missing:
        with st.expander(f"Models not available here ({len(missing)})"):
            st.markdown(
                "\n".join(
                    f"- **{widgets.plain(e.model)}** ({widgets.plain(e.label)}): {widgets.message(e.remedy)}"
                    for e in missing
                )
            )
    unavailable = [named[name] for name in chosen if name not in ready]
    if unavailable:  # named, not replaced by others: a busy endpoint's probe can fail while it is generating
        st.warning(
            "Not asked now, though chosen: "
            + "; ".join(f"**{widgets.plain(e.model)}** ({widgets.message(e.remedy)})" for e in unavailable)
            + ". Ask again when it answers, or choose another model.",
            icon=":material/cloud_off:",
        )
    return [ready[name] for name in chosen if name in ready], retriever, int(k)


def ask_all(versions: dict[str, dict], engines: list[playground.Engine], retriever: str, k: int, mode: str) -> dict:
    """Retrieve and ask every engine for every version, with progress; errors are kept per answer."""
    results = {}
    with st.status("Asking the models…", expanded=True) as status:
        shared, no_index = None, None
        if mode == "question" and retriever != "none":
            status.write("Loading the retrieval indexes (once per server)…")
            try:
                shared = retrievers()
            except FileNotFoundError as exc:  # models that need passages say so in their cards
                no_index, retriever = f"no retrieval index here: {widgets.message(exc)}", "none"
                status.write(f":orange[{no_index}] — answering without passages.")
        for version, text in versions.items():
            found = {"answers": [], "hits": None}
            if shared is not None:
                with store() as con:
                    hits, _ = playground.side_by_side(
                        con, {retriever: shared[retriever]}, text["question"], HITS_SHOWN, text.get("gold", [])
                    )
                found["hits"] = hits
            for engine in engines:
                use = retriever if engine.retriever != "none" and retriever != "none" else None
                if engine.retriever == "required" and use is None:
                    found["answers"].append(
                        (engine, None, no_index or "needs a retriever: choose bm25, dense or hybrid")
                    )
                    continue
                status.write(
                    f"{widgets.plain(version)}: {widgets.plain(engine.model)} ({widgets.plain(engine.task)}) — loaded "
                    f"once, then shared by every session…"
                )
                query_ = playground.Query(
                    model=engine.model,
                    task=engine.task,
                    retriever=use,
                    k=k,
                    **{name: text[name] for name in fields(mode)},
                )
                place, said = status.empty(), []

                # on a change only
                def waiting(ahead: int, model: str = engine.model, said: list = said, place=place) -> None:
                    if not said or said[-1] != ahead:
                        said.append(ahead)
                        place.write(
                            f"{ahead:,} question(s) ahead of yours for {widgets.plain(model)}…"
                            if ahead
                            else f"{widgets.plain(model)} is answering…"
                        )

                written = status.empty() if engine.endpoint else None  # an endpoint's answer appears as it is written
                try:
                    with released():  # the model may take seconds: nobody waits for this page meanwhile
                        answer = playground.ask(
                            store_ref(),
                            query_,
                            shared,
                            waiting=waiting,
                            on_text=widgets.streaming(written) if written is not None else None,
                            actor=identity.actor(),
                        )
                    found["answers"].append((engine, answer, None))
                except (
                    ValueError,
                    PermissionError,
                    playground.ModelUnavailable,
                    StoreLocked,
                ) as exc:  # bad input, or the model is not here
                    found["answers"].append((engine, None, str(exc)))
                except Exception as exc:  # noqa: BLE001 — one failing model must not hide the others' answers
                    found["answers"].append((engine, None, f"the model failed: {type(exc).__name__}: {exc}"))
            results[version] = found
        status.update(label="Done", state="complete", expanded=False)
    return results


def show_answer(
    engine: playground.Engine, answer: playground.Answer | None, error: str | None, dataset: str | None
) -> None:
    with st.container(border=True):
        st.markdown(f"**{widgets.plain(engine.model)}** · {widgets.plain(engine.label)}")  # a user-registered name
        if error:
            st.error(widgets.message(error))
            return
        if dataset:  # how the model did on the dataset this text came from; a typed text has none
            widgets.worth(dataset, model=engine.model)
        out = answer.output
        if out.label:
            labels = playground.labels(engine.task)
            st.markdown(f"Label {widgets.label_badge(out.label)}")
            if out.probs and labels:
                st.dataframe(
                    pd.DataFrame({"label": labels, "probability": out.probs}),
                    hide_index=True,
                    column_config={
                        "probability": st.column_config.ProgressColumn(min_value=0, max_value=1, format="%.3f")
                    },
                )
        if out.answer:
            st.markdown(f"Answer: **{widgets.plain(out.answer)}**")
        written = [key for key in ("presupposition", "correction") if out.text.get(key)]
        for key in written:
            st.markdown(f"{key.capitalize()}: {widgets.plain(out.text[key])}")
        if engine.task == "write" and not written:
            st.markdown(
                f"*Not in the Presupposition/Correction format:* "
                f"{widgets.plain(widgets.shown(out.text.get('generation') or '(nothing)'))}"
            )
        if out.passages and engine.task != "qa":
            st.caption(f"read {len(out.passages)} passages")
        if "prompt" in out.text:  # a prompted generator or an endpoint: what it was sent and what it said
            show_prompted(out.text)
        source = "cache" if answer.cached else f"{answer.latency_ms:,.0f} ms on {answer.device}"
        st.caption(f"{widgets.plain(source)} · stored in {widgets.plain(answer.run_id)}")
        st.caption(f":material/info: {widgets.plain(engine.quality)}")


def show_prompted(text: dict) -> None:
    """The raw response (as text), how it parsed, tokens and cost, and the exact prompt sent."""
    if text.get("parse") not in (None, "ok"):
        st.warning(
            f"Parse: {widgets.plain(text['parse'])}. The response gave no answer in the template's format; "
            "in a run it is counted wrong and shown in the run's unparsed count."
        )
    st.caption("Response, as the model wrote it:")
    st.text(widgets.shown(text.get("generation") or "(empty)"))
    cost = f" · ${text['cost']:.5f}" if text.get("cost") else ""
    tokens = (
        f"{text.get('tokens_in', 0):,} tokens in, {text.get('tokens_out', 0):,} out"
        if text.get("tokens_reported", True)
        else "tokens not reported by the server (streamed answers; a price is charged at its worst case)"
    )
    st.caption(
        f"{widgets.plain(text.get('template', ''))} · {tokens}{cost} · "
        f"probabilities: {widgets.plain(text.get('probabilities', 'n/a'))}"
    )
    with st.expander("Prompt sent"):
        st.code(text["prompt"], language=None, wrap_lines=True)


def show_version(title: str, text: dict, found: dict) -> None:
    st.markdown(f"#### {widgets.plain(title)}")
    st.markdown(
        "\n\n".join(
            f"**{widgets.plain(name.capitalize())}:** {widgets.plain(text[name])}"
            for name in text
            if name in ("question", "premise", "hypothesis")
        )
    )  # typed or from the URL: text
    for engine, answer, error in found["answers"]:
        show_answer(engine, answer, error, st.session_state.get("original", {}).get("dataset"))
    hits = found["hits"]
    if hits is not None and not hits.empty:
        with st.expander(
            f"Top {len(hits)} passages ({widgets.plain(hits['retriever'].iloc[0])})"
            + (
                f" — gold at rank {widgets.plain(', '.join(map(str, hits.loc[hits['gold'], 'rank'])))}"
                if hits["gold"].any()
                else ""
            )
        ):
            st.dataframe(hits[["rank", "gold", "score", "title", "text"]], hide_index=True)


def show_history() -> None:
    frame = query(playground.history, 200)
    st.subheader("Stored live queries")
    if frame.empty:
        st.info("Nothing asked yet. Every answer above is stored as a row of a live run, listed here.")
        return
    export.table(
        frame,
        "Live queries",
        charts.provenance("live", len(frame)),
        key="history",
        column_config={"latency_ms": st.column_config.NumberColumn("latency (ms)", format="%.0f")},
    )


st.title("Playground")
st.caption(
    "Ask the live models; every answer is stored as a row of a live run (`live/<model>/<task>`), "
    "so it can be found, compared and exported later."
)
try:
    query(playground.readable)  # the store is there and can be read
except (FileNotFoundError, StoreLocked) as exc:
    st.error(f"{widgets.message(exc)}. Then reload this page.")
    urls.stop()
mode = MODES[
    st.segmented_control(
        "Input",
        list(MODES),
        default="Question",
        key="mode",
        bind="query-params",
        help="A question, or a premise and hypothesis for NLI",
    )
    or "Question"
]
if st.session_state.get("original_mode") != mode:  # a loaded example belongs to one mode
    st.session_state.pop("original", None)
    st.session_state["original_mode"] = mode
start_from_example(mode)
with st.form("ask", border=False):
    edited = editor(mode)
    engines, retriever, k = engine_picker(mode)
    submitted = st.form_submit_button(
        "Ask",
        type="primary",
        icon=":material/send:",
        disabled=not identity.may("ask"),
        help=None if identity.may("ask") else "Asking the models needs the analyst role.",
    )

if submitted:
    original = st.session_state.get("original")
    versions = {}
    if original:
        gold = query(playground.gold_doc_ids, original["dataset"], original["example"])  # [] without qrels
        versions["Original"] = {**original, "gold": gold}
        if any(edited[name].strip() != original[name].strip() for name in fields(mode)):
            versions["Edited"] = {**edited, "gold": gold}
    else:
        versions["Your input"] = edited
    problems = [
        f"{name}: empty; type a {name}" for text in versions.values() for name in fields(mode) if not text[name].strip()
    ]
    if problems:
        st.error(problems[0])
    elif not engines:
        st.error("Models: choose at least one model to ask.")
    else:
        st.session_state["answers"] = (versions, ask_all(versions, engines, retriever, k, mode))

if "answers" in st.session_state:
    versions, results = st.session_state["answers"]
    for column, (title, found) in zip(st.columns(len(results)), results.items()):
        with column:
            show_version(title, versions[title], found)
show_history()
