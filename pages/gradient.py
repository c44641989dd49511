"""Gradient: how strongly people take a content for granted, per predicate, verb or operator, on the dataset's
graded scale (projective probability's 0–1 sliders, CommitmentBank's −3…+3), beside a chosen run's certainty on
the same scale, with Spearman ρ between the two and, where the dataset has priors, the prior effect. A point
opens its items; the dataset, grouping, run and group are in the URL (`backend.views.gradient`)."""

from __future__ import annotations

import streamlit as st

from backend.views import gradient as gv
from ui import charts, export, fits, widgets
from ui.charts import gradient as gradient_charts
from ui.resources import computed, query

st.title("Gradient projection")
st.caption(
    "People's mean certainty that the content is true, per group, with a 95% CI from a bootstrap over "
    "participants and items together, groups ordered by it; a run's certainty on the same scale with a 95% CI "
    "over items; Spearman ρ between the run's and people's group means with a bootstrap CI over groups. n counts "
    "ratings (a run rates each item once)."
)
choices = widgets.require(
    gv.datasets,
    empty="No dataset with graded ratings is loaded: ingest projective_probability or commitmentbank "
    "(`python -m backend ingest`) and reload.",
)
a, b, c = st.columns([1, 1, 2])
dataset = a.selectbox("Dataset", choices, key="dataset", bind="query-params")
spec = query(gv.spec, dataset)
by = b.selectbox("Group by", spec["by"], key="by", bind="query-params")
runs = query(gv.runs, dataset)
run = c.selectbox(
    f"Run (its certainty: {widgets.plain(spec['formula'])})",
    list(runs["run_id"]),
    index=None,
    key="run",
    bind="query-params",
    placeholder="people only" if len(runs) else "no NLI runs on this dataset yet",
)
chosen = (run,) if run else ()
if run:
    why = runs.set_index("run_id").loc[run, "contaminated"]
    if why:
        st.warning(f"{widgets.plain(gv.FLAG)}: {widgets.plain(why)}. Its numbers here are not an evaluation.")
    widgets.worth(dataset, (run,))
said = query(gv.analysed, dataset)
if said:  # a study's answers: the analysed participants, and the study page with its exclusion log
    st.caption(f"{widgets.plain(said)}.")
    st.page_link(
        "pages/study.py", label="The study's exclusion log", icon=":material/rule:", query_params={"study": dataset}
    )
if spec.get("raters") == "per item":
    st.caption("This dataset's file does not name its participants: each rating counts as its own participant.")

table = query(gv.certainty, dataset, by, chosen)
people = table[table["who"] == gv.PEOPLE]
low, high = spec["scale"]
caption = charts.provenance(dataset, int(people["n"].sum()), {"split": spec.get("split"), "by": by}, list(chosen))
caption += f" · people: {said}" if said else ""  # an exported figure or table says whom it counts
export.chart(
    gradient_charts.certainty(table, spec["scale"], f"Certainty ({low} to {high})"),
    f"Mean certainty per {by}: people" + (" and the run" if run else ""),
    caption,
    "certainty",
    choose={"group": "group"},
)
if run:
    rho = computed(gv.agreement, table).iloc[0]
    st.metric(
        f"Spearman ρ, run vs people, over {int(rho['groups'])} {widgets.plain(by)} means",
        "n/a" if rho["rho"] != rho["rho"] else f"{rho['rho']:.3f}",
        help="Rank correlation of the two columns of group means; 95% CI from a bootstrap over groups.",
    )
    st.caption(
        f"95% CI [{rho['low']:.3f}, {rho['high']:.3f}]" if rho["rho"] == rho["rho"] else widgets.plain(rho["note"])
    )
export.table(table.round(4), f"Certainty per {by}", caption, "certainty-table")

effects = query(gv.prior_effect, dataset, by, chosen)
if not effects.empty:
    st.subheader("Prior effect")
    st.caption(
        f"Mean certainty after a fact that makes the content likely minus after one that makes it unlikely "
        f"(split {widgets.plain(spec.get('prior_split'))}), per {widgets.plain(by)}, with a 95% CI."
    )
    effect_caption = charts.provenance(
        dataset,
        int(effects.loc[effects["who"] == gv.PEOPLE, ["n_high_prior", "n_low_prior"]].to_numpy().sum()),
        {"by": by},
    )
    export.chart(
        gradient_charts.prior(effects, spec["scale"]),
        f"Prior effect per {by}",
        effect_caption,
        "prior",
        choose={"group": "group"},
    )
    export.table(effects.round(4), f"Prior effect per {by}", effect_caption, "prior-table")

st.subheader(f"Items behind a point (click one, or choose a {widgets.plain(by)})")
group = st.selectbox(
    widgets.plain(by.capitalize()),
    list(people["group"]),
    index=None,
    key="group",
    bind="query-params",
    placeholder="choose…",
)
if group is None:
    st.info("Click a point of the chart above, or choose a group, to list its items.")
else:
    frame = widgets.linked_items(dataset, gv.group_items, dataset, by, group, run)
    if frame is not None:
        st.markdown(f"**{len(frame):,} items** with {widgets.plain(by)} = {widgets.plain(group)}")
        export.table(
            frame,
            "Gradient items",
            charts.provenance(dataset, len(frame), {by: group}, list(chosen)),
            "group-items",
            column_config={
                "open": st.column_config.LinkColumn("example", display_text="open"),
                "people": st.column_config.NumberColumn("people (mean)", format="%.3f"),
                "model": st.column_config.NumberColumn("run", format="%.3f"),
            },
        )

fits.section(dataset, said)
