"""The minimal-pair studio's templates: expansion, errors that name line and field, the cap, and the
generated set stored as a user dataset that the pair and projection views read."""

from __future__ import annotations

import shutil

import pytest

from backend.actions import jobs as job_actions
from backend.analysis import projection
from backend.datasets.description import OPERATORS
from backend.imports import datasets as user_datasets
from backend.studio import templates
from tests.helpers.people import LOCAL
from tests.helpers.studio import TEMPLATE, WordsEmbedder


def test_every_combination_of_fillers_is_an_item_with_one_sentence_per_condition():
    made = templates.expand(TEMPLATE, "stop.yaml")
    assert len(made.frame) == 3 * 2 * 3 and made.frame["item"].nunique() == 6
    first = made.frame.iloc[0]
    assert (first["input"], first["hypothesis"], first["operator"]) == (
        "Jo stopped doing it: smoke.",
        "Jo used to smoke.",
        "unembedded",
    )
    listed = TEMPLATE.replace("conditions:", "items:\n  - {name: Kim, habit: run}\nconditions:")
    assert len(templates.expand(listed).frame) == 3  # listed items replace the combinations


@pytest.mark.parametrize(
    "change, problem, line, field",
    [
        (
            ('{habit}."\n    hypothesis', '{hobby}."\n    hypothesis'),
            "slot {hobby} is not defined",
            9,
            "conditions.0.premise",
        ),
        (("habit: [smoke, swim]", "habit: []"), "slot 'habit' has no fillers", 5, "slots.habit"),
        (("operator: question", "operator: doubt"), "operator 'doubt' is not one of", 18, "conditions.2.operator"),
        (("name: asked", "name: negated"), "condition 'negated' is defined twice", 17, "conditions.2.name"),
        (("gold: E\n  - name: asked", "gold: X\n  - name: asked"), "gold 'X' is not one of", 16, "conditions.1.gold"),
        (
            ("conditions:", "items:\n  - {name: Kim, habit: run}\n  - {name: Kim, habit: run}\nconditions:"),
            "item 2 repeats an earlier item",
            8,
            "items.1",
        ),
        (("slots:", "slots: [oops"), "not valid YAML", None, None),
    ],
)
def test_template_errors_name_the_line_and_field(change, problem, line, field):
    text = TEMPLATE.replace(*change, 1)
    assert text != TEMPLATE
    with pytest.raises(
        templates.TemplateError, match=problem.replace("{", r"\{").replace("}", r"\}").replace("(", r"\(")
    ) as failed:
        templates.expand(text, "stop.yaml")
    assert failed.value.path == "stop.yaml"
    if line is not None:
        assert (failed.value.line, failed.value.field) == (line, field)


def test_too_many_sentences_are_refused_with_the_count_before_anything_is_built():
    big = TEMPLATE.replace("[Jo, Sam, the teacher]", "[" + ", ".join(f"N{i}" for i in range(40_000)) + "]")
    with pytest.raises(
        templates.TemplateError, match="80,000 items × 3 conditions = 240,000 sentences; at most 200,000"
    ):
        templates.expand(big)


def test_a_generated_set_is_a_user_dataset_with_pairs_and_projection_cells(real_store, tmp_path):
    from backend.imports import datasets as user_datasets
    from backend.store import queries
    from backend.store.connection import connect

    shutil.copy(real_store, tmp_path / "lab.duckdb")  # a copy: the shared store keeps its datasets
    con = connect(tmp_path / "lab.duckdb")
    try:
        user_datasets.save(con, templates.bundle(templates.expand(TEMPLATE, "stop.yaml"), "stop.yaml"))
        pairs = queries.pairs_frame(con, "stop-under-operators")
        assert len(pairs) == 6 * 2 and set(pairs["kind"]) == {"plain → negated", "plain → asked"}
        cells = projection.human_table(con)
        mine = cells[cells["dataset"] == "stop-under-operators"]
        assert set(mine["operator"]) == {"unembedded", "negation", "question"} and (mine["n"] == 6).all()
        notes = con.execute("SELECT notes FROM datasets WHERE dataset_id = 'stop-under-operators'").fetchone()[0]
        assert "generated from the template stop.yaml" in notes and "{name} stopped" in notes
    finally:
        con.close()


