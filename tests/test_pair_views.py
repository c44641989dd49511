"""Minimal pairs: the backend views (real NOPE store, Syn-(QA)² fixtures) and the Minimal pairs page."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from backend.analysis import pairs as pv
from backend.store.connection import connect

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "synqa2"
MAIN = (("split", "main"),)
PER_PAGE = 25  # pairs a page on the Minimal pairs page


@pytest.fixture(scope="module")
def con(real_store):
    connection = connect(real_store)
    yield connection
    connection.close()


def synqa2_store(tmp: Path, replace: tuple[str, str] | None = None) -> Path:
    """A store ingested from the Syn-(QA)² fixtures (optionally with one string replaced in the CSVs)."""
    from backend.imports.ingest import ingest

    source = tmp / "synqa2"
    shutil.copytree(FIXTURES, source)
    if replace:
        for csv in source.rglob("*.csv"):
            csv.write_text(csv.read_text().replace(*replace))
    results = ingest(["synqa2"], {"synqa2": source}, store=tmp / "syn.duckdb")
    assert [r.status for r in results] == ["loaded"], [r.message for r in results]
    return tmp / "syn.duckdb"


@pytest.fixture(scope="module")
def syn(tmp_path_factory):
    connection = connect(synqa2_store(tmp_path_factory.mktemp("syn")), read_only=True)
    yield connection
    connection.close()


def test_nope_pair_sets_count_main_and_adversarial_pairs(con):
    sets = pv.pair_sets(con).set_index("pair_set")
    assert sets.loc["nope/negation/main", "count"] == 1147
    assert sets.loc["nope/negation/adv", "count"] == 154 and sets.loc["nope/adversarial/main", "count"] == 333
    assert sets.index[0] == "nope/negation/main"  # the page's default
    assert tuple(sets.loc["nope/negation/main", ["role_a", "role_b"]]) == ("non-negated", "negated")


def test_always_e_never_flips_while_gold_flips_in_a_fifth_of_pairs(con):
    s = pv.pair_summary(con, "nope", "negation", "nope/baseline/always-E", MAIN)
    assert s["n"] == 1147 and s["not predicted"] == 0
    assert s["flip rate"].value == 0 and round(100 * s["gold flip rate"], 1) == 22.9
    assert sum(s["outcomes"].values()) == 1147
    assert s["pair accuracy"].value == pytest.approx(s["outcomes"]["both right"] / 1147)
    assert s["pair accuracy"].low <= s["pair accuracy"].value <= s["pair accuracy"].high
    assert s["table"].iloc[:, 1:].to_numpy().sum() == 1147 and list(s["table"].columns)[1:] == [
        "negated right",
        "negated wrong",
    ]


def test_pair_rows_carry_both_members_and_filter_by_trigger_and_outcome(con):
    run = "nope/RoBERTa-large/mnli-snli-anli-fever/1"
    rows = pv.pair_rows(con, "nope", "negation", run, MAIN)
    first = rows.set_index("pair_id").loc["nope:negation:1"]
    assert (first["example_a"], first["example_b"]) == ("1", "1-neg") and first["hypothesis_a"] == first["hypothesis_b"]
    assert first["input_a"] != first["input_b"] and first["pred_a"] in "ENC"
    clefts = pv.pair_rows(con, "nope", "negation", run, MAIN + (("trigger_type", "clefts"),))
    assert len(clefts) == 103 and set(clefts["trigger_type"]) == {"clefts"}
    summary = pv.pair_summary(
        con, "nope", "negation", run, MAIN + (("trigger_type", "clefts"), ("outcome", "both right"))
    )
    only = pv.pair_rows(con, "nope", "negation", run, MAIN + (("trigger_type", "clefts"), ("outcome", "a right only")))
    assert summary["n"] == 103 and len(only) == summary["outcomes"]["a right only"] > 0
    assert (only["right_a"] & ~only["right_b"]).all()


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda c: pv.pair_rows(c, "nope", "negation", "no/such/run"), "unknown run 'no/such/run'"),
        (
            lambda c: pv.pair_rows(c, "nope", "negation", None, (("colour", "red"),)),
            "allowed: split, trigger_type, hop, outcome",
        ),
    ],
)
def test_bad_arguments_say_what_is_allowed(con, call, message):
    with pytest.raises(ValueError, match=message):
        call(con)


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (
            "Chet finished law school",
            "Chet didn't finish law school",
            [("same", "Chet"), ("removed", "finished"), ("added", "didn't finish"), ("same", "law school")],
        ),
        (
            "Who wrote Pride and Prejudice in 1813?",
            "Who wrote Sense and Sensibility in 1813?",
            [
                ("same", "Who wrote"),
                ("removed", "Pride"),
                ("added", "Sense"),
                ("same", "and"),
                ("removed", "Prejudice"),
                ("added", "Sensibility"),
                ("same", "in 1813?"),
            ],
        ),
        ("He left early.", "He left early.", [("same", "He left early.")]),
        ("", "New words", [("added", "New words")]),
    ],
)
def test_word_diff_marks_exactly_the_changed_words(a, b, expected):
    assert pv.word_diff(a, b) == expected


def test_diff_html_escapes_before_marking():
    left, right = pv.diff_html("Is <b>bold</b> safe?", "Is <script>alert(1)</script> safe?")
    assert "<script>" not in right and "&lt;script&gt;alert(1)&lt;/script&gt;" in right
    assert right.startswith("Is <mark>") and left == "Is <del>&lt;b&gt;bold&lt;/b&gt;</del> safe?"


def test_synqa2_pairs_show_valid_and_false_assumption_members(syn):
    sets = pv.pair_sets(syn)
    assert list(sets["pair_set"]) == ["synqa2/minimal/test"] and sets["count"].iloc[0] == 5
    rows = pv.pair_rows(syn, "synqa2", "minimal", "synqa2/baseline/always-FP")
    assert set(rows["role_a"]) == {"valid"} and set(rows["role_b"]) == {"false_assumption"}
    assert set(rows["gold_label_a"]) == {"N"} and set(rows["gold_label_b"]) == {"FP"}
    assert set(rows["outcome"]) == {"b right only"} and rows["hypothesis_a"].isna().all()
    assert sorted(pv.pair_rows(syn, "synqa2", "minimal", None, (("hop", "multi"),))["hop"]) == ["multi", "multi"]
    s = pv.pair_summary(syn, "synqa2", "minimal", "synqa2/baseline/always-FP")
    assert (s["pair accuracy"].value, s["flip rate"].value, s["gold flip rate"]) == (0.0, 0.0, 1.0)


# ---- the Minimal pairs page (AppTest) ----


@pytest.fixture()
def page(open_page):
    return lambda store, params=None: open_page(store, "pages/pairs.py", params)


def links(at: AppTest) -> list[str]:
    return [p.proto.query_string for p in at.get("page_link")]


def test_pairs_page_default_view(page, real_store):
    at = page(real_store)
    assert not at.exception and not at.error
    assert at.selectbox(key="pairs").value == "nope/negation/main"
    assert at.selectbox(key="run").value == "nope/RoBERTa-large/mnli-snli-anli-fever/1"
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Pairs"] == "1,147"
    assert len(at.get("html")) == 2 * PER_PAGE and len(links(at)) == 2 * PER_PAGE
    assert links(at)[:2] == ["dataset=nope&example=1", "dataset=nope&example=1-neg"]
    assert "<del>" in at.get("html")[0].proto.body and "<mark>" in at.get("html")[1].proto.body
    assert {"CSV", "Parquet"} <= {b.proto.label for b in at.get("download_button")}


def test_pairs_page_run_and_outcome_cell_filter_the_list(page, real_store):
    at = page(real_store, {"run": "nope/baseline/always-E", "outcome": "a right only"})
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Prediction flip rate"] == "0.0%" and "gold 22.9%" in str(at.metric[2].proto.delta)
    assert at.subheader[0].value == "165 pairs · a right only"  # E→{N,C} pairs: always-E is right on a only
    again = page(real_store, dict(at.query_params))  # the URL reproduces the view
    assert again.subheader[0].value == at.subheader[0].value and links(again) == links(at)
    second = page(real_store, {**dict(at.query_params), "page": "2"})
    assert links(second)[0] not in links(at)


def test_synqa2_page_escapes_question_html(page, tmp_path):
    store = synqa2_store(tmp_path, ("Joe Biden", "<script>alert(1)</script>"))
    at = page(store)
    assert not at.exception and at.selectbox(key="pairs").value == "synqa2/minimal/test"
    bodies = " ".join(h.proto.body for h in at.get("html"))
    assert "<script>" not in bodies and "<mark>&lt;script&gt;alert(1)&lt;/script&gt;</mark>" in bodies
    assert "dataset=synqa2&example=single-0-false" in links(at)
