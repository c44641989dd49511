"""Batch runs: provenance, progress in chunks, resume after an interruption, per-example errors."""

from __future__ import annotations

import pytest

from backend.execution import batch, runs
from backend.imports.ingest import ingest
from backend.store import runs as store_runs
from backend.store.connection import connect
from tests.helpers.data import make_falseqa


@pytest.fixture()
def store(tmp_path, tiny):  # noqa: F811
    path = tmp_path / "s.duckdb"
    assert ingest(["falseqa"], {"falseqa": make_falseqa(tmp_path / "fq", rows=10)}, path)[0].status == "loaded"
    con = connect(path)
    yield con
    con.close()


def request(**kw):
    return runs.Request(model="tiny-fp", dataset="falseqa", split="test", chunk=4, **{"task": "detect", **kw})


def test_a_run_is_stored_with_provenance(store):
    run_id = batch.predict(store, request(), progress=False)
    assert run_id == "falseqa/tiny-fp/detect/test"
    row = store.execute(
        "SELECT status, model_id, device, code_version, packages->>'$.torch', config->>'$.strategy', seconds "
        "FROM runs WHERE run_id = $r",
        {"r": run_id},
    ).fetchone()
    assert row[:3] == ("complete", "tiny-fp", "cpu") and row[3] and row[4].startswith("2.") and row[5] == "classifier"
    assert row[6] > 0
    assert store_runs.status(store, run_id)["predictions"] == 10
    assert (
        store.execute(
            "SELECT count(*) FROM predictions WHERE run_id=$r AND latency_ms > 0 AND label IN ('FP','N')", {"r": run_id}
        ).fetchone()[0]
        == 10
    )


def test_an_interrupted_run_is_not_complete_and_resumes(store, monkeypatch):
    calls = {"n": 0}
    real = runs.Runner.__call__

    def flaky(self, rows):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(self, rows)

    monkeypatch.setattr(runs.Runner, "__call__", flaky)
    with pytest.raises(KeyboardInterrupt):
        batch.predict(store, request(), progress=False)
    run_id = request().run_id()
    status = store_runs.status(store, run_id)
    assert (status["status"], status["predictions"]) == ("interrupted", 4)
    assert run_id not in set(store_runs.listing(store, "falseqa")["run_id"])  # evaluations see complete runs only
    monkeypatch.setattr(runs.Runner, "__call__", real)
    batch.predict(store, request(), progress=False)
    assert store_runs.status(store, run_id)["status"] == "complete"
    assert store_runs.status(store, run_id)["predictions"] == 10


def test_a_failing_example_is_recorded_and_the_run_completes(store, monkeypatch):
    real = runs.Runner.__call__

    def picky(self, rows):
        if "Question 3?" in list(rows["input"]):
            raise ValueError("cannot read question 3")
        return real(self, rows)

    monkeypatch.setattr(runs.Runner, "__call__", picky)
    run_id = batch.predict(store, request(), progress=False)
    errors = store.execute(
        "SELECT example_id, error FROM predictions WHERE run_id=$r AND error IS NOT NULL", {"r": run_id}
    ).fetchall()
    assert errors == [("test-3", "ValueError: cannot read question 3")]
    assert store_runs.status(store, run_id)["status"] == "complete"


def test_wrong_model_for_task_is_a_clear_error(store):
    with pytest.raises(ValueError, match="cannot do task 'nli'"):
        batch.predict(store, runs.Request(model="tiny-fp", dataset="falseqa", task="nli"), progress=False)
    with pytest.raises(ValueError, match="pass --retriever"):
        batch.predict(store, runs.Request(model="tiny-nli", dataset="falseqa"), progress=False)
    with pytest.raises(ValueError, match="does not read retrieved passages"):  # its id would claim bm25@5
        batch.predict(store, runs.Request(model="tiny-fp", dataset="falseqa", retriever="bm25"), progress=False)


