"""The NOPE page: its backend views reproduce the paper for one run or group, list the items behind
every bar or cell, and the page (AppTest on the real store) renders, reacts and round-trips its URL."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from backend.store.connection import connect
from backend.views import nope as nv

ROOT = Path(__file__).resolve().parent.parent
ROBERTA = "RoBERTa-large · mnli-snli-anli-fever (mean of 5)"
DEBERTA = "nope/DeBERTa-xlarge/mnli-snli-anli-fever/1"


@pytest.fixture(scope="module")
def con(real_store):
    connection = connect(real_store)
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def roberta(con):
    return nv.report_for(con, ROBERTA)


def test_run_choices_put_the_papers_group_first_and_mark_paper_runs(con):
    choices = nv.run_choices(con).set_index("name")
    assert choices.index[0] == nv.DEFAULT_CHOICE == ROBERTA
    assert choices.loc[ROBERTA, "kind"] == "group" and choices.loc[ROBERTA, "seeds"] == 5
    assert choices.loc[DEBERTA, "in_paper_tables"] and not choices.loc["nope/baseline/always-E", "in_paper_tables"]
    assert choices.loc["nope/baseline/always-E", "source"] == "baseline"


@pytest.mark.parametrize("choice, paper", [(ROBERTA, "RoBERTa-large (mean of 5)"), (DEBERTA, "DeBERTa-v2-xlarge")])
def test_report_for_one_choice_reproduces_table4(con, roberta, choice, paper):
    report = roberta if choice == ROBERTA else nv.report_for(con, choice)
    table4 = report[nv.TABLE4]
    assert set(table4["run"]) == {choice}
    assert table4["ours"].tolist() == table4[f"paper {paper}"].tolist() == nv.PAPER_TABLE4[paper]


def test_report_for_has_corpus_tables_and_only_the_chosen_rows(roberta):
    assert (
        roberta[nv.FIGURE2]["n"].sum() == 2386 and roberta[nv.TABLE2].set_index("trigger_type").loc["all", "n"] == 1147
    )
    assert set(roberta[nv.FIGURE5]["run"]) == {ROBERTA} and len(roberta["runs"]) == 5 and not roberta["note"]
    main = roberta[nv.FIGURE5].query("split == 'main' and trigger_type == 'all'").iloc[0]
    assert main["n"] == 2386 and 0.75 < main["value"] < 0.85
    assert roberta[nv.MAJORITY_N]["n"].iloc[0] == 419
    calibration = roberta[nv.CALIBRATION]
    assert calibration["run"].iloc[0] == f"{ROBERTA}: mean probabilities" and len(calibration) == 12
    curve = roberta[nv.CURVE].query("split == 'main' and label == 'E'")
    assert curve["n"].sum() == 2386 and curve["model probability"].is_monotonic_increasing


def test_report_for_an_unknown_choice_lists_the_known_ones(con):
    with pytest.raises(ValueError, match="unknown NOPE run or group 'GPT-9'; choose one of: RoBERTa-large"):
        nv.report_for(con, "GPT-9")


@pytest.mark.parametrize(
    "trigger, polarity, label",
    [("clefts", "negated", "N"), ("clause_embedding_predicates", "negated", "C"), ("re_verbs", "non-negated", "E")],
)
def test_examples_in_a_figure2_cell_are_exactly_the_counted_items(con, roberta, trigger, polarity, label):
    figure2 = roberta[nv.FIGURE2].set_index(["trigger_type", "polarity"])
    items = nv.examples_in(con, "figure2", trigger_type=trigger, polarity=polarity, gold_label=label)
    assert len(items) == figure2.loc[(trigger, polarity), label] > 0 and items["example_id"].is_unique
    assert set(zip(items["trigger_type"], items["polarity"], items["gold_label"], items["split"])) == {
        (trigger, polarity, label, "main")
    }
    whole_bar = nv.examples_in(con, "figure2", trigger_type=trigger, polarity=polarity)
    assert len(whole_bar) == figure2.loc[(trigger, polarity), "n"]


def test_examples_in_table2_table4_and_figure5_match_their_cells(con, roberta):
    table2 = roberta[nv.TABLE2].set_index("trigger_type")
    members = nv.examples_in(con, "table2", trigger_type="all", change="other")
    assert len(members) == 2 * round(table2.loc["all", "other"] * table2.loc["all", "n"] / 100)
    table4 = roberta[nv.TABLE4].set_index(["subset", "polarity"])
    negated = nv.examples_in(con, "table4", ROBERTA, subset="E→{N,C}", polarity="negated")
    assert len(negated) == table4.loc[("E→{N,C}", "negated"), "n"] and set(negated["polarity"]) == {"negated"}
    assert round(100 * negated["correct"].mean(), 1) == 32.7
    one_run = nv.examples_in(con, "figure5", DEBERTA, split="adv", trigger_type="clefts")
    assert set(one_run["correct"]) <= {0.0, 1.0} and one_run["predicted"].isin(["E", "N", "C"]).all()


def test_examples_in_needs_a_whole_cell(con):
    with pytest.raises(ValueError, match="figure5 needs trigger_type"):
        nv.examples_in(con, "figure5", ROBERTA, split="adv")
    with pytest.raises(ValueError, match="allowed: figure2"):
        nv.examples_in(con, "figure9")


# ---- the NOPE page (AppTest on the real store) ----


@pytest.fixture()
def page(open_page, real_store):
    return lambda params=None: open_page(real_store, "pages/nope.py", params)


def frame_with(at: AppTest, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_default_view_is_the_papers_group_with_figure2(page):
    at = page()
    assert not at.exception and not at.error
    assert at.selectbox(key="run").value == ROBERTA
    assert any("In the paper's tables" in m.value for m in at.markdown)
    assert any("stored predictions" in i.value and "weak on NOPE" in i.value for i in at.info)
    assert frame_with(at, "E %")["n"].sum() == 2386
    labels = {b.proto.label for b in at.get("download_button")}
    assert {"PNG", "SVG", "CSV", "Parquet"} <= labels


def test_table4_shows_ours_beside_the_paper_and_follows_the_run_picker(page):
    at = page({"section": "Table 4"})
    assert not at.exception
    assert frame_with(at, "ours")["ours"].tolist() == [89.9, 89.2, 80.6, 32.7, 35.1, 68.4]
    at.selectbox(key="run").select("nope/baseline/always-E").run()
    table4 = frame_with(at, "ours")
    assert table4["ours"].tolist() == [100.0, 100.0, 100.0, 0.0, 0.0, 100.0]
    assert table4["paper RoBERTa-large (mean of 5)"].tolist() == nv.PAPER_TABLE4["RoBERTa-large (mean of 5)"]
    assert at.selectbox(key="run").proto.query_param_key == "run"  # bound to the URL


@pytest.mark.parametrize(
    "section, columns",
    [
        ("Table 2", "no change"),
        ("Figure 3", "mean_sd"),
        ("Table 3", "unanimous %"),
        ("Figure 5", "accuracy"),
        ("Majority N", "accuracy"),
        ("Calibration", "mean JSD (bits)"),
    ],
)
def test_every_section_renders(page, section, columns):
    at = page({"section": section})
    assert not at.exception and not at.error
    assert not frame_with(at, columns).empty


def test_a_chosen_cell_lists_its_examples_and_the_url_reproduces_it(page):
    at = page()
    at.selectbox(key="cell_trigger").select("clefts")
    at.selectbox(key="cell_polarity").select("negated")
    at.selectbox(key="cell_label").select("N").run()
    items = frame_with(at, "open")
    assert len(items) == 11 and set(items["gold_label"]) == {"N"}
    assert items["open"].iloc[0] == f"example?dataset=nope&example={items['example_id'].iloc[0]}"
    # the browser writes bound widgets into the URL (AppTest does not simulate that): build it from them
    url = {key: at.selectbox(key=key).value for key in ("cell_trigger", "cell_polarity", "cell_label")}
    assert all(at.selectbox(key=key).proto.query_param_key == key for key in url)
    again = page(url)
    assert frame_with(again, "open")["example_id"].tolist() == items["example_id"].tolist()
    link = next(p.proto for p in again.get("page_link"))
    assert link.page == "example" and link.query_string == f"dataset=nope&example={items['example_id'].iloc[0]}"
