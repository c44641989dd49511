"""The live pages (Retrieval, Playground, Rate) through AppTest on a writable copy of the real store.

The copy gets what a researcher's store has after `python -m backend index` and a few batch runs:
BM25/dense/hybrid retrieval runs on IfQA S-dev, an open-book QA run and a writing run. Models are
tiny random ones registered in a temporary data folder (so no download and no trained model is
needed); the retrieval indexes are the real ones (built once if missing, as run.sh does).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from backend.analysis.markdown import plain
from backend.execution import live
from backend.store.connection import connect
from tests.helpers.data import QA_RUN, WRITE_RUN


@pytest.fixture()
def page(lab, open_page, monkeypatch):
    monkeypatch.setenv("PLAB_DATA_DIR", str(lab["data"]))
    live.clear_cache()
    return lambda name, params=None: open_page(lab["store"], f"pages/{name}.py", params)


def rows(store: Path, sql: str, **params) -> list[tuple]:
    con = connect(store)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def texts(at) -> str:
    return "\n".join(m.value for m in at.markdown)


# --- Retrieval ---


def test_retrieval_shows_three_retrievers_with_the_gold_rank(page, lab):
    example, gold = rows(
        lab["store"],
        "SELECT example_id, min(doc_id) FROM qrels WHERE dataset_id = 'ifqa' AND example_id = 'S-dev-0' GROUP BY ALL",
    )[0]
    at = page("retrieval", {"example": example, "k": "10"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    headers = [m.value.split("\n")[0] for m in at.markdown if m.value.startswith("#### ")]
    assert headers == ["#### bm25", "#### dense", "#### hybrid"]
    hits = at.dataframe[0].value
    assert (
        list(hits["retriever"].unique()) == ["bm25", "dense", "hybrid"]
        and hits.groupby("retriever").size().eq(10).all()
    )
    assert set(hits.loc[hits["gold"], "doc_id"]) <= {
        r[0]
        for r in rows(lab["store"], "SELECT doc_id FROM qrels WHERE dataset_id = 'ifqa' AND example_id = $e", e=example)
    }
    for name, part in hits.groupby("retriever"):  # the header states the first gold rank the table marks
        header = next(m.value for m in at.markdown if m.value.startswith(f"#### {name}"))
        marked = sorted(part.loc[part["gold"], "rank"])
        if marked:
            assert f"gold at rank {marked[0]}" in header
        else:
            rank = header.split("gold at rank ")[-1]
            assert "gold not in top 100" in header or int(rank) > 10
    assert gold


def test_retrieval_recall_curves_and_error_attribution(page, lab):
    at = page("retrieval", {"qa_run": QA_RUN})
    assert not at.exception and not at.error
    recall = next(t.value for t in at.dataframe if "recall" in t.value.columns)
    assert set(recall["retriever"]) == {"bm25", "dense", "hybrid"} and (recall["n"] > 600).all()
    for _, curve in recall.groupby("retriever"):
        assert curve.sort_values("k")["recall"].is_monotonic_increasing
    predictions = next(
        t.value for t in at.dataframe if "outcome" in t.value.columns and "example_id" in t.value.columns
    )
    assert len(predictions) == 6 and "failed" not in set(predictions["outcome"])
    assert predictions["open"].str.startswith("example?dataset=ifqa&example=").all()
    assert set(predictions["outcome"]) <= {"correct", "reading miss", "retrieval miss", "no gold passage", "failed"}
    shown = predictions["outcome"].iloc[0]
    at.pills(key="outcome").set_value(shown).run()
    narrowed = next(t.value for t in at.dataframe if "outcome" in t.value.columns and "example_id" in t.value.columns)
    assert set(narrowed["outcome"]) == {shown} and len(narrowed) == (predictions["outcome"] == shown).sum()


def test_retrieval_without_qa_runs_says_how_to_make_one(page, lab, tmp_path, open_page):
    bare = tmp_path / "bare.duckdb"
    shutil.copy(lab["store"], bare)
    con = connect(bare)
    con.execute("DELETE FROM runs WHERE task = 'qa'")
    con.close()
    at = open_page(bare, "pages/retrieval.py")
    assert not at.exception
    assert any("python -m backend predict --model smollm2-135m --dataset ifqa" in i.value for i in at.info)


# --- Playground ---


def ask(at, engines: list[str], retriever: str = "bm25"):
    at.multiselect(key="engines").set_value(engines)
    at.selectbox(key="retriever").set_value(retriever)
    return at.get("form_submit_button")[0].click().run()


def test_playground_example_edit_side_by_side_is_stored(page, lab):
    at = page("playground", {"source": "falseqa", "example": "test-0"})
    assert not at.exception
    next(b for b in at.button if b.label == "Load into the editor").click().run()
    original = at.text_area(key="question").value
    assert (
        original
        and original
        == rows(lab["store"], "SELECT input FROM examples WHERE dataset_id='falseqa' AND example_id='test-0'")[0][0]
    )
    at.text_area(key="question").set_value("Why do cats bark at night?")
    fp = "tiny-fp · false-premise detection (question only)"
    at = ask(at, [fp])
    assert not at.exception and not at.error, [e.value for e in at.error]
    headers = [m.value for m in at.markdown if m.value.startswith("#### ")]
    assert headers == ["#### Original", "#### Edited"]
    stored = rows(
        lab["store"], "SELECT text->>'$.input.question', label FROM predictions WHERE run_id = 'live/tiny-fp/detect'"
    )
    assert {q for q, _ in stored} >= {original, "Why do cats bark at night?"} and {label for _, label in stored} <= {
        "N",
        "FP",
    }
    assert any("random tiny model" in c.value for c in at.caption)  # the quality note
    assert any("ms on cpu" in c.value and plain("live/tiny-fp/detect") in c.value for c in at.caption)
    history = at.dataframe[-1].value
    assert "Why do cats bark at night?" in set(history["input"])


def test_playground_without_indexes_says_so_instead_of_failing(page, lab, tmp_path, monkeypatch):
    bare = tmp_path / "data"  # the same models, no retrieval indexes
    bare.mkdir()
    for entry in lab["data"].iterdir():
        if entry.name != "indexes":
            (bare / entry.name).symlink_to(entry)
    at = page("playground", {"question": "Why did the Eiffel Tower move to Rome?"})
    monkeypatch.setenv("PLAB_DATA_DIR", str(bare))
    at = ask(
        at,
        [
            "tiny-nli · false-premise detection by NLI over the retrieved passages",
            "tiny-fp · false-premise detection (question only)",
        ],
        "hybrid",
    )
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "no retrieval index here" in errors[0] and "python -m backend index" in errors[0]
    assert not (bare / "indexes").exists()  # looking for indexes creates no folders
    assert rows(
        lab["store"],
        "SELECT count(*) FROM predictions WHERE run_id = 'live/tiny-fp/detect' "
        "AND text->>'$.input.question' = 'Why did the Eiffel Tower move to Rome?'",
    ) == [(1,)]


def test_playground_question_mode_without_a_corpus_says_what_to_load(lab, open_page, monkeypatch, tmp_path):
    bare = tmp_path / "no-corpus.duckdb"  # the live store without the wiki passages (issue 45 item 21)
    shutil.copy(lab["store"], bare)
    con = connect(bare)
    con.execute("DELETE FROM passages WHERE corpus_id = 'wiki'")
    con.close()
    monkeypatch.setenv("PLAB_DATA_DIR", str(lab["data"]))
    live.clear_cache()
    at = open_page(bare, "pages/playground.py", {"question": "Why did the Eiffel Tower move to Rome?"})
    at = ask(at, ["tiny-fp · false-premise detection (question only)"], "hybrid")
    assert not at.exception
    said = texts(at)  # the status says why there are no passages, and the model answers without them
    assert "no passages for corpus 'wiki' in the store" in said and "ingest \\-\\-only corpus" not in said
    assert "python -m backend ingest --only corpus" in said and "answering without passages" in said
    assert "**tiny\\-fp** · false\\-premise detection" in said and not at.error


def test_a_playground_link_s_model_that_is_not_available_is_named_and_kept_not_replaced(page):
    missing = "minilm-nli · false-premise detection by NLI over the retrieved passages"  # no weights here
    at = page("playground", {"question": "Why did the Eiffel Tower move to Rome?", "engines": missing})
    assert not at.exception and at.multiselect(key="engines").value == [missing]  # not widened to every model
    warned = [w.value for w in at.warning if "Not asked now, though chosen" in w.value]
    assert len(warned) == 1 and "minilm\\-nli" in warned[0]
    at = at.get("form_submit_button")[0].click().run()
    assert not at.exception and "tiny\\-fp" not in "\n".join(m.value for m in at.markdown)  # no other model asked


def test_playground_input_and_models_come_from_the_url(page):
    fp = "tiny-fp · false-premise detection (question only)"
    at = page("playground", {"question": "Why is the moon made of cheese?", "engines": fp, "retriever": "none"})
    assert not at.exception
    assert at.text_area(key="question").value == "Why is the moon made of cheese?"
    assert at.multiselect(key="engines").value == [fp] and at.selectbox(key="retriever").value == "none"


def test_playground_nli_shows_probabilities_and_missing_models(page):
    at = page("playground", {"mode": "NLI pair"})
    at.text_area(key="premise").set_value("He stopped smoking last year.")
    at.text_input(key="hypothesis").set_value("He used to smoke.")
    at = ask(at, ["tiny-nli · entailment: E / N / C"], "none")
    assert not at.exception and not at.error
    probs = next(t.value for t in at.dataframe if "probability" in t.value.columns)
    assert list(probs["label"]) == ["E", "N", "C"] and abs(probs["probability"].sum() - 1) < 1e-6
    missing = next(e for e in at.expander if e.label.startswith("Models not available here"))
    assert "deberta-v3-nli" in missing.markdown[0].value and "offline" in missing.markdown[0].value


def test_playground_rejects_empty_and_overlong_input_clearly(page):
    at = page("playground")
    at = ask(at, ["tiny-fp · false-premise detection (question only)"], "none")
    assert at.error and at.error[0].value.startswith("question: empty")
    at.text_area(key="question").set_value("why " * 300)  # 1,200 characters: the field keeps the first 1,000
    at = ask(at, ["tiny-fp · false-premise detection (question only)"], "none")
    field = at.text_area(key="question")
    assert field.proto.max_chars == live.MAX_CHARS["question"] == len(field.value) == 1000
    assert any("at most 1,000 characters" in c.value for c in at.caption)
    assert not at.exception and not at.error  # what was kept is answered


# --- Rate ---


def test_rate_saves_upserts_moves_on_and_measures_agreement(page, lab):
    at = page("rate", {"run": WRITE_RUN, "rater": "ann"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    first = at.number_input(key="item").value
    assert first == 1 and any(m.value.startswith("**Rubric**") for m in at.markdown)
    controls = [c for c in at.get("button_group") if "|fluency" in str(c.key) or "|consistency" in str(c.key)]
    assert len(controls) == 2
    for aspect, value in (("fluency", 3), ("presupposition", 2), ("correction", 1), ("consistency", 0)):
        next(c for c in at.get("button_group") if str(c.key).endswith(f"|{aspect}")).set_value(value)
    at = at.get("form_submit_button")[0].click().run()
    assert not at.exception and not at.error
    assert at.number_input(key="item").value == 2  # moved on
    saved = rows(
        lab["store"],
        "SELECT criterion, value FROM ratings WHERE run_id = $r AND rater_id = 'ann' ORDER BY 1",
        r=WRITE_RUN,
    )
    assert saved == [("consistency", 0.0), ("correction", 1.0), ("fluency", 3.0), ("presupposition", 2.0)]


def test_rate_saves_while_a_terminal_command_holds_the_store_for_a_moment(page, lab):
    """A command's unit of work (here 3 s) only delays a save; nothing is lost and nothing says read-only."""
    import subprocess
    import sys

    at = page("rate", {"run": WRITE_RUN, "rater": "cmd"})
    code = (
        "import sys, time; from backend.store import access\n"
        "with access.session(sys.argv[1]):\n    print('held', flush=True); time.sleep(3)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(lab["store"])], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        for aspect in ("fluency", "presupposition", "correction", "consistency"):
            next(c for c in at.get("button_group") if str(c.key).endswith(f"|{aspect}")).set_value(1)
        at = at.get("form_submit_button")[0].click().run()
    finally:
        holder.wait(timeout=60)
    assert not at.exception and not at.error
    saved = rows(lab["store"], "SELECT count(*) FROM ratings WHERE run_id = $r AND rater_id = 'cmd'", r=WRITE_RUN)
    assert saved == [(4,)]


def test_explore_offers_correctness_only_for_runs_with_labels(page):
    at = page("explore", {"dataset": "ifqa", "run_a": QA_RUN, "correct": "incorrect"})
    assert not at.exception and not at.error
    control = at.get("button_group")
    correct = next(c for c in control if c.key == "correct")
    assert correct.proto.disabled  # a QA run answers; it has no labels to be right or wrong about
    assert at.markdown and any(m.value.startswith("**6 examples match**") for m in at.markdown)  # not 0


def test_the_rating_task_picker_shows_its_choices_as_plain_text(page):
    at = page("rate", {"run": WRITE_RUN})
    assert at.selectbox(key="task").options[0] == "(none: browse every output)"  # no Markdown escapes in a selectbox


def test_rate_only_unrated_outputs(page, lab):
    con = connect(lab["store"])
    first = con.execute("SELECT min(example_id) FROM predictions WHERE run_id = $r", {"r": WRITE_RUN}).fetchall()[0][0]
    from backend.analysis import ratings as rate

    rate.save(con, WRITE_RUN, first, "todo-rater", {"fluency": 1})
    con.close()
    at = page("rate", {"run": WRITE_RUN, "rater": "todo-rater", "todo": "true"})
    assert not at.exception and at.toggle(key="todo").value
    assert at.number_input(key="item").label == "Item (of 4)"
    assert not any(m.value.startswith(f"**{first}**") for m in at.markdown)  # the rated one is skipped
    assert any(f"1 of 5 rated by {plain('todo-rater')}" in p.proto.text for p in at.get("progress"))


def test_rate_rejects_a_bad_rater_id_and_keeps_what_was_saved(page, lab):
    before = rows(lab["store"], "SELECT * FROM ratings WHERE source = 'user' ORDER BY ALL")
    at = page("rate", {"run": WRITE_RUN, "rater": "bad id!"})
    next(c for c in at.get("button_group") if str(c.key).endswith("|fluency")).set_value(2)
    at = at.get("form_submit_button")[0].click().run()
    assert not at.exception
    assert any("rater\\_id" in e.value and "Not saved" in e.value for e in at.error)  # shown as text: _ escaped
    assert at.number_input(key="item").value == 1  # did not move on
    assert rows(lab["store"], "SELECT * FROM ratings WHERE source = 'user' ORDER BY ALL") == before


def test_rate_agreement_between_two_raters_and_exports(page, lab):
    from backend.analysis import ratings as rate

    con = connect(lab["store"])
    con.execute("DELETE FROM ratings WHERE source = 'user'")  # only the two raters below
    examples = [
        r[0]
        for r in con.execute(
            "SELECT example_id FROM predictions WHERE run_id = $r ORDER BY 1", {"r": WRITE_RUN}
        ).fetchall()
    ]
    for i, example in enumerate(examples):
        for rater in ("r1", "r2"):
            rate.save(con, WRITE_RUN, example, rater, {"fluency": i % 4, "consistency": (i + (rater == "r2")) % 4})
    con.close()
    at = page("rate", {"run": WRITE_RUN})
    assert not at.exception
    agreement = next(t.value for t in at.dataframe if "alpha" in t.value.columns).set_index("criterion")
    assert agreement.loc["fluency", "alpha"] == pytest.approx(1.0) and agreement.loc["fluency", "items"] == len(
        examples
    )
    assert agreement.loc["consistency", "alpha"] < 1.0
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels.count("CSV") >= 2 and labels.count("Parquet") >= 2