def test_live_query_is_cached_and_stored(store):
    from backend.execution import live

    live.clear_cache()
    query = live.Query(model="tiny-nli", task="nli", premise="he stopped smoking", hypothesis="he smoked")
    first = live.ask(store, query)
    again = live.ask(store, query)
    assert not first.cached and again.cached and again.output == first.output
    assert first.run_id == "live/tiny-nli/nli" and first.device == "cpu" and first.latency_ms > 0
    stored = store.execute(
        "SELECT label, text->>'$.input.premise' FROM predictions WHERE run_id = $r", {"r": first.run_id}
    ).fetchall()
    assert stored == [(first.output.label, "he stopped smoking")]
    assert store_runs.status(store, first.run_id)["status"] == "live"


def test_a_failed_live_store_keeps_the_earlier_answer(store, monkeypatch):
    from backend.execution import live
    from backend.store import writer

    live.clear_cache()
    query = live.Query(model="tiny-nli", task="nli", premise="she quit her job", hypothesis="she had a job")
    first = live.ask(store, query)
    rows = lambda: store.execute(
        "SELECT run_id, example_id, label FROM predictions WHERE run_id LIKE 'live/%'"
    ).fetchall()  # noqa: E731
    before = rows()
    assert len(before) == 1
    live.clear_cache()

    def broken(con, name, batch):
        if name == "predictions":
            raise RuntimeError("disk full")
        return original(con, name, batch)

    original = writer.arrow_table
    monkeypatch.setattr(writer, "arrow_table", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        live.ask(store, query)
    assert rows() == before and before[0][2] == first.output.label  # the answer stored first is still there
    monkeypatch.setattr(writer, "arrow_table", original)
    live.clear_cache()
    live.ask(store, query)  # asked again: replaced, not duplicated
    assert len(rows()) == 1


@pytest.mark.parametrize(
    "query, message",
    [
        ({"task": "nli", "premise": "", "hypothesis": "x"}, "premise: empty"),
        ({"task": "detect", "question": "x" * 1600}, "question: 1,600 characters; at most 1,000"),
    ],
)
def test_live_inputs_are_bounded_with_a_clear_message(store, query, message):
    from backend.execution import live

    with pytest.raises(ValueError, match=message):
        live.ask(store, live.Query(model="tiny-fp", **query))


def test_a_command_on_a_store_another_process_holds_says_what_to_do(tmp_path, capsys, monkeypatch):
    import subprocess
    import sys

    from backend.cli.main import main

    path = tmp_path / "held.duckdb"
    connect(path).close()
    monkeypatch.setenv("PLAB_STORE_WAIT", "1")  # a process that does not share the store (an older release)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; held = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(120)",
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        assert main(["--store", str(path), "status"]) == 1
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err
    assert "Could not open the store" in err and "does not share it" in err and "stop that process" in err
    assert "Traceback" not in err


def test_live_questions_from_many_sessions_share_one_queue_and_batch(tmp_path, tiny, monkeypatch):  # noqa: F811
    """Six sessions asking at once: every answer comes back and is stored, the model ran fewer batches
    than questions, callers were told their place, and a full queue turns a question away at once."""
    import threading
    import time

    from backend.execution import live
    from backend.store.access import session

    path = tmp_path / "lab.duckdb"
    with session(path, create=True) as con:
        pass
    monkeypatch.setenv("PLAB_LIVE_WORKER", "thread")  # to count the batches the runner sees in this process
    live.clear_cache()
    batches, original = [], runs.Runner.__call__

    def slow(self, rows):  # slow enough for questions to pile up
        batches.append(len(rows))
        time.sleep(0.5)
        return original(self, rows)

    monkeypatch.setattr(runs.Runner, "__call__", slow)
    places, answers = [], [None] * 6

    def ask(i):
        answers[i] = live.ask(
            path,
            live.Query(model="tiny-fp", task="detect", question=f"Why is question {i} odd?"),
            waiting=places.append,
        )

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert all(a is not None and a.output.label in ("N", "FP") for a in answers)
    assert sum(batches) == 6 and len(batches) < 6 and max(places) > 0
    with session(path) as con:
        assert con.execute("SELECT count(*) FROM predictions WHERE run_id = 'live/tiny-fp/detect'").fetchone()[0] == 6
    monkeypatch.setattr(live, "QUEUE_MAX", 1)
    live.clear_cache()
    errors = []

    def ask_full(i):
        try:
            live.ask(path, live.Query(model="tiny-fp", task="detect", question=f"Is {i} busy?"), save=False)
        except live.QueueFull as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=ask_full, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors and "questions are waiting" in errors[0]


def test_the_dashboard_s_live_answers_run_in_a_worker_process_that_restarts_when_killed(tmp_path, tiny, monkeypatch):  # noqa: F811
    """A store given by path (the dashboard's way): the model runs in one other process, answers as in
    this process, and a killed worker is named in the error and replaced at the next question."""
    import os
    import signal

    from backend.execution import live, live_worker
    from backend.store.access import session

    path = tmp_path / "lab.duckdb"
    with session(path, create=True):
        pass
    monkeypatch.delenv("PLAB_LIVE_WORKER", raising=False)
    live.clear_cache()
    query = live.Query(model="tiny-fp", task="detect", question="Why did the moon landing happen in 1950?")
    remote = live.ask(path, query)
    worker = live_worker.pid()
    assert worker is not None and worker != os.getpid()
    with session(path) as con:
        monkeypatch.setenv("PLAB_LIVE_WORKER", "thread")
        live.clear_cache()
        here = live.ask(con, query, save=False)
    assert here.output.label == remote.output.label and here.output.probs == pytest.approx(
        remote.output.probs, abs=1e-5
    )
    monkeypatch.delenv("PLAB_LIVE_WORKER")
    live.clear_cache()
    live.ask(path, replace_question(query, "Is the first question odd?"), save=False)
    os.kill(live_worker.pid(), signal.SIGKILL)
    with pytest.raises(live_worker.WorkerStopped, match="live worker process stopped"):
        live.ask(path, replace_question(query, "Is the second question odd?"), save=False)
    again = live.ask(path, replace_question(query, "Is the third question odd?"), save=False)
    assert again.output.label in ("N", "FP") and live_worker.pid() not in (None, worker)
    live.clear_cache()


def replace_question(query, question: str):
    from dataclasses import replace

    return replace(query, question=question)


def test_a_prompted_run_names_its_template_and_refuses_to_resume_with_a_changed_text(store, tmp_path):
    """A generator's run id names the template's version; a run made with one text of a template is not
    resumed (or extended) with another text under the same version."""
    folder = tmp_path / "data" / "prompts"
    folder.mkdir(parents=True)
    header = (
        '{#\nname: mine\nversion: 1\ntask: detect\nstrategy: zero-shot\nverbalisers: {FP: ["yes"], N: ["no"]}\n#}\n'
    )
    (folder / "mine.j2").write_text(header + "False assumption? {{ item.question }}")
    mine = runs.Request(model="tiny-gen", dataset="falseqa", task="detect", split="test", chunk=4, template="mine")
    run_id = batch.predict(store, mine, progress=False)
    assert run_id == "falseqa/tiny-gen/detect/mine@1/test"
    texts = [
        r[0]
        for r in store.execute("SELECT text->>'$.prompt' FROM predictions WHERE run_id = $r", {"r": run_id}).fetchall()
    ]
    assert len(texts) == 10 and all(t.startswith("False assumption? ") for t in texts)
    (folder / "mine.j2").write_text(header + "Is something false in: {{ item.question }}")
    with pytest.raises(ValueError, match="bump the template's version"):
        batch.predict(store, mine, progress=False)


def test_evaluate_names_the_dataset_of_a_run_given_with_another_dataset(real_store, capsys):
    """Issue 54, item 9: `evaluate --dataset nope --run <a qaqa run>` said "no such run of nope" and blamed --limit."""
    from backend.cli.main import main

    assert main(["--store", str(real_store), "evaluate", "--dataset", "nope", "--run", "qaqa/baseline/random"]) == 1
    err = capsys.readouterr().err
    assert "'qaqa/baseline/random' (a run of qaqa, not of nope: evaluate it with --dataset qaqa)" in err
    assert "--limit" not in err and "Complete runs of nope: nope/BOW/mnli-snli-anli-fever/0" in err
