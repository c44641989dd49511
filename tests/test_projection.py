"""Projection across operators on the real data: the cells, human survival from crowd labels, ratings and
gold, a model's profile with contamination flags, and the Projection page (AppTest)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from backend.analysis import projection
from backend.models import contamination, training_data
from backend.store import writer
from backend.views import explore


def test_cells_cover_every_dataset_with_a_spec_and_their_counts(real_con):
    table = projection.human_table(real_con)
    assert set(table["dataset"]) == {"nope", "imppres", "commitmentbank", "propres"}
    nope = table[table["dataset"] == "nope"]
    assert set(nope["operator"]) == {"unembedded", "negation"} and len(nope) == 20
    # NOPE main: every item of the main corpus with a trigger, split by polarity
    assert (
        nope["n"].sum()
        == real_con.execute("SELECT count(*) FROM examples WHERE dataset_id = 'nope' AND split = 'main'").fetchone()[0]
    )
    imppres = table[table["dataset"] == "imppres"]
    assert (
        len(imppres) == 9 * 5 and (imppres["n"] == 100).all() and (imppres["human"] == 1.0).all()
    )  # gold E by construction
    cb = table[table["dataset"] == "commitmentbank"]
    assert set(cb["operator"]) == {"negation", "question", "modal", "conditional"} and cb["n"].sum() == 1200
    assert set(cb["family"]) == {"clause_embedding_predicates"}
    assert set(imppres.loc[imppres["trigger"].str.startswith("cleft"), "family"]) == {"clefts"}


def test_human_survival_is_the_share_of_judgements_that_say_it_survives(real_con):
    items = projection.items(real_con, "nope")
    one = items.iloc[0]
    labels = [
        r[0]
        for r in real_con.execute(
            "SELECT label FROM ratings WHERE dataset_id = 'nope' AND example_id = $e AND criterion = 'nope_label'",
            {"e": one["example_id"]},
        ).fetchall()
    ]
    assert one["survives"] == pytest.approx(sum(label == "E" for label in labels) / len(labels))
    cb = projection.items(real_con, "commitmentbank")
    row = cb.iloc[0]
    values = [
        r[0]
        for r in real_con.execute(
            "SELECT value FROM ratings WHERE dataset_id = 'commitmentbank' AND example_id = $e",
            {"e": row["example_id"]},
        ).fetchall()
    ]
    assert row["survives"] == pytest.approx(np.mean([v >= 1 for v in values]))
    # negation lowers survival for clause-embedding predicates in NOPE, as the crowd judged it
    table = projection.human_table(real_con).set_index(["dataset", "trigger", "operator"]).sort_index()
    embed = table.loc[("nope", "clause_embedding_predicates")]
    assert embed.loc["negation", "human"] < embed.loc["unembedded", "human"]
    low, high = table.loc[("nope", "clefts", "negation"), ["human_low", "human_high"]]
    assert low < table.loc[("nope", "clefts", "negation"), "human"] < high


def _store_run(con, run_id: str, dataset: str, model: str, label_of, trained_on: list[str]) -> None:
    items = projection.items(con, dataset)
    run = {
        "run_id": run_id,
        "dataset_id": dataset,
        "task": "nli",
        "model_id": model,
        "source": "user",
        "status": "complete",
        "config": {"labels": ["E", "N", "C"], "trained_on": trained_on},
    }
    predictions = [{"run_id": run_id, "example_id": e, "label": label_of(i)} for i, e in enumerate(items["example_id"])]
    writer.replace_runs(con, [run], predictions)


def test_a_model_profile_sits_beside_people_and_contaminated_cells_are_left_out(real_con):
    _store_run(real_con, "nope/user/half-e", "nope", "half-e", lambda i: "E" if i % 2 else "N", ["mnli"])
    _store_run(real_con, "imppres/user/half-e", "imppres", "half-e", lambda i: "E", ["imppres"])
    try:
        choices = projection.model_choices(real_con).set_index("name")
        assert choices.loc["half-e", "contaminated"] == {"imppres": "its model was trained on imppres"}
        profile = projection.profile(real_con, "half-e")
        nope = profile[profile["dataset"] == "nope"]
        assert nope["model"].notna().all() and nope["model"].between(0.3, 0.7).all()
        assert (nope["model_n"] == nope["n"]).all() and (nope["contaminated"] == "").all()
        imppres = profile[profile["dataset"] == "imppres"]
        assert imppres["model"].isna().all() and (imppres["contaminated"] == "its model was trained on imppres").all()
        shown = projection.profile(real_con, "half-e", include_contaminated=True)
        assert (shown.loc[shown["dataset"] == "imppres", "model"] == 1.0).all()
        cell = projection.cell_items(real_con, "nope", "clefts", "negation", "half-e")
        assert len(cell) == nope.set_index(["trigger", "operator"]).loc[("clefts", "negation"), "n"]
        assert set(cell["model_E"]) <= {0.0, 1.0}
        with pytest.raises(ValueError, match="unknown model"):
            projection.profile(real_con, "no-such-model")
    finally:
        for run_id in ("nope/user/half-e", "imppres/user/half-e"):
            writer.replace_run_table(real_con, None, None, delete=run_id)


def test_contamination_names_and_reasons():
    assert training_data.names(json.loads('["SNLI", "falseqa train"]')) == ("snli", "falseqa:train")
    assert training_data.reason("falseqa", "test", ["falseqa:train"]) == ""
    assert training_data.reason("falseqa", "train", ["falseqa:train"]) == "its model was trained on falseqa:train"
    assert training_data.reason("nope", None, ["mnli", "snli"]) == ""


# ---- the page ----


@pytest.fixture()
def page(open_page, real_store):
    return lambda params=None: open_page(real_store, "pages/projection.py", params)


def test_the_page_shows_the_cells_and_lists_a_cell_s_items_from_the_url(page):
    at = page(
        {"cell_dataset": "commitmentbank", "cell_trigger": "clause-embedding (factive)", "cell_operator": "modal"}
    )
    assert not at.exception and not at.error
    cells = next(d.value for d in at.dataframe if "judged_by" in d.value.columns)
    assert set(cells["dataset"]) == {"nope", "imppres", "commitmentbank", "propres"}
    items = next(d.value for d in at.dataframe if "open" in d.value.columns)
    assert len(items) == int(
        cells.set_index(["dataset", "trigger", "operator"]).loc[
            ("commitmentbank", "clause-embedding (factive)", "modal"), "n"
        ]
    )
    assert at.selectbox(key="cell_operator").proto.query_param_key == "cell_operator"
    labels = {b.proto.label for b in at.get("download_button")}
    assert {"PNG", "SVG", "CSV", "Parquet"} <= labels


def test_a_detector_trained_on_falseqa_is_shown_beside_its_falseqa_score_on_qaqa(real_con):
    """Transfer: the same model's run on (QA)² and on FalseQA's held-out test split, side by side; its
    FalseQA run on the train split would be contaminated, so it is not the in-distribution score."""
    from backend.analysis import evaluation as evaluate

    def store(run_id, dataset, split):
        ids = [
            r[0]
            for r in real_con.execute(
                "SELECT example_id FROM examples WHERE dataset_id = $d AND split = $s", {"d": dataset, "s": split}
            ).fetchall()
        ]
        run = {
            "run_id": run_id,
            "dataset_id": dataset,
            "task": "detect",
            "model_id": "my-detector",
            "source": "user",
            "status": "complete",
            "config": {"labels": ["N", "FP"], "split": split, "trained_on": ["falseqa:train"]},
        }
        writer.replace_runs(real_con, [run], [{"run_id": run_id, "example_id": e, "label": "FP"} for e in ids])

    runs = {
        "qaqa/user/my-detector": ("qaqa", "eval"),
        "falseqa/user/my-detector": ("falseqa", "test"),
        "falseqa/user/my-detector-train": ("falseqa", "train"),
    }
    for run_id, (dataset, split) in runs.items():
        store(run_id, dataset, split)
    try:
        table = evaluate.evaluate(real_con, "qaqa")[evaluate.TRANSFER]
        assert set(table["where"]) == {"falseqa test"} and set(table["trained on"]) == {"falseqa:train"}
        assert table["on qaqa"].iloc[0].startswith("0.333")  # always FP on a balanced set: macro-F1 1/3
        assert contamination.flags(real_con, "falseqa") == {
            "falseqa/user/my-detector-train": "its model was trained on falseqa:train"
        }
        listed = explore.runs_for(real_con, "falseqa").set_index("run_id")["contaminated"]  # from one listing query
        assert listed["falseqa/user/my-detector-train"] == "its model was trained on falseqa:train"
        assert listed["falseqa/user/my-detector"] == ""
    finally:
        for run_id in runs:
            writer.replace_run_table(real_con, None, None, delete=run_id)


def test_a_user_dataset_with_an_operator_column_joins_the_projection_page(real_store, tmp_path):
    """No built-in name needed: a user's NLI file with trigger_type and an operator column becomes cells;
    an operator value that is none of the five is rejected with its line and column, and nothing is stored."""
    import pandas as pd

    from backend.datasets.base import DataError
    from backend.imports import datasets as user_datasets
    from backend.imports.files import read

    rows = pd.DataFrame(
        {
            "premise": [f"Jo {v} stopped smoking {i}." for i, v in enumerate(["", "didn't", "might have"] * 4)],
            "hypothesis": ["Jo used to smoke."] * 12,
            "label": ["E", "E", "N"] * 4,
            "trigger_type": ["change_of_state"] * 12,
            "op": ["plain", "negated", "modal"] * 4,
        }
    )
    path = tmp_path / "mine.csv"
    rows.to_csv(path, index=False)
    bundle, description = user_datasets.check(
        read(path), user_datasets.DatasetOptions(name="my-projection", task="nli", operator_column="op")
    )
    assert description.projection["operators"] == {"modal": "modal", "negated": "negation", "plain": "unembedded"}
    import shutil

    from backend.store.connection import connect

    shutil.copy(real_store, tmp_path / "lab.duckdb")  # a copy: the shared store keeps its datasets
    con = connect(tmp_path / "lab.duckdb")
    user_datasets.save(con, bundle)
    table = projection.human_table(con)
    con.close()
    mine = table[table["dataset"] == "my-projection"].set_index("operator")
    assert mine.loc["unembedded", "human"] == 1.0 and mine.loc["modal", "human"] == 0.0 and mine["n"].sum() == 12
    assert mine["judged_by"].iloc[0] == "gold label (by construction)"
    rows.loc[7, "op"] = "sometimes"
    rows.to_csv(path, index=False)
    with pytest.raises(DataError, match="operator 'sometimes' is not one of") as failed:
        user_datasets.check(
            read(path), user_datasets.DatasetOptions(name="my-projection", task="nli", operator_column="op")
        )
    assert failed.value.line == 9 and failed.value.field == "op"