def test_the_overview_shows_a_generated_datasets_template_as_code_collapsed(real_store, tmp_path, open_page):
    from backend.imports import datasets as user_datasets
    from backend.store.connection import connect

    shutil.copy(real_store, tmp_path / "lab.duckdb")
    con = connect(tmp_path / "lab.duckdb")
    try:
        user_datasets.save(con, templates.bundle(templates.expand(TEMPLATE, "stop.yaml"), "stop.yaml"))
    finally:
        con.close()
    at = open_page(tmp_path / "lab.duckdb", "pages/overview.py")
    assert not at.exception
    said = [i.value for i in at.info if "stop\\-under\\-operators" in i.value]
    assert len(said) == 1 and "generated from the template stop" in said[0] and "stopped" not in said[0]  # one line
    template = [e for e in at.expander if "template it was generated from" in e.label]
    assert len(template) == 1 and not template[0].proto.expanded  # collapsed
    assert template[0].code[0].language == "yaml" and "{name} stopped" in template[0].code[0].value


def test_the_generate_command_stores_nothing_when_the_template_is_wrong(tmp_path, capsys):
    from backend.cli.main import main

    path = tmp_path / "bad.yaml"
    path.write_text(TEMPLATE.replace("operator: question", "operator: doubt"))
    store = tmp_path / "lab.duckdb"
    assert main(["--store", str(store), "generate", str(path)]) == 1
    assert "line 18" in capsys.readouterr().out and not store.exists()
    path.write_text(TEMPLATE)
    assert main(["--store", str(store), "generate", str(path), "--dry-run"]) == 0
    assert "18 examples, 12 pairs" in capsys.readouterr().out and not store.exists()


def test_the_shipped_example_template_expands():
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "data" / "templates" / "stop-under-operators.yaml"
    made = templates.expand(path.read_text(), str(path))
    assert len(made.frame) == 4 * 5 and set(made.frame["operator"]) == set(OPERATORS)
    assert "Did the teacher stop running last year?" in set(made.frame["input"])


# ---- the page (AppTest) ----


def test_the_studio_page_previews_refuses_a_broken_template_and_saves(open_page, real_store, tmp_path):
    from backend.store import queries
    from backend.store.connection import connect

    store = tmp_path / "lab.duckdb"
    shutil.copy(real_store, store)
    at = open_page(store, "pages/studio.py")
    assert not at.exception and not at.error
    assert [m.value for m in at.metric][:4] == ["stop-under-operators", "4", "20", "16"]
    at.text_area(key="template_text").input(TEMPLATE.replace("operator: question", "operator: doubt")).run()
    assert at.error and "line 18" in at.code[0].value and "conditions.2.operator" in at.code[0].value
    at.text_area(key="template_text").input(TEMPLATE).run()
    assert [m.value for m in at.metric][1:4] == ["6", "18", "12"]
    at.button(key="template_save").click().run()
    assert not at.exception and any("18 examples, 12 pairs" in s.value for s in at.success)
    con = connect(store)
    try:
        assert len(queries.pairs_frame(con, "stop-under-operators")) == 12
    finally:
        con.close()
    at.button(key="template_save").click().run()  # again, without replace: refused, nothing changed
    assert at.error and "is loaded; replace it" in at.code[-1].value


# ---- a projection family from one sentence ----


@pytest.mark.parametrize(
    "sentence, expected",
    [
        (
            "Jo stopped smoking.",
            {
                "negation": "Jo didn't stop smoking.",
                "question": "Did Jo stop smoking?",
                "modal": "Jo might have stopped smoking.",
                "conditional": "If Jo stopped smoking, it's okay.",
            },
        ),
        (
            "The teacher has stopped smoking.",
            {
                "negation": "The teacher has not stopped smoking.",
                "question": "Has the teacher stopped smoking?",
                "modal": "The teacher might have stopped smoking.",
            },
        ),
        (
            "Sam knows that the shop closed.",
            {
                "negation": "Sam doesn't know that the shop closed.",
                "question": "Does Sam know that the shop closed?",
                "modal": "Sam might know that the shop closed.",
            },
        ),
        (
            "It was Jo who broke the vase.",
            {
                "negation": "It was not Jo who broke the vase.",
                "question": "Was it Jo who broke the vase?",
                "modal": "It might have been Jo who broke the vase.",
            },
        ),
        (
            "My neighbour went to Paris again.",
            {
                "negation": "My neighbour didn't go to Paris again.",
                "modal": "My neighbour might have gone to Paris again.",
            },
        ),
        ("They know that Kim left.", {"question": "Do they know that Kim left?"}),
    ],
)
def test_variants_handle_auxiliaries_do_support_and_the_copula(sentence, expected):
    from backend.studio import variants

    made = variants.variants(sentence)
    assert made["unembedded"] == sentence
    for operator, text in expected.items():
        assert made[operator] == text


