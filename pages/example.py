"""Example: one example in full. The URL names it (`dataset`, `example`): text, gold, facets, every
run's output and probabilities, pair partners (one click away), NOPE's crowd labels and ratings,
each retrieval run's top passages (gold ones marked) and the gold passages."""

import streamlit as st

from backend.views import example
from ui import charts, export, urls, widgets
from ui.resources import query

FACETS = ["split", "trigger_type", "polarity", "adversarial", "answer_type", "question_type", "hop", "ambiguous"]
GOLD_LISTS = {
    "gold_answers": "Gold answers",
    "gold_presuppositions": "Presupposition (gold)",
    "gold_corrections": "Correction (gold)",
}


def pick() -> tuple[str, str]:
    """Dataset and example id, both bound to the URL; stops when the store is missing or empty."""
    left, right = st.columns([1, 2])
    dataset = widgets.dataset_select(left)
    chosen = right.text_input(
        "Example id",
        key="example",
        bind="query-params",
        placeholder="e.g. 1, 1-neg (NOPE), S-dev-0 (IfQA), test-0 (FalseQA)",
    )
    return dataset, (chosen or "").strip()


def show_text(row: dict) -> None:
    """Input, context, hypothesis, gold label(s) and lists, facets, and every other field."""
    st.subheader(widgets.plain(f"{row['dataset_id']} · {row['example_id']}"))
    facets = [f"{f}: **{widgets.plain(row[f])}**" for f in FACETS if row.get(f) is not None]
    st.markdown(" · ".join(facets))
    st.markdown("**Input**")
    st.markdown(f"> {widgets.plain(row['input'])}")
    if row.get("context"):
        st.markdown("**Context (comment)**")
        st.markdown(f"> {widgets.plain(row['context'])}")
    if row.get("hypothesis"):
        st.markdown(f"**Hypothesis** — {widgets.plain(row['hypothesis'])}")
    labels = row.get("gold_labels") or []
    if row.get("gold_label"):
        extra = f" (annotators: {widgets.plain(', '.join(labels))})" if len(labels) > 1 else ""
        st.markdown(f"**Gold label** {widgets.label_badge(row['gold_label'])}{extra}")
    for field, title in GOLD_LISTS.items():
        if row.get(field):
            st.markdown(f"**{widgets.plain(title)}**\n" + "\n".join(f"- {widgets.plain(item)}" for item in row[field]))
    with st.expander("Every stored field (extra)"):
        st.json(row["extra"], expanded=1)


def show_predictions(detail: dict, caption: str) -> None:
    """Every run's output for this example, classification runs first."""
    st.subheader("Model outputs")
    frame = detail["predictions"]
    if frame.empty:
        st.info(
            "No run has predicted this example yet: ask a model about it on the Playground, or make a run "
            "with `python -m backend predict --model M --dataset D`."
        )
        return
    prompted = frame[frame["prompt"].notna()]
    frame = frame.drop(columns=["prompt", "response"])
    frame = frame.loc[:, frame.notna().any()]
    export.table(
        frame,
        f"Model outputs for {detail['example']['example_id']}",
        caption,
        key="predictions",
        column_config={"p": st.column_config.NumberColumn("p(label)", format="%.3f")},
    )
    widgets.worth(detail["example"]["dataset_id"], tuple(frame["run_id"]), splits=(detail["example"]["split"],))
    for row in prompted.itertuples():
        with st.expander(f"Prompt sent and response: {widgets.plain(row.run_id)}"):
            st.caption(f"Parse: {widgets.plain(row.parse or 'n/a')}. The prompt, exactly as sent:")
            st.code(row.prompt, language=None, wrap_lines=True)
            st.caption("The response, as the model wrote it:")
            st.text(row.response or "(empty)")


def go_to(example_id: str) -> None:
    """Open another example of the same dataset (a widget's value changes through session state)."""
    st.session_state["example"] = example_id


