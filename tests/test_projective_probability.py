"""Projective probability (issue 30): the real files' counts and checksums as in
../shared/datasets/projective_probability/SOURCE.md, every slider rating as a crowd rating, the reconstructed
premises, a few predicate means recomputed from the CSV with pandas, broken rows named by file, line and field."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from backend.analysis import evaluation as evaluate
from backend.api import Lab
from backend.datasets import projective_probability as pp
from backend.datasets.base import DataError, Source
from backend.execution import batch, runs
from backend.store.connection import connect
from tests.helpers.data import checked_sums, manifest_sums, shared


def load(root):
    return pp.load({"projective_probability": Source("projective_probability", root, "shared")})


@pytest.fixture(scope="module")
def bundle():
    return load(shared("projective_probability"))


def test_the_files_have_the_checksums_of_source_md_and_the_download_manifest():
    listed = checked_sums("projective_probability")
    assert set(listed) == {"prior_means.csv", *pp.FILES.values()} and manifest_sums("projective_probability") == listed


def test_the_real_files_load_with_the_documented_counts(bundle):
    by_id = {e["example_id"]: e for e in bundle.examples}
    assert len(bundle.ratings) == 2 * 6_916 and not bundle.notes and len(by_id) == len(bundle.examples)
    per = Counter(
        (by_id[r["example_id"]]["split"], by_id[r["example_id"]]["extra"]["predicate"]) for r in bundle.ratings
    )
    for experiment in pp.FILES:
        assert {p: per[(experiment, p)] for p in pp.PREDICATES} == dict.fromkeys(pp.PREDICATES, 266)
        assert per[(experiment, "control")] == 1_596
    priors = Counter(
        e["extra"]["prior"] for e in bundle.examples if e["split"] == "fact" and e["extra"]["predicate"] != "control"
    )
    assert set(priors) == {"high", "low"}
    assert all(e["gold_label"] is None for e in bundle.examples)  # graded: no categorical gold
    assert not any("&quotechars" in e["hypothesis"] + (e["context"] or "") for e in bundle.examples)
    raw = pd.concat([pd.read_csv(shared("projective_probability") / name) for name in pp.FILES.values()])
    coded = raw.loc[raw["content"].str.contains("&quotechars"), "content"].unique()
    contents = {e["hypothesis"] for e in bundle.examples}
    assert {c.replace("&quotechars", "'s").strip() for c in coded} <= contents  # issue 64, item 3: the data's 's
    assert {"Hendrick's car was expensive", "Mary's aunt is sick"} <= contents
    assert not any(re.search(r"[A-Za-z]' ", text) for text in contents)  # no "Hendrick' car" left
    raters = Counter((r["example_id"], r["rater_id"]) for r in bundle.ratings)
    assert max(raters.values()) == 1  # one rating per person and item


def test_premises_are_the_documented_reconstruction(bundle):
    know = next(e for e in bundle.examples if e["extra"]["predicate"] == "know" and e["split"] == "no-fact")
    assert know["input"] == f"Does Jane know that {know['hypothesis']}?" and know["context"] is None
    annoyed = next(e for e in bundle.examples if e["extra"]["predicate"] == "be annoyed" and e["split"] == "fact")
    assert annoyed["input"].startswith("Is Jane annoyed that ") and annoyed["context"]
    assert (
        pp.question("inform", "x") == "Does Jane inform Sam that x?"
        and pp.question("control", "x") == "Is it true that x?"
    )


@pytest.mark.parametrize(
    "predicate, mean", [("be annoyed", 0.885), ("know", 0.864), ("think", 0.195), ("pretend", 0.153)]
)
def test_a_predicate_s_mean_certainty_is_the_csv_s_person_level_mean(bundle, predicate, mean):
    raw = pd.read_csv(shared("projective_probability") / pp.FILES["no-fact"])
    want = raw.loc[raw["verb"] == predicate, "response"].mean()
    by_id = {e["example_id"]: e for e in bundle.examples}
    got = [
        r["value"]
        for r in bundle.ratings
        if by_id[r["example_id"]]["split"] == "no-fact" and by_id[r["example_id"]]["extra"]["predicate"] == predicate
    ]
    assert sum(got) / len(got) == pytest.approx(want) and round(want, 3) == mean  # SOURCE.md's figures


@pytest.mark.parametrize(
    "file, column, value, field, problem",
    [
        ("no-fact", "response", "1.7", "response", "from 0 to 1"),
        ("no-fact", "verb", "believe", "verb", "expected one of"),
        ("fact", "fact_type", "factM", "fact_type", "expected factH or factL"),
    ],
)
def test_a_broken_row_names_the_file_line_and_field(tmp_path, file, column, value, field, problem):
    root = tmp_path / "pp"
    shutil.copytree(shared("projective_probability"), root)
    path = root / pp.FILES[file]
    path.chmod(0o644)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    row = next(i for i in range(len(frame)) if frame.loc[i, "verb"] not in ("MC", "control"))
    frame.loc[row, column] = value
    frame.to_csv(path, index=False)
    with pytest.raises(DataError) as found:
        load(root)
    assert found.value.line == row + 2 and found.value.field == field and problem in found.value.problem
    assert path.name in str(found.value)


def test_evaluate_shows_people_and_a_local_model_per_predicate_with_rho_and_the_prior_effect(
    lab, tmp_path, monkeypatch
):
    """A real run of the tiny local NLI model (random weights: the mechanics, not a finding) over the items: its
    mean P(E) per predicate is the mean of its stored probabilities, and ρ is scipy's over the 20 predicates."""
    store = tmp_path / "lab.duckdb"
    shutil.copy(lab["store"], store)
    monkeypatch.setenv("PLAB_DATA_DIR", str(lab["data"]))
    run_id = batch.predict(store, runs.Request("tiny-nli", "projective_probability", "nli"), progress=False)
    con = connect(store)
    try:
        report = evaluate.evaluate(con, "projective_probability")
        probs = con.execute(
            "SELECT p.probs, e.split, e.extra->>'$.predicate' AS predicate FROM predictions p "
            "JOIN examples e ON e.dataset_id = 'projective_probability' AND e.example_id = p.example_id "
            "WHERE p.run_id = $r",
            {"r": run_id},
        ).df()
        labels = con.execute("SELECT config->'$.labels' FROM runs WHERE run_id = $r", {"r": run_id}).fetchone()[0]
    finally:
        con.close()
    table = report[evaluate.CERTAINTY.format(by="predicate")]
    people = table[table["who"] == "people"].set_index("predicate")
    mine = table[table["who"] == run_id].set_index("predicate")
    assert len(people) == len(mine) == 20 and (people["n"] == 266).all() and (mine["items"] == 20).all()
    e = json.loads(labels).index("E")
    plain = probs[(probs["split"] == "no-fact") & (probs["predicate"] != "control")]
    want = plain.groupby("predicate")["probs"].agg(lambda p: np.mean([row[e] for row in p]))
    assert np.allclose(mine.loc[want.index, "mean"], want)
    rho = report[evaluate.RHO.format(by="predicate")].set_index("run").loc[run_id]
    assert rho["groups"] == 20
    assert rho["rho"] == pytest.approx(stats.spearmanr(mine.loc[people.index, "mean"], people["mean"]).statistic)
    assert rho["low"] <= rho["rho"] <= rho["high"]
    effects = report[evaluate.PRIOR.format(by="predicate")]
    assert set(effects["who"]) == {"people", run_id} and (effects["effect_low"] <= effects["effect"]).all()
    # issue 54, item 10: the means are named as means, and each prior's ratings are counted apart
    assert {"mean_high_prior", "mean_low_prior", "n_high_prior", "n_low_prior"} <= set(effects.columns)
    assert not {"high", "low", "n", "high_prior", "low_prior"} & set(effects.columns)
    people = effects[effects["who"] == "people"]
    assert (people["n_high_prior"] > 0).all() and (people["n_low_prior"] > 0).all()
    assert Lab(store).evaluate("projective_probability")[evaluate.CERTAINTY.format(by="predicate")].equals(table)


