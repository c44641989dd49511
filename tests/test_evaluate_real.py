"""`python -m backend evaluate` on the real NOPE data reproduces the paper, and baselines are real runs."""

from __future__ import annotations

import json

import pytest

from backend.analysis import evaluation as evaluate
from backend.cli.main import main

# DOMAIN.md / the NOPE paper's Table 4 (accuracy %, models trained on MNLI+SNLI+ANLI+FEVER)
PAPER_TABLE4 = {
    "RoBERTa-large · mnli-snli-anli-fever (mean of 5)": [89.9, 89.2, 80.6, 32.7, 35.1, 68.4],
    "nope/DeBERTa-xlarge/mnli-snli-anli-fever/1": [90.8, 88.6, 81.8, 32.1, 38.9, 68.9],
}
COLUMNS = [
    "E→E non-negated",
    "E→E negated",
    "E→{N,C} non-negated",
    "E→{N,C} negated",
    "{N,C}→E non-negated",
    "{N,C}→E negated",
]


@pytest.fixture(scope="module")
def nope_report(real_store):
    from backend.store.connection import connect

    con = connect(real_store)
    yield evaluate.evaluate(con, "nope")
    con.close()


@pytest.mark.parametrize("run, expected", PAPER_TABLE4.items())
def test_table4_reproduces_the_paper_to_one_decimal(nope_report, run, expected):
    assert evaluate.table4(nope_report).loc[run, COLUMNS].tolist() == expected


def test_figure2_counts_cover_the_main_corpus(nope_report):
    figure2 = nope_report["Figure 2: gold label distribution per trigger × polarity (main)"]
    assert len(figure2) == 20 and figure2["n"].sum() == 2386
    assert figure2[["E", "N", "C"]].sum().tolist() == [1922, 419, 45]


def test_table2_label_change(nope_report):
    table2 = nope_report["Table 2: label change under negation, % of pairs (non-negated → negated)"].set_index(
        "trigger_type"
    )
    assert table2.loc["all", "n"] == 1147
    assert table2.loc["all", ["no change", "E→{N,C}", "{N,C}→E", "other"]].sum() == pytest.approx(100)
    # hard triggers keep their presupposition under negation more often than the soft ones
    assert table2.loc["clefts", "no change"] > table2.loc["all", "no change"]
    assert table2.loc["numeric_determiners", "no change"] > table2.loc["all", "no change"]


def test_table3_agreement(nope_report):
    table3 = nope_report["Table 3: annotator agreement"].set_index("split")
    assert table3.loc["main", "items"] == 2386 and table3.loc["adv", "items"] == 346
    assert 0 < table3.loc["main", "unanimous %"] < table3.loc["main", "individual = majority %"] < 100


def test_figure5_has_every_trigger_on_both_corpora_with_ci(nope_report):
    figure5 = nope_report["Figure 5: accuracy per trigger, main and adversarial"]
    roberta = figure5[figure5["run"] == "RoBERTa-large · mnli-snli-anli-fever (mean of 5)"]
    assert set(roberta["trigger_type"]) >= {"clefts", "re_verbs", "all"} and set(roberta["split"]) == {"main", "adv"}
    assert (roberta["low"] <= roberta["value"]).all() and (roberta["value"] <= roberta["high"]).all()
    main_all = roberta.query("split == 'main' and trigger_type == 'all'").iloc[0]
    assert main_all["n"] == 2386 and 0.75 < main_all["value"] < 0.85  # DOMAIN.md: ~0.79 on NOPE main


def test_baselines_stand_beside_models(nope_report):
    headline = nope_report["Accuracy and macro-F1 per run and split (95% bootstrap CI)"]
    always_e = headline.query("run == 'nope/baseline/always-E' and split == 'main'").iloc[0]
    assert always_e["accuracy"].startswith("80.6 ")  # 1,922 of 2,386 main items are E
    assert always_e["most predicted"] == "E 100%"


def test_calibration_compares_crowd_and_model(nope_report):
    calibration = nope_report["Human vs model: crowd label shares vs model probabilities"].set_index(["run", "split"])
    row = calibration.loc[("nope/DeBERTa-xlarge/mnli-snli-anli-fever/1", "main")]
    assert row["n"] == 2386 and 0 < row["mean JSD (bits)"] < 1 and 0 <= row["ECE"] < 1


