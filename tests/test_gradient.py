"""Graded projection (issue 30): CommitmentBank's mean rating per operator and verb recomputed from the CSV with
pandas, a real run's expected rating 3·P(E) − 3·P(C) from its stored probabilities, the items behind a point,
the Gradient page on the real store, and the template-against-people cell items of the Projection page."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from backend.analysis import evaluation as evaluate
from backend.analysis import gradient as gv
from backend.analysis import mixed_model, projection
from backend.api import Lab
from backend.datasets import commitmentbank as cb
from backend.execution import jobs
from backend.metrics import gradient as gradient_metrics
from backend.metrics import mixed_models
from backend.store.connection import connect
from tests.helpers.data import shared

PAPER = "value ~ prior + (1 | participant) + (1 | predicate) + (1 | content)"  # Degen & Tonhauser's prior model


@pytest.fixture(scope="module")
def cb_ratings() -> pd.DataFrame:
    """One row per rating of CommitmentBank-items.csv: item, verb, operator, value (columns read by position,
    as the header repeats `Embedding`)."""
    raw = pd.read_csv(shared("commitmentbank") / cb.FILE, header=None, skiprows=1, dtype=str, keep_default_na=False)
    frame = pd.DataFrame({"item": raw[1], "verb": raw[2], "operator": raw[12], "value": raw[19].str.split(",")})
    return frame.explode("value").astype({"value": float})


@pytest.mark.parametrize("by", ["operator", "verb"])
def test_people_s_mean_rating_per_group_is_the_csv_s(real_con, cb_ratings, by):
    table = gv.certainty(real_con, "commitmentbank", by)
    people = table[table["who"] == gv.PEOPLE].set_index("group")
    want = cb_ratings.groupby(by)["value"].agg(["mean", "size"])
    assert set(people.index) == set(want.index)
    assert (
        np.allclose(people.loc[want.index, "mean"], want["mean"])
        and (people["n"] == want.loc[people.index, "size"]).all()
    )
    few = (people["participants"] < gradient_metrics.MIN_EACH) | (
        people["items"] < gradient_metrics.MIN_EACH
    )  # too few for an interval
    assert people.loc[few, ["low", "high"]].isna().all().all()
    assert (people.loc[~few, "low"] <= people.loc[~few, "mean"]).all()
    assert (people.loc[~few, "mean"] <= people.loc[~few, "high"]).all()
    assert list(people["mean"]) == sorted(people["mean"], reverse=True)  # ordered by people's mean
    if by == "operator":  # the gradient the binarised view hid: modal > conditional > question > negation
        assert list(people.index) == ["modal", "conditional", "question", "negation"]
        assert people.loc["negation", "mean"] == pytest.approx(-0.6485, abs=1e-4)


def test_a_run_s_expected_rating_is_3_pe_minus_3_pc_of_its_stored_probabilities(cb_run):
    store, run_id = cb_run
    con = connect(store)
    try:
        table = gv.certainty(con, "commitmentbank", "operator", (run_id,))
        stored = con.execute(
            "SELECT p.probs, e.extra->>'$.operator' AS operator, r.config->'$.labels' AS labels FROM predictions p "
            "JOIN runs r USING (run_id) JOIN examples e ON e.dataset_id = r.dataset_id AND e.example_id = p.example_id "
            "WHERE p.run_id = $r",
            {"r": run_id},
        ).df()
        report = evaluate.evaluate(con, "commitmentbank")
        items = gv.group_items(con, "commitmentbank", "operator", "negation", run_id)
    finally:
        con.close()
    labels = json.loads(stored["labels"].iloc[0])
    e, c = labels.index("E"), labels.index("C")
    stored["rating"] = [3 * p[e] - 3 * p[c] for p in stored["probs"]]
    want = stored.groupby("operator")["rating"].mean()
    mine = table[table["who"] == run_id].set_index("group")
    assert len(mine) == 4 and (mine["items"] == mine["n"]).all()
    assert np.allclose(mine.loc[want.index, "mean"], want) and mine["mean"].between(-3, 3).all()
    people = table[table["who"] == gv.PEOPLE].set_index("group")["mean"]
    rho = gv.agreement(table).iloc[0]
    assert rho["groups"] == 4
    assert rho["rho"] == pytest.approx(stats.spearmanr(mine.loc[people.index, "mean"], people).statistic)
    # evaluate keeps the classification tables and adds the graded ones, per verb and per operator
    assert "Accuracy and macro-F1 per run and split (95% bootstrap CI)" in report
    assert {evaluate.CERTAINTY.format(by=b) for b in ("verb", "operator")} <= set(report)
    # the items behind the negation point: 605, with the run's rating of each
    assert len(items) == 605 and items["model"].mean() == pytest.approx(want["negation"])
    assert Lab(store).gradient("commitmentbank", "operator", [run_id]).equals(table)  # the notebook API


def test_the_items_behind_a_point_carry_the_file_s_mean_rating(real_con, cb_ratings):
    items = gv.group_items(real_con, "commitmentbank", "verb", "know").set_index("example_id")
    want = cb_ratings[cb_ratings["verb"] == "know"].groupby("item")["value"].agg(["mean", "size"])
    assert set(items.index) == set(want.index)
    assert (
        np.allclose(items.loc[want.index, "people"], want["mean"])
        and (items.loc[want.index, "ratings"] == want["size"]).all()
    )


def test_a_point_that_is_not_there_or_a_grouping_the_dataset_lacks_is_named(real_con):
    with pytest.raises(ValueError, match="not 'predicate'"):
        gv.certainty(real_con, "commitmentbank", "predicate")
    with pytest.raises(ValueError, match="no rated items with verb = 'ponder'"):
        gv.group_items(real_con, "commitmentbank", "verb", "ponder")
    with pytest.raises(ValueError, match="has no graded ratings"):
        gv.certainty(real_con, "nope")


def test_a_mixed_model_reads_the_prior_experiment_with_contents_as_items(real_con):
    """Issue 55: the model of the prior is fitted on the fact experiment's 5,320 target ratings from 266 participants,
    its items the contents, each shown after a high-prior and a low-prior fact (so the prior varies within items)."""
    model = mixed_model.chosen(real_con, "projective_probability", "prior")
    rows = mixed_model.frame(real_con, model)
    assert len(rows) == 5320 and rows["participant"].nunique() == 266
    assert list(rows.columns) == ["participant", "item", "prior", "predicate", "content", "value"]  # facets by name
    assert (rows.groupby("item")["prior"].nunique() == 2).all() and set(rows["prior"]) == {"high", "low"}
    assert mixed_model.formula(real_con, model) == (
        "value ~ prior + (1 + prior | participant) + (1 + prior | item)"
    )  # the maximal structure: the prior varies within participants and within contents
    assert mixed_model.groups(rows, model)["item"] == "the 20 content values"
    with pytest.raises(mixed_models.FormulaError, match="no column 'verb'; the columns are participant, item, prior"):
        mixed_model.chosen(real_con, "projective_probability", "prior", formula="value ~ verb + (1 | participant)")


def test_a_researcher_writes_the_paper_s_model_on_the_gradient_page(open_page, store_copy, tmp_path, monkeypatch):
    """Issue 62: the prior experiment's model with by-predicate and by-content intercepts, written on the page,
    fitted as a job, gives lme4's estimate (0.1824, SE 0.0079: lme4 1.1-31 on the same rows) with its Satterthwaite
    t test and the term's likelihood-ratio test once; a formula naming a column that does not exist is refused on
    the page, naming the columns."""
    monkeypatch.setenv("PLAB_DATA_DIR", str(tmp_path))  # the kept fit and the job's log
    at = open_page(store_copy, "pages/gradient.py", {"dataset": "projective_probability"})
    at.selectbox(key="fit_condition").select("prior (split fact)").run()
    at.text_input(key="fit_formula_prior").input("value ~ prior + (1 | person)").run()
    assert any("no column 'person'; the columns are participant, item, prior, predicate" in e.value for e in at.error)
    assert not any(b.key == "fit_start" for b in at.button)
    at.text_input(key="fit_formula_prior").input(PAPER).run()
    at.selectbox(key="fit_reference").select("low").run()
    at.button(key="fit_start").click().run()
    assert not at.exception
    key = "model-projective_probability-prior"
    for _ in range(600):
        if not jobs.alive(key):
            break
        time.sleep(0.2)
    at.run()
    assert not at.exception, at.exception
    assert at.code[0].value == PAPER  # the formula as text to copy
    tables = {tuple(d.value.columns[:2]): d.value for d in at.dataframe}
    fixed, terms = tables[("term", "estimate")], tables[("term", "chi2")]
    high = fixed.set_index("term").loc["priorhigh"]
    assert (high["estimate"], high["se"], high["p"]) == (0.1824, 0.0079, "< .001") and 5000 < high["df"] < 5400
    assert terms["term"].tolist() == ["prior"] and terms["p"].tolist() == ["< .001"]


def test_the_gradient_page_shows_people_a_run_rho_and_a_point_s_items(open_page, cb_run):
    store, run_id = cb_run
    at = open_page(
        store, "pages/gradient.py", {"dataset": "commitmentbank", "by": "operator", "run": run_id, "group": "modal"}
    )
    assert not at.exception
    shown = [df.value for df in at.dataframe]
    table, items = shown[0], shown[-1]
    assert set(table["who"]) == {gv.PEOPLE, run_id} and len(table) == 8
    assert len(items) == 311 and items["open"].str.startswith("example?dataset=commitmentbank").all()
    assert at.metric[0].label == "Spearman ρ, run vs people, over 4 operator means"
    assert "3·P\\(E\\) − 3·P\\(C\\)" in at.selectbox(key="run").label  # the formula, escaped for Markdown
    at = open_page(store, "pages/gradient.py", {"dataset": "projective_probability", "group": "know"})
    assert not at.exception
    tables = [df.value for df in at.dataframe]
    assert len(tables[0]) == 20 and "effect" in tables[1].columns  # 20 predicates; the prior effect
    assert set(tables[-1]["split"]) == {"no-fact", "fact"}  # a point lists the fact experiment's items too
    # issue 55: a mixed model of the predicates or of the prior (items: the contents), offered, not fitted here
    assert at.selectbox(key="fit_condition").options == ["predicate (split no-fact)", "prior (split fact)"]
    assert any("No fit of this model on the answers as they are now" in i.value for i in at.info)
    at = open_page(store, "pages/gradient.py", {"dataset": "commitmentbank"})
    said = [i.value for i in at.info]
    assert any("No mixed model: commitmentbank's rater ids are numbered within each item" in i for i in said), said


def test_template_cell_items_give_the_cell_s_share(real_con, open_page, real_store):
    table = projection.template_vs_people(real_con, "propres").set_index(["trigger", "operator"])
    cell = projection.template_cell(real_con, "propres", "manner", "negation")
    single = cell[~cell["ambiguous"]]
    assert len(cell) == table.loc[("manner", "negation"), "items"]
    assert single["majority differs"].mean() == pytest.approx(table.loc[("manner", "negation"), "majority differs"])
    assert cell["majority differs"].iloc[0]  # differing items first
    at = open_page(
        real_store,
        "pages/projection.py",
        {"template_dataset": "propres", "template_trigger": "manner", "template_operator": "negation"},
    )
    assert not at.exception
    listed = at.dataframe[-1].value
    assert len(listed) == len(cell) and list(listed["example_id"]) == list(cell["example_id"])


def test_rho_of_a_run_with_one_value_everywhere_says_why_it_is_undefined_and_its_mean_is_clean():
    groups = ["know", "think", "say", "hear"]
    table = pd.DataFrame(
        {
            "who": [gv.PEOPLE] * 4 + ["const"] * 4,
            "group": groups * 2,
            "mean": [0.9, 0.3, 0.5, 0.7] + [0.25] * 4,
        }
    )
    row = gv.agreement(table).iloc[0]
    assert row["rho"] != row["rho"] and row["note"] == "undefined: the run gives every group the same value (0.25)"
    ratings = pd.DataFrame(
        {"predicate": ["know"] * 4, "rater": list("abcd"), "item": [1, 2, 3, 4], "value": [0.1, 0.2, -0.1, -0.2]}
    )
    assert gradient_metrics.per_predicate(ratings, draws=50)["mean"].tolist() == [0.0]  # not 6.9e-18