@pytest.mark.parametrize(
    "sentence, reason",
    [
        ("Jo did not leave.", "already negated"),
        ("Jo never smoked.", "already negated"),
        ("Did Jo leave?", "only a declarative sentence"),
        ("After the war, Jo left.", "no finite verb"),
        ("The man who lives next door stopped smoking.", "relative clause"),
        ("", "empty"),
        ("Happily ever after.", "no finite verb"),
    ],
)
def test_sentences_the_rules_cannot_transform_are_refused_with_the_reason(sentence, reason):
    from backend.studio import variants

    with pytest.raises(variants.CannotTransform, match=reason):
        variants.variants(sentence)


def test_a_modal_is_not_made_modal_again_but_the_other_variants_are_made():
    from backend.studio import variants

    made = variants.variants("Jo might leave.")
    assert isinstance(made["modal"], variants.CannotTransform) and made["negation"] == "Jo might not leave."


def test_the_studio_page_makes_a_family_from_one_sentence_or_says_why_not(open_page, real_store, tmp_path):
    from backend.store import queries
    from backend.store.connection import connect

    store = tmp_path / "lab.duckdb"
    shutil.copy(real_store, store)
    at = open_page(store, "pages/studio.py")
    at.text_input(key="family_sentence").input("The man who lives here stopped smoking.")
    at.text_input(key="family_presupposition").input("The man used to smoke.").run()
    assert any("relative clause" in w.value for w in at.warning) and not at.exception
    at.text_input(key="family_sentence").input("Jo stopped smoking.")
    at.text_input(key="family_name").input("jo-family").run()
    assert not at.exception and not at.warning
    assert any("its trigger" in i.value for i in at.info)  # no trigger: nothing to save yet (was saved as "unknown")
    assert not [b for b in at.button if b.key == "family_save"]
    at.text_input(key="family_trigger").input("change_of_state").run()
    at.button(key="family_save").click().run()
    assert any("5 examples, 4 pairs" in s.value for s in at.success), [e.value for e in at.error]
    con = connect(store)
    try:
        examples = queries.examples_frame(con, "jo-family")
        assert {"Jo stopped smoking.", "Did Jo stop smoking?", "If Jo stopped smoking, it's okay."} <= set(
            examples["input"]
        )
        assert set(examples["trigger_type"]) == {"change_of_state"}
    finally:
        con.close()


# ---- a batch run started from the dashboard ----


def finished(store, run_id: str, dataset: str, seconds: float = 180) -> dict:
    """The job's progress once it completes or stops and its process has exited (the store says complete before
    the process writes its last log line), or after `seconds`."""
    import time

    from backend.execution import jobs
    from backend.store.access import session

    deadline, state = time.monotonic() + seconds, {}
    while time.monotonic() < deadline:
        with session(store) as con:
            state = jobs.progress(con, run_id, dataset)
        if state["status"] in ("complete", "stopped") and not jobs.alive(run_id):
            break
        time.sleep(1)
    return state


def test_a_model_runs_on_a_generated_set_in_its_own_process_with_progress(real_store, tmp_path, tiny):  # noqa: F811
    from backend.execution import jobs
    from backend.store.access import session

    store = tmp_path / "lab.duckdb"
    shutil.copy(real_store, store)
    with session(store) as con:
        user_datasets.save(con, templates.bundle(templates.expand(TEMPLATE, "stop.yaml"), "stop.yaml"))
        task, models = jobs.choices(con)["stop-under-operators"]
        assert task == "nli" and "tiny-nli" in models and "tiny-fp" not in models
    run_id = job_actions.start_run(store, "tiny-nli", "stop-under-operators", actor=LOCAL)
    assert run_id == "stop-under-operators/tiny-nli/nli/all"
    state = finished(store, run_id, "stop-under-operators")
    assert state["status"] == "complete", state
    assert state["done"] == state["total"] == 18
    assert state["log"].startswith(
        f"run {run_id}: complete, 18 predictions of which 18 parsed answers, in "
    )  # issue 54
    # a generator is prompted: the job's run id names the template the Studio chose, and its progress is found
    assert "nli-few-shot" in jobs.template_choices("tiny-gen", "nli") and jobs.template_choices("tiny-nli", "nli") == []
    run_id = job_actions.start_run(store, "tiny-gen", "stop-under-operators", "nli", "nli-few-shot", actor=LOCAL)
    assert run_id == "stop-under-operators/tiny-gen/nli/nli-few-shot@1+k4/all"
    state = finished(store, run_id, "stop-under-operators")
    assert state["status"] == "complete" and state["done"] == state["total"] == 18, state