def test_evaluate_cli_prints_markdown_and_writes_json(real_store, tmp_path, capsys):
    out = tmp_path / "nope.json"
    assert main(["--store", str(real_store), "evaluate", "--dataset", "nope", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "## Table 4: accuracy on projection subsets (main) (%)" in printed
    assert "| RoBERTa-large · mnli-snli-anli-fever (mean of 5) |              89.9 |" in printed
    report = json.loads(out.read_text())
    assert len(report["Table 2: label change under negation, % of pairs (non-negated → negated)"]) == 11


def test_falseqa_trivial_baselines(real_store):
    from backend.store.connection import connect

    con = connect(real_store)
    headline = evaluate.evaluate(con, "falseqa")["Accuracy and macro-F1 per run and split (95% bootstrap CI)"]
    con.close()
    test = headline[headline["split"] == "test"].set_index("run")
    assert set(test.index) >= {
        "falseqa/baseline/random",
        "falseqa/baseline/always-FP",
        "falseqa/baseline/always-N",
        "falseqa/baseline/majority",
    }
    assert test.loc["falseqa/baseline/always-FP", "accuracy"].startswith("50.0 ")
    assert test.loc["falseqa/baseline/always-FP", "macro-F1"].startswith("33.3 ")


# The nearest-neighbour baseline with the bundled embedder (FalseQA test: n 1,374, lower bound above 50%) is
# checked on the store the README's first run builds: tests/test_app.py.


def test_pair_table_counts_every_negation_pair(nope_report):
    table = nope_report["Minimal pairs: pair accuracy, flips and McNemar per run and pair set"]
    always_e = table.query("run == 'nope/baseline/always-E' and pairs == 'negation' and split == 'main'").iloc[0]
    assert (
        always_e["n"] == 1147
        and always_e["both right"] + always_e["a right only"] + always_e["b right only"] + always_e["both wrong"]
        == 1147
    )
    assert always_e["flip rate"].startswith("0.0 ")  # a constant never flips
    assert always_e["gold flip rate"] == 22.9  # 100 − Table 2's 77.1% 'no change'


def test_compare_two_runs_reports_paired_p_values(real_store, capsys):
    assert (
        main(
            [
                "--store",
                str(real_store),
                "evaluate",
                "--dataset",
                "nope",
                "--compare",
                "nope/DeBERTa-xlarge/mnli-snli-anli-fever/1",
                "nope/baseline/random",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    main_row = next(line for line in printed.splitlines() if line.startswith("| main"))
    cells = [c.strip() for c in main_row.strip("|").split("|")]
    assert cells[1] == "2386" and float(cells[4]) > 30 and float(cells[7]) < 0.01 and float(cells[8]) < 0.01


@pytest.mark.parametrize(
    ("run", "said"),
    [
        ("nope/no-such-model/1", "'nope/no-such-model/1' (no such run of nope)"),
        ("nli-zero-shot@\u20601", "'nli-zero-shot@1' (no such run of nope)"),  # an id copied from a page
    ],
)
def test_evaluate_names_runs_it_cannot_evaluate_and_lists_the_complete_ones(real_store, capsys, run, said):
    assert main(["--store", str(real_store), "evaluate", "--dataset", "nope", "--run", run]) == 1
    err = capsys.readouterr().err
    assert said in err and "Complete runs of nope: nope/BOW/mnli-snli-anli-fever/0" in err


def test_evaluate_takes_a_run_id_pasted_with_an_invisible_word_joiner(real_store, capsys, tmp_path):
    run = "nope/RoBERTa-large/mnli-snli-anli-fever/\u20601"
    out = tmp_path / "r.json"
    assert main(["--store", str(real_store), "evaluate", "--dataset", "nope", "--run", run, "--json", str(out)]) == 0
    runs = {
        row["run"] for row in json.loads(out.read_text())["Accuracy and macro-F1 per run and split (95% bootstrap CI)"]
    }
    assert runs == {"nope/RoBERTa-large/mnli-snli-anli-fever/1"}
