"""The Rate page's *Judge vs people* section: a judge run of this run, how far it agrees with the people
who rated the same outputs (per criterion, per rater and with their consensus, with n and 95% CIs), a
verdict on how far to trust it, the judge × people confusion whose cells open their items, the judge's
self-consistency and whether it ranks runs as people do. The numbers are `backend.analysis.judging`'s."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from backend.views import outputs, rate
from ui import charts, export, identity, widgets
from ui.charts import rate as rating_charts
from ui.resources import computed, query, store, store_ref

ARROW = "→"
TRUST = {"poor": st.error, "tentative": st.warning, "reliable": st.success, "unknown": st.info}
NUMBERS = {
    name: st.column_config.NumberColumn(title, format="%.3f")
    for name, title in (
        ("alpha", "Krippendorff's α"),
        ("alpha_low", "α low"),
        ("alpha_high", "α high"),
        ("kappa", "Cohen's κ"),
        ("kappa_low", "κ low"),
        ("kappa_high", "κ high"),
        ("rho", "Spearman ρ"),
        ("rho_low", "ρ low"),
        ("rho_high", "ρ high"),
    )
}


def start_box(run_id: str, task: str, versus: str | None = None, expanded: bool = False) -> None:
    """Start a judge run of `run_id` (against `versus` with a pairwise rubric) here, as a background job like the
    Studio's runs, and follow its progress and cost; for those whose role may judge."""
    if not identity.may("judge"):
        return
    rubrics = rate.pairwise_rubrics(task) if versus else rate.rubrics(task)
    key = "pair_judge_job" if versus else "judge_job"  # its widgets' keys
    started = f"{key}|{run_id}|{versus}"  # the judge run started here for these runs (not for another run picked since)
    with st.expander("Start a judge run", expanded=expanded or started in st.session_state, icon=":material/gavel:"):
        models = computed(rate.judge_models)
        if not rubrics or not models:
            st.info(
                f"No judge rubric scores {widgets.plain(task)} runs."
                if not rubrics
                else "No generator can be loaded or reached here: register one (README, *Models and live inference*)."
            )
            return
        left, middle = st.columns(2)
        model = left.selectbox("Judge model", models, key=f"{key}_model")
        rubric = middle.selectbox("Rubric", rubrics, key=f"{key}_rubric")
        left, middle = st.columns(2)
        limit = left.number_input(
            "Outputs to judge (0: all)", 0, 1_000_000, 0, 10, key=f"{key}_limit", help="The first N by example id."
        )
        cap = middle.number_input(
            "Spend at most (USD, an endpoint's prices)",
            0.0,
            10_000.0,
            1.0,
            0.5,
            key=f"{key}_cap",
            help="The run stops before passing it; what was judged is kept, and starting it again resumes.",
        )
        if st.button("Start judge run", key=f"{key}_start", type="primary", icon=":material/play_arrow:"):
            try:
                st.session_state[started] = rate.start_judge(
                    store_ref(), model, run_id, rubric, versus, int(limit) or None, float(cap), actor=identity.actor()
                )
            except (ValueError, LookupError, PermissionError) as exc:
                st.error(widgets.message(exc))


@st.fragment(run_every=2)
def judge_job(judge_run_id: str) -> None:
    """The started judge run's progress and cost, refreshed every 2 s (only this fragment reruns)."""
    with store() as con:
        state = rate.judge_progress(con, judge_run_id)
    done, total = state["done"], state["total"]
    st.progress(
        min(done / max(total, 1), 1.0),
        text=f"{widgets.plain(judge_run_id)}: {widgets.plain(state['status'])} — {done:,} of {total:,} responses, "
        f"{state['parsed']:,} read as a score, {state['errors']:,} failed · ${state['cost']:.4f} spent",
    )
    if state["log"]:
        st.caption(widgets.plain(state["log"]))
    if state["status"] == "stopped":
        st.warning("The judge run's process stopped before the end (see its last line): start it again to resume.")
    elif state["status"] == "complete":
        st.success("Judged: reload the page (or pick it below) to read its agreement with people.")