# ---- Syn-(QA)²-style pairs from facts ----


HIPPO = "corpus/hipporag_legacy_data"


def test_hotpotqa_bridge_questions_become_pairs_with_the_counts_of_each_step():
    from backend.studio import facts
    from tests.helpers.data import shared

    made = facts.hotpotqa(shared(HIPPO) / "hotpotqa_train.json", WordsEmbedder(), threshold=0.0)
    steps = dict(made.steps)
    assert steps["HotpotQA bridge questions"] == 78  # SOURCE.md: 78 bridge of 100
    assert 40 <= steps["… naming a supporting title (loosely)"] <= 60  # 40 verbatim, 56 without the parenthetical
    assert made.rows and all(r["question"] != r["counterpart"] and r["entity"] != r["replacement"] for r in made.rows)
    row = made.rows[0]
    assert facts._loose(row["replacement"]).lower() in row["counterpart"].lower() and row["passages"] == [
        row["entity"],
        row["replacement"],
    ]


def test_musique_single_hop_questions_swap_in_a_paragraph_title_that_lacks_the_answer():
    from backend.studio import facts
    from tests.helpers.data import shared

    made = facts.musique(shared(HIPPO) / "musique_train.json", WordsEmbedder(), threshold=0.0)
    assert made.steps[0][1] > 0 and made.rows
    records = {r["id"]: r for r in __import__("json").loads((shared(HIPPO) / "musique_train.json").read_text())}
    for row in made.rows[:20]:
        record = records[row["source_id"].split("/")[0]]
        replacement = next(p for p in record["paragraphs"] if p["title"] == row["replacement"])
        assert str(row["answer"]).lower() not in replacement["paragraph_text"].lower()


def test_triples_swap_the_subject_for_one_without_the_fact_and_bad_files_name_line_and_column(tmp_path):
    import pandas as pd

    from backend.datasets.base import DataError
    from backend.studio import facts

    path = tmp_path / "facts.csv"
    pd.DataFrame(
        {
            "subject": ["Paris", "Lyon", "Berlin", "Paris"],
            "relation": ["capital of", "city in", "capital of", "city in"],
            "object": ["France", "France", "Germany", "France"],
            "template": [
                "Why is {subject} the capital of France?",
                "When was {subject} founded in France?",
                "Why is {subject} the capital of Germany?",
                "When was {subject} founded in France?",
            ],
        }
    ).to_csv(path, index=False)
    made = facts.triples(path, WordsEmbedder(), threshold=0.0)
    first = made.rows[0]
    assert (
        first["question"] == "Why is Paris the capital of France?"
        and first["counterpart"] == "Why is Berlin the capital of France?"
    )
    bundle = facts.bundle(made, "my-facts", "facts.csv")
    assert len(bundle.pairs) == len(made.rows) and set(bundle.examples["gold_label"]) == {"N", "FP"}
    pd.DataFrame({"subject": ["Paris"], "relation": ["r"], "object": ["o"], "template": ["Why?"]}).to_csv(
        path, index=False
    )
    with pytest.raises(DataError, match="has no {subject}") as failed:
        facts.triples(path, WordsEmbedder())
    assert (failed.value.line, failed.value.field) == (2, "template")