def show_pairs(detail: dict, dataset: str) -> None:
    """Partners in minimal / negation / adversarial pairs, each one click (or link) away."""
    pairs = detail["pairs"]
    if pairs.empty:
        return
    st.subheader("Pair partners")
    for row in pairs.itertuples():
        text = row.partner_hypothesis if isinstance(row.partner_hypothesis, str) else row.partner_input
        left, right = st.columns([1, 4])
        partner = widgets.plain(row.partner)
        left.button(
            partner,
            key=f"pair-{row.pair_id}",
            on_click=go_to,
            args=(row.partner,),
            icon=":material/arrow_forward:",
            help=f"open {partner}",
        )
        link = urls.page_url("example", dataset=dataset, example=row.partner)
        right.markdown(
            f"**{widgets.plain(row.kind)}** pair: this is *{widgets.plain(row.role)}*, [{partner}]({link}) is "
            f"*{widgets.plain(row.partner_role)}* (gold {widgets.label_badge(row.partner_gold)}) — "
            f"{widgets.plain(text)}"
        )


def show_crowd(detail: dict, dataset: str) -> None:
    """NOPE: the five crowd labels as coloured bars, the five 0-100 ratings, and every rating row."""
    crowd, ratings = detail["crowd"], detail["ratings"]
    if crowd is not None:
        st.subheader("Crowd labels")
        labels = crowd["labels"]
        caption = charts.provenance(dataset, int(labels["n"].sum()), {"example": detail["example"]["example_id"]})
        export.chart(charts.crowd_labels(labels), "Crowd labels", caption, key="crowd")
        st.markdown(
            "**Crowd ratings (0–100, how likely the hypothesis is true):** "
            + ", ".join(f"{v:g}" for v in crowd["ratings"])
        )
    if not ratings.empty:
        with st.expander(f"All ratings ({len(ratings)})"):
            caption = charts.provenance(dataset, len(ratings), {"example": detail["example"]["example_id"]})
            export.table(ratings.loc[:, ratings.notna().any()], "Ratings", caption, key="ratings")
    judged = detail["judgements"]
    if not judged.empty:
        with st.expander(f"Judges' scores ({len(judged)}; an unparsed response has no score)"):
            caption = charts.provenance(dataset, len(judged), {"example": detail["example"]["example_id"]})
            export.table(judged, "Judges' scores", caption, key="judgements")


def show_passages(detail: dict) -> None:
    """Each retrieval run's top 10 (gold passages marked) and the gold passages themselves."""
    retrievals, qrels = detail["retrievals"], detail["qrels"]
    if not retrievals.empty:
        st.subheader("Retrieved passages")
        for run_id, hits in retrievals.groupby("run_id", sort=False):
            ranks = list(hits.loc[hits["gold"], "rank"])
            found = f"gold at rank {', '.join(map(str, ranks))}" if ranks else "no gold passage in the top 10"
            with st.expander(f"{widgets.plain(run_id)} — top {len(hits)} ({widgets.plain(found)})"):
                st.markdown(
                    "\n".join(
                        f"{row.rank:d}. ({row.score:.3f}) {widgets.passage_markdown(row)}" for row in hits.itertuples()
                    )
                )
    if not qrels.empty:
        st.subheader("Gold passages")
        st.markdown(
            "\n".join(f"- {widgets.plain(row.doc_id)} {widgets.passage_markdown(row)}" for row in qrels.itertuples())
        )


st.title("Example")
dataset, example_id = pick()
if not example_id:
    st.info("Type an example id above, or select a row on the Explore page.")
    urls.stop()
try:
    detail = query(example.example_detail, dataset, example_id)
except KeyError as exc:
    st.error(f"{widgets.message(exc.args[0])}. Type one of those ids above, or open an example from the Explore page.")
    urls.stop()

show_text(detail["example"])
show_predictions(detail, charts.provenance(dataset, len(detail["predictions"]), {"example": example_id}))
show_pairs(detail, dataset)
show_crowd(detail, dataset)
show_passages(detail)