def judge_block(run_id: str, dataset: str, task: str) -> None:
    st.subheader("Judge vs people")
    runs = query(rate.judge_runs, run_id)
    start_box(run_id, task, expanded=runs.empty)
    running = rate.running_judges(run_id)  # from the jobs and the store: a reload, or another page, follows them too
    for judge_run_id in running:
        judge_job(judge_run_id)
    if runs.empty and running:
        return
    if runs.empty:
        rubrics = "; ".join(
            f"{widgets.plain(r)} scores "
            + ", ".join(f"*{widgets.plain(rate.criterion_name(c))}*" for c in rate.judge_criteria(r))
            for r in rate.rubrics(task)
        )
        st.info(
            "No judge has scored this run. Let an LLM score its outputs (*Start a judge run* above, or "
            f"`python -m backend judge --model MODEL --run RUN --rubric RUBRIC`; rubrics for {widgets.plain(task)} "
            f"runs: {rubrics or 'none built in'}), then rate some of them above on the criterion it scores to see how "
            "far it agrees with people."
        )
        return
    judge_run_id = st.selectbox(  # no format_func: a bound selectbox's URL value is its label
        "Judge run",
        list(runs["judge_run_id"]),  # those that overlap people's ratings most first
        key="judge",
        bind="query-params",
        help="Listed by how many of the outputs a judge scored people rated on the same criterion (those its "
        "agreement with people is measured on), then newest first: "
        + "; ".join(f"{widgets.plain(j)}: {n:,}" for j, n in zip(runs["judge_run_id"], runs["overlap"])),
    )
    row = runs.set_index("judge_run_id").loc[judge_run_id]
    followed = judge_run_id in running or judge_run_id in rate.judge_jobs(run_id)  # started from a page: its job
    status = "stopped" if row["status"] == "running" and followed and judge_run_id not in running else row["status"]
    st.caption(
        f"**{row['overlap']:,} of its scored outputs rated by people** on the same criterion · "
        f"{widgets.plain(row['source'])} · {widgets.plain(status)} · {row['items']:,} outputs, "
        f"{row['judgements']:,} judgements: {row['parsed']:,} parsed, {row['unparsed']:,} unparsed, "
        f"{row['errors']:,} errors · ${row['cost']:.4f} · {widgets.plain(row['quality'] or '')}"
    )
    if judge_run_id in running or status == "running":  # the latter: started in a terminal, its process not followed
        st.info(
            "This judge is still running (its progress is above, or in the terminal that started it): how far it "
            "agrees with people is shown here once it has finished."
        )
        return
    if status != "complete" and not row["judgements"]:
        st.warning(
            f"This judge run ended ({widgets.plain(status)}) before any response was stored: start it again (*Start "
            "a judge run* above) to resume."
        )
        return
    if not row["parsed"]:
        st.error(
            f"This judge gave no usable score: none of its {row['judgements']:,} responses could be read as a "
            "score, so it cannot stand in for people on this run. Its responses are kept (Example page, export)."
        )
        return
    if row["unparsed"] or row["errors"]:
        st.warning(
            f"{row['unparsed'] + row['errors']:,} of {row['judgements']:,} responses gave no score (unparsed or "
            "failed): those items have no judge score. They are counted below as unscored, never guessed."
        )
    table = query(rate.agreement_table, judge_run_id, run_id)
    caption = charts.provenance(dataset, int(table["n"].max()) if len(table) else 0, runs=[run_id, judge_run_id])
    if table.empty or not table["n"].any():
        judged = list(table["criterion"].unique()) or rate.judge_criteria(row["rubric"])
        named = " or ".join(f"**{widgets.plain(rate.criterion_name(c))}**" for c in judged) or "what it scores"
        st.info(
            f"No output is both scored by this judge and rated by people yet: rate some above on {named} with your "
            "rater id."
        )
        return
    for verdict in rate.verdict(table).itertuples():
        TRUST[verdict.trust](
            f"**{widgets.plain(verdict.criterion)}**: {widgets.plain(verdict.trust)} — {widgets.plain(verdict.why)} "
            f"(α = {widgets.plain('undefined' if pd.isna(verdict.alpha) else f'{verdict.alpha:.3f}')} with the "
            f"people's consensus, n = {verdict.n:,})"
        )
    export.table(table, "Judge vs people agreement", caption, key="judge-agreement", column_config=NUMBERS)
    criterion = st.selectbox("Criterion", list(table["criterion"].unique()), key="judge_criterion", bind="query-params")
    confusion_block(run_id, judge_run_id, dataset, criterion, caption)
    consistency_block(judge_run_id, caption)
    ranking_block(row["source"], criterion, dataset)