def test_fact_pairs_end_to_end_stored_run_and_shown_on_the_pairs_page(real_store, tmp_path, tiny, open_page):  # noqa: F811
    """HotpotQA swaps → a detection dataset with pairs → a detector run in its own process → the Minimal
    pairs page shows the pair set with the run's 2×2 outcomes."""

    from backend.execution import jobs
    from backend.store.access import session
    from backend.studio import facts
    from tests.helpers.data import shared

    store = tmp_path / "lab.duckdb"
    shutil.copy(real_store, store)
    made = facts.hotpotqa(shared(HIPPO) / "hotpotqa_train.json", WordsEmbedder(), threshold=0.2)
    with session(store) as con:
        from backend.imports import datasets as user_datasets

        user_datasets.save(con, facts.bundle(made, "hotpot-swaps", "hotpotqa_train.json"))
        task, models = jobs.choices(con)["hotpot-swaps"]
    assert task == "detect" and "tiny-fp" in models and "tiny-nli" not in models  # NLI would need a retriever
    run_id = job_actions.start_run(store, "tiny-fp", "hotpot-swaps", task, actor=LOCAL)
    state = finished(store, run_id, "hotpot-swaps")
    assert state["status"] == "complete" and state["done"] == 2 * len(made.rows), state
    at = open_page(store, "pages/pairs.py", {"pairs": "hotpot-swaps/minimal/generated", "run": run_id})
    assert not at.exception and not at.error
    assert at.metric[0].value == f"{len(made.rows):,}"  # every generated pair, each with the run's two predictions
    assert any(
        "was generated from hotpotqa" in c.value and "78" in c.value for c in at.caption
    )  # its provenance, on the page
    with session(store) as con:
        origin = con.execute("SELECT config->'$.dataset_origin' FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]
        sha = con.execute("SELECT sha256 FROM datasets WHERE dataset_id = 'hotpot-swaps'").fetchone()[0]
    assert __import__("json").loads(origin)["sha256"] == sha  # the run records which version of the set it saw


def test_the_studio_page_generates_fact_pairs_on_request_and_saves_them(open_page, real_store, tmp_path, monkeypatch):
    from backend.models import embed
    from backend.store.access import session

    monkeypatch.setattr(embed, "Embedder", WordsEmbedder)  # the page's generation uses the bundled embedder
    store = tmp_path / "lab.duckdb"
    shutil.copy(real_store, store)
    at = open_page(store, "pages/studio.py")
    assert not at.exception and any("Press Generate" in i.value for i in at.info)  # nothing embedded until asked
    at.selectbox(key="facts_source").set_value("hotpotqa")
    at.slider(key="facts_threshold").set_value(0.2)
    at.button(key="facts_generate").click().run()
    assert not at.exception and not at.error
    steps = at.dataframe[-2].value if len(at.dataframe) > 1 else at.dataframe[0].value
    kept = dict(zip(steps["kept"], steps["n"]))
    assert kept["HotpotQA bridge questions"] == 78
    pairs = kept["… with a distractor at similarity ≥ 0.2"]
    at.text_input(key="facts_name").input("hotpot-page").run()
    at.button(key="facts_save").click().run()
    assert not at.exception and any(f"{2 * pairs} examples, {pairs} pairs" in s.value for s in at.success)
    with session(store) as con:
        assert con.execute("SELECT count(*) FROM pairs WHERE dataset_id = 'hotpot-page'").fetchone()[0] == pairs


def test_run_a_model_with_no_model_for_the_task_shows_the_ways_on_and_starts_training(
    store_copy, tmp_path, open_page, monkeypatch
):
    """No dead end: with no loadable NLI model, the tab gives the ways on (train here with its cost, register,
    import) and its button starts the training as a background job (stopped here at once: it takes 25 min)."""
    import os
    import signal

    from backend.analysis.markdown import plain
    from backend.execution import jobs
    from backend.imports import datasets as user_datasets
    from backend.store.access import session

    monkeypatch.setenv("PLAB_DATA_DIR", str(tmp_path / "data"))  # no trained or registered model here
    with session(store_copy) as con:
        user_datasets.save(con, templates.bundle(templates.expand(TEMPLATE, "stop.yaml"), "stop.yaml"))
        task, models = jobs.choices(con)["stop-under-operators"]
    if models:
        pytest.skip(f"this checkout has NLI models that load ({models}): the dead end cannot happen here")
    at = open_page(store_copy, "pages/studio.py")
    assert not at.exception
    assert any("No model that can be loaded here does nli yet" in w.value for w in at.warning)
    said = " ".join(m.value for m in at.markdown)
    assert "about 25 minutes on 2 CPU cores" in said and "registry" in said and "Import a run" in said
    assert any("imports" in link.proto.page for link in at.get("page_link"))
    train = next(b for b in at.button if b.key == "train_start")
    assert train.label == f"Train {plain('minilm-nli')} now"  # the model's name, escaped as text
    at = train.click().run()
    job = jobs.read("train-nli")
    try:
        assert job["command"][-2:] == ["train", "nli"] and jobs.alive("train-nli")
        assert any("Training" in i.value for i in at.info)
    finally:
        os.killpg(job["pid"], signal.SIGTERM)
