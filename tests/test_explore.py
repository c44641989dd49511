"""Explore and Example: slices agree with direct SQL counts, metrics with direct fractions, example
details hold what the store knows; the pages render, follow the URL and explain bad ids."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from backend.analysis import slicing
from backend.store.connection import connect
from backend.store.examples import Slice
from backend.views import example, explore
from ui import widgets

ROOT = Path(__file__).resolve().parent.parent
CLEFTS_NEGATED = (("trigger_type", ("clefts",)), ("polarity", ("negated",)))
ALWAYS_E = "nope/baseline/always-E"


def sql_count(con, where: str, params: dict | None = None) -> int:
    return con.execute(f"SELECT count(*) FROM examples WHERE dataset_id = 'nope' AND {where}", params or {}).fetchall()[
        0
    ][0]


def test_facet_filters_match_a_direct_count(real_con):
    expected = sql_count(real_con, "trigger_type = 'clefts' AND polarity = 'negated'")
    assert expected > 0
    frame = explore.slice_frame(real_con, Slice("nope", CLEFTS_NEGATED, None), limit=None)
    assert len(frame) == expected == explore.slice_count(real_con, Slice("nope", CLEFTS_NEGATED))
    assert set(frame["trigger_type"]) == {"clefts"} and set(frame["polarity"]) == {"negated"}
    assert explore.slice_summary(real_con, Slice("nope", CLEFTS_NEGATED, ALWAYS_E)).n == expected


def test_boolean_facets_accept_url_strings(real_con):
    expected = sql_count(real_con, "adversarial")
    for value in (True, "true", "True"):
        assert explore.slice_count(real_con, Slice("nope", (("adversarial", (value,)),))) == expected


def test_search_is_a_case_insensitive_substring_that_narrows(real_con):
    everything = explore.slice_count(real_con, Slice("nope"))
    frame = explore.slice_frame(real_con, Slice("nope", search="STREET"), limit=None)
    expected = sql_count(real_con, "(input ILIKE '%street%' OR hypothesis ILIKE '%street%')")
    assert 0 < len(frame) == expected < everything
    text = (frame["input"] + " " + frame["hypothesis"].fillna("")).str.lower()
    assert text.str.contains("street").all()
    assert explore.slice_count(real_con, Slice("nope", search="100%_no_such")) == 0  # % and _ are literal


def test_correctness_of_always_e_is_the_gold_label(real_con):
    non_e = {
        r[0]
        for r in real_con.execute(
            "SELECT example_id FROM examples WHERE dataset_id = 'nope' AND gold_label <> 'E'"
        ).fetchall()
    }
    wrong = explore.slice_frame(real_con, Slice("nope", (), ALWAYS_E, correctness="incorrect"), limit=None)
    right = explore.slice_frame(real_con, Slice("nope", (), ALWAYS_E, correctness="correct"), limit=None)
    assert set(wrong["example_id"]) == non_e
    assert set(right["gold_label"]) == {"E"} and len(right) + len(wrong) == sql_count(real_con, "TRUE")
    assert (right["p_a"] == 1.0).all() and set(wrong["label_a"]) == {"E"}


def test_summary_accuracy_is_the_direct_fraction_with_an_interval(real_con):
    run = "nope/RoBERTa-large/mnli/1"
    gold, pred = zip(
        *real_con.execute(
            """
        SELECT e.gold_label, p.label FROM examples e JOIN predictions p ON p.example_id = e.example_id
        WHERE e.dataset_id = 'nope' AND p.run_id = $r AND e.trigger_type = 'clefts' AND e.polarity = 'negated'
    """,
            {"r": run},
        ).fetchall()
    )
    summary = explore.slice_summary(real_con, Slice("nope", CLEFTS_NEGATED, run))
    acc = summary.accuracy
    assert acc.value == pytest.approx(sum(g == p for g, p in zip(gold, pred)) / len(gold))
    assert acc.low <= acc.value <= acc.high and acc.n == summary.n == len(gold)
    assert summary.macro_f1.low <= summary.macro_f1.value <= summary.macro_f1.high
    confusion = summary.confusion
    assert list(confusion.index) == ["E", "N", "C"] and int(confusion.to_numpy().sum()) == len(gold)
    assert confusion.loc["E", "E"] == sum(g == p == "E" for g, p in zip(gold, pred))


def test_summary_response_bias_is_the_label_shares(real_con):
    gold = dict(
        real_con.execute(
            "SELECT gold_label, count(*) FROM examples WHERE dataset_id = 'nope' "
            "AND gold_label IS NOT NULL GROUP BY ALL"
        ).fetchall()
    )
    bias = explore.slice_summary(real_con, Slice("nope", (), ALWAYS_E)).bias.set_index("label")
    assert bias["predicted_share"].to_dict() == {"E": 1.0, "N": 0.0, "C": 0.0}
    assert bias.loc["E", "gold_share"] == pytest.approx(gold["E"] / sum(gold.values()))
    assert bias["gold_share"].sum() == pytest.approx(1.0)


def test_summary_compares_run_b_with_run_a_on_the_same_items(real_con):
    a, b = "nope/RoBERTa-large/mnli/1", "nope/BOW/mnli/0"
    rows = real_con.execute(
        """
        SELECT e.gold_label, pa.label, pb.label FROM examples e
        JOIN predictions pa ON pa.example_id = e.example_id AND pa.run_id = $a
        JOIN predictions pb ON pb.example_id = e.example_id AND pb.run_id = $b
        WHERE e.dataset_id = 'nope' AND e.trigger_type = 'clefts' AND e.polarity = 'negated'""",
        {"a": a, "b": b},
    ).fetchall()
    right_a = [g == x for g, x, _ in rows]
    right_b = [g == y for g, _, y in rows]
    compare = explore.slice_summary(real_con, Slice("nope", CLEFTS_NEGATED, a, b)).compare
    assert compare.n == len(rows) > 0
    assert compare.accuracy_a.value == pytest.approx(sum(right_a) / len(rows))
    assert compare.accuracy_b.value == pytest.approx(sum(right_b) / len(rows))
    diff = compare.difference
    assert diff.difference == pytest.approx((sum(right_b) - sum(right_a)) / len(rows))
    assert diff.low <= diff.difference <= diff.high and 0 < diff.p_value <= 1 and 0 < compare.mcnemar_p <= 1
    shares = compare.shares.set_index("label")
    assert list(shares.columns) == ["gold", "run A", "run B"] and shares.sum().tolist() == pytest.approx([1.0] * 3)
    assert shares.loc["E", "run B"] == pytest.approx(sum(y == "E" for _, _, y in rows) / len(rows))
    assert shares.loc["E", "gold"] == pytest.approx(sum(g == "E" for g, _, _ in rows) / len(rows))
    assert explore.slice_summary(real_con, Slice("nope", CLEFTS_NEGATED, a)).compare is None  # no run B


def test_run_b_and_predicted_label_filters(real_con):
    a, b = "nope/RoBERTa-large/mnli/1", "nope/BOW/mnli/0"
    frame = explore.slice_frame(
        real_con, Slice("nope", (("label_a", ("N",)),), a, b), sort="disagree_first", limit=None
    )
    assert set(frame["label_a"]) == {"N"} and frame["label_b"].notna().all()
    disagree = frame["label_a"] != frame["label_b"]
    assert disagree.any() and not disagree.iloc[: disagree.sum()].eq(False).any()  # disagreements first


@pytest.mark.parametrize(
    "kwargs, allowed",
    [
        ({"sort": "input; DROP TABLE examples"}, "example_id"),
        ({"filters": (("nonsense", ("x",)),)}, "trigger_type"),
        ({"correctness": "maybe"}, "incorrect"),
    ],
)
def test_bad_arguments_name_the_allowed_values(real_con, kwargs, allowed):
    with pytest.raises(ValueError, match=allowed):
        sort = kwargs.pop("sort", "example_id")
        explore.slice_frame(real_con, Slice("nope", run_a=ALWAYS_E, **kwargs), sort=sort)


def test_facet_values_and_runs(real_con):
    values = explore.facets(real_con, "nope").values
    assert values["gold_label"] == ["E", "N", "C"] and "clefts" in values["trigger_type"]
    assert "answer_type" not in values and values["adversarial"] == [False, True]
    runs = explore.runs_for(real_con, "nope")
    assert runs["task"].eq("nli").all() and ALWAYS_E in set(runs["run_id"])
    assert runs["source"].iloc[0] != "baseline" and runs["labels"].iloc[0] == ["E", "N", "C"]


def test_nope_example_detail(real_con):
    detail = example.example_detail(real_con, "nope", "1")
    assert detail["example"]["hypothesis"] and detail["example"]["extra"]["base_id"] == "1"
    assert detail["crowd"]["labels"]["n"].sum() == 5 and len(detail["crowd"]["ratings"]) == 5
    negation = detail["pairs"][detail["pairs"]["kind"] == "negation"]
    assert list(negation["partner"]) == ["1-neg"] and negation["partner_gold"].notna().all()
    predictions = detail["predictions"]
    assert len(predictions) >= 32 and predictions["probabilities"].str.startswith("E ").all()


def test_ifqa_example_detail_has_gold_passages(real_con):
    example_id = real_con.execute("SELECT min(example_id) FROM qrels WHERE dataset_id = 'ifqa'").fetchall()[0][0]
    qrels = example.example_detail(real_con, "ifqa", example_id)["qrels"]
    assert len(qrels) >= 1 and qrels["text"].str.len().gt(20).all()


def test_retrieved_passages_are_marked_gold(real_store, tmp_path):
    copy = tmp_path / "copy.duckdb"
    shutil.copy(real_store, copy)
    con = connect(copy)
    example_id, gold = con.execute("SELECT example_id, doc_id FROM qrels WHERE dataset_id = 'ifqa' LIMIT 1").fetchall()[
        0
    ]
    other = con.execute("SELECT doc_id FROM passages WHERE doc_id <> $g LIMIT 1", {"g": gold}).fetchall()[0][0]
    con.execute("""INSERT INTO runs (run_id, dataset_id, task, model_id, config, source, status, created_at)
                   VALUES ('ifqa/test/bm25', 'ifqa', 'retrieve', 'bm25', '{"corpus_id": "wiki"}', 'batch', 'complete',
                   now())""")
    con.execute(
        "INSERT INTO retrievals VALUES ('ifqa/test/bm25', $e, 1, $o, 2.0), ('ifqa/test/bm25', $e, 2, $g, 1.0)",
        {"e": example_id, "o": other, "g": gold},
    )
    hits = example.example_detail(con, "ifqa", example_id)["retrievals"]
    con.close()
    assert list(hits["gold"]) == [False, True] and hits["text"].notna().all()


def test_unknown_example_says_what_ids_look_like(real_con):
    with pytest.raises(KeyError, match="'1-neg'"):
        example.example_detail(real_con, "nope", "no-such-id")


# --- pages (AppTest) ---


@pytest.fixture()
def app(monkeypatch, real_store):
    """An AppTest of app.py on the real store, with query parameters set before the first run."""
    import streamlit as st

    def start(page: str, **params) -> AppTest:
        monkeypatch.setenv("PLAB_STORE", str(real_store))
        st.cache_resource.clear()
        st.cache_data.clear()
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.query_params.update(params)
        return at.run().switch_page(page).run()

    yield start
    st.cache_resource.clear()


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label))


def test_explore_renders_and_follows_dataset_and_facets(app):
    at = app("pages/explore.py")
    assert not at.exception and not at.error
    # issue 45, item 10: NOPE's headline split (main) by default, as its paper reports main and adv apart
    assert at.selectbox(key="dataset").value == "nope" and at.multiselect(key="split").value == ["main"]
    assert metric(at, "Examples") == "2,386" and not any("Pooled over" in c.value for c in at.caption)
    # issue 54, item 10: run A opens on the dataset's best model run on main (80.6% is always-E, a baseline), not
    # on the alphabetically first (BOW, the weakest)
    assert at.selectbox(key="run_a").value == "nope/RoBERTa-large/mnli-snli-anli-fever/1"
    pooled = app("pages/explore.py", dataset="nope", split="")  # `split=`: every split, pooled, and said so
    assert pooled.multiselect(key="split").value == [] and metric(pooled, "Examples") == "2,732"
    assert any(c.value.startswith("Pooled over every split") for c in pooled.caption)
    at.selectbox(key="dataset").set_value("falseqa").run()
    assert not at.exception and at.selectbox(key="run_a").value.startswith("falseqa/")
    before = (metric(at, "Examples"), metric(at, "Accuracy"))
    at.multiselect(key="split").select("test").run()
    assert not at.exception and (metric(at, "Examples"), metric(at, "Accuracy")) != before


def test_explore_url_round_trip(app, real_con):
    at = app("pages/explore.py", dataset="nope", trigger_type="clefts", polarity="negated", run_a=ALWAYS_E)
    assert not at.exception
    assert at.selectbox(key="dataset").value == "nope" and at.selectbox(key="run_a").value == ALWAYS_E
    assert at.multiselect(key="trigger_type").value == ["clefts"] and at.multiselect(key="polarity").value == [
        "negated"
    ]
    expected = sql_count(real_con, "trigger_type = 'clefts' AND polarity = 'negated' AND split = 'main'")
    assert metric(at, "Examples") == f"{expected:,}"
    assert any(m.value.startswith(f"**{expected:,} examples match**") for m in at.markdown)
    assert len(at.dataframe[0].value) == expected


def test_explore_offers_downloads_of_the_slice(app):
    at = app("pages/explore.py", dataset="nope", cell="E→N")
    labels = [b.proto.label for b in at.get("download_button")]
    assert "CSV (full slice)" in labels and "Parquet (full slice)" in labels and "PNG" in labels
    assert at.pills(key="cell").value == "E→N"
    table = at.dataframe[0].value
    assert set(table["gold_label"]) == {"E"} and set(table["label_a"]) == {"N"}
    assert table["open"].str.startswith("example?dataset=nope&example=").all()
    # issue 45, item 12: the headline still counts the whole slice, and the page says what the table lists
    listed = f"Listed: the {len(table):,} items of confusion cell E→N (gold→predicted), of the {metric(at, 'Examples')}"
    assert any(c.value.startswith(listed) for c in at.caption), [c.value for c in at.caption]


def test_selecting_a_row_opens_the_example_page(app):
    at = app("pages/explore.py", dataset="falseqa")
    chosen = at.dataframe[0].value["example_id"].iloc[2]
    at.session_state["rows"] = {"selection": {"rows": [2], "columns": [], "cells": []}}  # a click on row 3
    at.run()
    assert not at.exception and not at.error
    assert at.text_input(key="example").value == chosen and at.selectbox(key="dataset").value == "falseqa"
    assert at.subheader[0].value == widgets.plain(f"falseqa · {chosen}")  # shown as text: test\-10 renders test-10


def test_explore_flags_a_response_bias_and_not_a_balanced_run(app):
    at = app("pages/explore.py", dataset="nope", run_a=ALWAYS_E)
    assert not at.exception
    warnings = [w.value for w in at.warning if "Response bias" in w.value]
    assert len(warnings) == 1 and "answers **E** for 100.0%" in warnings[0]
    at = app("pages/explore.py", dataset="nope", run_a="nope/RoBERTa-large/mnli/1")
    assert not at.exception and not [w for w in at.warning if "Response bias" in w.value]
    titles = [json.loads(chart.proto.spec)["title"]["text"] for chart in at.get("vega_lite_chart")]
    assert titles == ["Confusion matrix: nope", "Label shares: nope"]
    at = app(
        "pages/explore.py", dataset="falseqa", run_a="falseqa/baseline/always-FP", run_b="falseqa/baseline/always-N"
    )
    warnings = [w.value for w in at.warning if "Response bias" in w.value]
    assert not at.exception and len(warnings) == 2
    assert "run A answers **FP** for 100.0%" in warnings[0] and "run B answers **N** for 100.0%" in warnings[1]


def test_explore_shows_run_b_against_run_a(app, real_con):
    a, b = "nope/RoBERTa-large/mnli/1", "nope/BOW/mnli/0"
    at = app("pages/explore.py", dataset="nope", run_a=a, run_b=b)
    assert not at.exception and not at.error
    compare = explore.slice_summary(real_con, Slice("nope", (("split", ("main",)),), a, b)).compare  # the default split
    assert metric(at, "B − A") == f"{100 * compare.difference.difference:+.1f} pts"
    assert metric(at, "Accuracy B") == f"{100 * compare.accuracy_b.value:.1f}%"


def test_explore_bad_correctness_without_run_is_ignored(app):
    at = app("pages/explore.py", dataset="nope", run_a="(none)", correct="incorrect")
    assert not at.exception and not at.error and metric(at, "Examples") == "2,386"  # main, NOPE's headline split


def test_example_page_shows_partners_and_crowd(app):
    at = app("pages/example.py", dataset="nope", example="1")
    assert not at.exception and not at.error
    assert widgets.plain("1-neg") in [b.label for b in at.button]  # a label is Markdown: shown as text
    assert any("**negation** pair" in m.value and "1-neg" in m.value for m in at.markdown)
    assert len(at.dataframe[0].value) >= 32
    at.button(key="pair-nope:negation:1").click().run()
    assert not at.exception and at.text_input(key="example").value == "1-neg"


def test_example_page_explains_an_unknown_id(app):
    at = app("pages/example.py", dataset="nope", example="12-nope")
    assert not at.exception
    shown = at.error[0].value  # the message holds the URL's value, so it is shown as text (escaped Markdown)
    assert widgets.message("no example '12-nope' in nope") in shown and widgets.message("'1-neg'") in shown


def test_overlapping_sessions_restore_the_blas_thread_count():
    """Two sessions' slice summaries at once, the first finishing first: the process-wide BLAS limit
    must come back as it was (unguarded, the second restores the first's limit of 1)."""
    import threading

    from threadpoolctl import threadpool_info

    def blas_threads():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    entered, release_a, release_b = threading.Event(), threading.Event(), threading.Event()

    def session(started: threading.Event | None, release: threading.Event):
        with slicing._one_blas_thread():
            if started:
                started.set()
            release.wait(10)

    a = threading.Thread(target=session, args=(entered, release_a))
    b = threading.Thread(target=session, args=(None, release_b))
    a.start()
    entered.wait(10)
    b.start()  # asks for the limit while the first session holds it
    b.join(0.2)
    release_a.set()
    a.join(10)
    release_b.set()  # the second finishes last
    b.join(10)
    assert blas_threads() == before


def test_a_run_whose_answers_did_not_parse_says_so_where_it_is_picked_and_run(open_page, real_store, tmp_path):
    from backend.execution import jobs
    from backend.store.writer import replace_runs

    store = tmp_path / "lab.duckdb"
    shutil.copy(real_store, store)
    run = {"run_id": "nope/chatty/nli", "dataset_id": "nope", "task": "nli", "model_id": "chatty", "source": "batch"}
    run["config"] = {"labels": ["E", "N", "C"]}
    rows = [
        {"run_id": run["run_id"], "example_id": e, "label": None, "text": {"parse": "unparsed", "response": "Hmm."}}
        for e in ("1", "1-neg", "2", "2-neg", "3")
    ]
    con = connect(store)
    replace_runs(con, [run], rows)
    assert jobs.progress(con, run["run_id"], "nope")["parsed"] == 0  # the Studio's status line reads it
    con.close()
    at = open_page(store, "pages/explore.py", {"dataset": "nope", "run_a": run["run_id"]})
    assert not at.exception
    assert "Run A: 0 of 5 answers parsed" in [c.value for c in at.caption]