def confusion_block(run_id: str, judge_run_id: str, dataset: str, criterion: str, caption: str) -> None:
    cells = query(rate.confusion, judge_run_id, run_id, criterion)
    cells["cell"] = cells["judge"] + ARROW + cells["people"]
    options = list(cells.loc[cells["items"] > 0, "cell"])
    cell = st.pills(
        "Cell (judge→people; or click one) lists its items",
        options,
        key="judge_cell",
        bind="query-params",
        format_func=widgets.option,
    )
    cells["chosen"] = cells["cell"] == cell
    export.chart(
        rating_charts.judge_confusion,
        f"Judge × people: {criterion}",
        caption,
        key="judge-confusion",
        choose={"cell": "judge_cell"},
        args=(cells, sorted(cells["judge"].unique()), sorted(cells["people"].unique(), reverse=True)),
    )
    if cell:
        judge_score, people = cell.split(ARROW)
        items = widgets.linked_items(
            dataset, rate.judge_cell_items, judge_run_id, run_id, criterion, judge_score, people
        )
        if items is not None:
            st.dataframe(items, column_config={"open": st.column_config.LinkColumn("open", display_text="open")})


def consistency_block(judge_run_id: str, caption: str) -> None:
    consistency = query(rate.self_consistency, judge_run_id)
    if consistency.empty:
        st.caption(
            "Self-consistency: this judge was asked once per output; judge with `--samples 3` to measure how far "
            "it agrees with itself."
        )
        return
    export.table(consistency, "Judge self-consistency (α across its samples)", caption, key="judge-self")


def ranking_block(source: str, criterion: str, dataset: str) -> None:
    ranked = query(rate.ranking, source, criterion)
    if ranked["why"]:
        st.caption(f"Ranking runs: no Kendall τ — {widgets.plain(ranked['why'])}.")
    else:
        st.markdown(
            f"**Ranking runs on {widgets.plain(criterion)}**: Kendall τ = {ranked['tau']:.2f} (p = {ranked['p']:.2f}) "
            f"between the judge's and the people's mean scores over {len(ranked['runs'])} runs."
        )
    if len(ranked["runs"]):
        runs = ranked["runs"]
        export.table(runs, "Runs by judge and by people", charts.provenance(dataset, len(runs)), key="judge-ranking")


def pairwise_block(run_a: str, run_b: str, dataset: str, task: str) -> None:
    """Side by side: a pairwise judge of these two runs — wins with CIs, position bias, reason clusters."""
    judged = query(outputs.pairwise_runs, run_a, run_b)
    start_box(run_a, task, versus=run_b)
    with st.expander(f"Pairwise judge ({len(judged):,} runs)"):
        if judged.empty:
            st.info(
                "No judge has compared these two runs. Let an LLM compare them in both orders (*Start a judge run* "
                "above, or `python -m backend judge --model MODEL --run RUN_A --versus RUN_B --rubric "
                "judge-pairwise`)."
            )
            return
        judge_run_id = st.selectbox(
            "Pairwise judge run", list(judged["judge_run_id"]), key="pair_judge", bind="query-params"
        )
        row = judged.set_index("judge_run_id").loc[judge_run_id]
        flipped = row["run_id"] != run_a  # the judge's run A is this page's run B: its A wins are B's here
        st.caption(
            f"{widgets.plain(row['source'])}: run A = {widgets.plain(row['run_id'])}, run B = "
            f"{widgets.plain(row['other_run_id'])}{' (the reverse of this page)' if flipped else ''} · "
            f"{row['judgements']:,} responses, {row['unparsed']:,} unparsed · ${row['cost']:.4f}"
        )
        caption = charts.provenance(dataset, int(row["items"]), runs=[row["run_id"], row["other_run_id"], judge_run_id])
        export.table(
            query(outputs.pairwise_summary, judge_run_id),
            "Pairwise verdicts",
            caption,
            key="pair-summary",
            column_config={c: st.column_config.NumberColumn(c, format="%.3f") for c in ("share", "low", "high")},
        )
        reasons = query(outputs.reasons, judge_run_id)
        found = outputs.clusters(reasons)
        if found.empty:
            st.caption("No parsed verdict gave a reason to cluster.")
            return
        export.table(found, "The judge's reasons, clustered", caption, key="pair-clusters")
        chosen = st.selectbox(
            "Cluster",
            list(found["cluster"]),
            key="pair_cluster",
            bind="query-params",
            format_func=lambda c: f"{c}: {found.set_index('cluster').loc[c, 'name']}",
        )
        items = widgets.with_links(dataset, outputs.cluster_items(reasons, int(chosen)))
        st.dataframe(items, column_config={"open": st.column_config.LinkColumn("open", display_text="open")})