ESCAPES = re.compile(r"&quotechars|%2C|&(amp|lt|gt|quot|#\d+);")


def test_no_built_in_text_keeps_an_escape_and_each_description_says_what_its_loader_changed(real_store):
    """Issue 64, item 3: no loaded premise, question, context or hypothesis of a built-in dataset keeps an encoding
    of its files (the loaders decode each, as their descriptions say), and every built-in says what its loader
    changed in the published text, on the Overview's table."""
    con = connect(real_store, read_only=True)
    try:
        texts = con.execute(
            "SELECT dataset_id, input || ' ' || coalesce(context, '') || ' ' || coalesce(hypothesis, '') AS text "
            "FROM examples"
        ).df()
        loaded = con.execute(  # the datasets with examples (the retrieval corpus holds passages)
            "SELECT dataset_id, description->>'$.normalised' AS said FROM datasets "
            "WHERE dataset_id IN (SELECT dataset_id FROM examples)"
        ).df()
    finally:
        con.close()
    kept = texts[texts["text"].str.contains(ESCAPES)]
    assert kept.empty, kept.head()
    assert loaded["said"].fillna("").str.len().gt(10).all(), loaded
    said = loaded.set_index("dataset_id")["said"]
    assert "Hendrick's car" in said["projective_probability"] and "%2C" in said["propres"]
