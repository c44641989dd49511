"""Bring your own: predictions and datasets imported from files and DataFrames (backend.imports, backend.api)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from backend.analysis import evaluation as evaluate
from backend.analysis import leaderboard as overview
from backend.api import Lab
from backend.datasets.base import DataError
from backend.datasets.description import Description
from backend.imports import datasets as user_datasets
from backend.imports import matching, predictions
from backend.imports.check_report import Report
from backend.imports.files import read
from backend.store.access import session
from backend.store.examples import Slice
from backend.views import explore

ROBERTA = "nope/RoBERTa-large/mnli-snli-anli-fever/1"
WRITTEN = ("question", "presupposition", "correction")
WORDS = {"E": "entailment", "N": "neutral", "C": "contradiction"}
NLI = Description("nli", ("E", "N", "C"), "E", ("main",))
DETECT = Description("detect", ("N", "FP"), "FP", ("test",))
EXAMPLES = pd.DataFrame(
    {
        "example_id": ["a", "b", "c"],
        "split": ["test"] * 3,
        "input": ["Why is the sky green?", "Who wrote \u201cHamlet\u201d?", "Why do cats bark?"],
        "hypothesis": [None] * 3,
    }
)


@pytest.fixture()
def store(real_store, tmp_path) -> Path:
    path = tmp_path / "lab.duckdb"
    shutil.copy(real_store, path)
    return path


def check(frame_or_text, description=DETECT, name="preds.csv", **options) -> Report:
    source = frame_or_text.encode() if isinstance(frame_or_text, str) else frame_or_text
    table = read(source, name=name)
    return predictions.check(table, EXAMPLES, description, predictions.Options(dataset="toy", **options)).report


# --- every validation rule, one broken file each ---


@pytest.mark.parametrize(
    "text, name, kind, where",
    [
        ("id,label\na,FP\nb,maybe\n", "p.csv", "unknown label", "line 3"),
        ("id,label\na,FP\na,N\n", "p.csv", "duplicate", "line 2"),
        ("id,label\na,FP\nb,\n", "p.csv", "empty", "line 3"),
        ("id,prob_N,prob_FP\na,0.2,0.8\nb,0.5,0.6\n", "p.csv", "bad probabilities", "line 3"),
        ("id,prob_N,prob_FP\na,-0.2,1.2\n", "p.csv", "bad probabilities", "line 2"),
        ("id,prob_N,prob_FP\na,,1\n", "p.csv", "bad probabilities", "line 2"),
        ('{"id": "a", "probs": [0.1, 0.2, 0.7]}\n', "p.jsonl", "bad probabilities", "line 1"),
        ('{"id": "a", "probs": [0.1, 0.9]}\n\n{"id": "b", "probs": "nan"}\n', "p.jsonl", "bad probabilities", "line 3"),
        ("question\nWhy is the sky green?\n", "p.csv", "column", "options"),
        ("id,label\nzzz,FP\n", "p.csv", "unmatched", "file"),
    ],
)
def test_a_broken_file_is_rejected_with_the_line_and_what_is_wrong(text, name, kind, where):
    report = check(text, name=name)
    assert not report.ok
    assert (report.problems[0].kind, report.problems[0].where) == (kind, where), report.problems


@pytest.mark.parametrize(
    "raw, problem",
    [
        (b"", "the file is empty"),
        (b"id,label\n", "no data rows"),
        (b"id,label\na,FP\n\xff\xfe,N\n", "line 3: byte 14 is not UTF-8"),
        (b'{"id": "a"}\n{"id": \n', "line 2: not valid JSON"),
        (b'{"id": "a"}', "expected a list of records"),
        (b"PAR1 not really", "not a Parquet file"),
    ],
)
def test_unreadable_files_name_the_file_and_line(raw, problem):
    name = (
        "p.parquet"
        if raw.startswith(b"PAR1")
        else "p.json"
        if raw == b'{"id": "a"}'
        else "p.jsonl"
        if raw.startswith(b"{")
        else "p.csv"
    )
    with pytest.raises(DataError, match=problem) as caught:
        read(raw, name=name)
    assert caught.value.path == name


def test_a_file_over_the_size_cap_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("PLAB_IMPORT_MAX_MB", "0.001")
    path = tmp_path / "big.csv"
    path.write_text("id,label\n" + "a,FP\n" * 400)
    with pytest.raises(DataError, match="over the import cap of 0 MiB .*PLAB_IMPORT_MAX_MB"):
        read(path)


def test_unmatched_rows_are_skipped_and_listed_or_fatal_when_strict():
    text = "id,label\na,FP\nnope,N\n"
    lenient, strict = check(text), check(text, strict=True)
    assert lenient.ok and lenient.matched == 1 and lenient.skipped[0].where == "line 3"
    assert round(lenient.coverage, 3) == 0.333
    assert not strict.ok and strict.problems[0].kind == "unmatched"


@pytest.mark.parametrize(
    "column, values, order, expected",
    [
        ("label", ["false premise", "normal", "FP"], (), ["FP", "N", "FP"]),
        ("label", ["yes", "no", "True"], (), ["FP", "N", "FP"]),  # two labels: yes/true = the positive label
        ("label", [1, 0, 1], (), ["FP", "N", "FP"]),
        ("label", [0, 1, 1], ("FP", "N"), ["FP", "N", "N"]),  # a declared order wins
    ],
)
def test_label_values_map_onto_the_dataset_labels(column, values, order, expected):
    frame = pd.DataFrame({"id": ["a", "b", "c"], column: values})
    plan = predictions.check(read(frame), EXAMPLES, DETECT, predictions.Options(dataset="toy", label_order=order))
    assert plan.report.ok and plan.predictions["label"].tolist() == expected


def test_logits_go_through_a_softmax_and_lists_follow_the_declared_order():
    frame = pd.DataFrame({"id": ["a", "b"], "logits": [[0.0, np.log(3)], [np.log(4), 0.0]]})
    plan = predictions.check(read(frame), EXAMPLES, DETECT, predictions.Options(dataset="toy", label_order=("FP", "N")))
    assert plan.report.ok and plan.report.probabilities == "softmax of logits"
    assert np.allclose(plan.probs, [[0.75, 0.25], [0.2, 0.8]])  # stored in the dataset's order (N, FP)
    assert plan.predictions["label"].tolist() == ["N", "FP"]  # most probable, when no label column


def test_text_matching_normalises_case_quotes_and_spaces_and_never_guesses():
    frame = pd.DataFrame(
        {"question": ["why is  the SKY green?", 'Who wrote "Hamlet"?', "What?"], "label": ["FP", "N", "N"]}
    )
    report = check(frame)
    assert report.match_by.startswith("text") and report.matched == 2 and report.skipped[0].kind == "unmatched"
    twins = pd.DataFrame(
        {"example_id": ["x", "y"], "split": ["t", "t"], "input": ["Same?", "Same?"], "hypothesis": [None] * 2}
    )
    differ = predictions.check(
        read(pd.DataFrame({"question": ["same?", "same?"], "label": ["FP", "N"]})),
        twins,
        DETECT,
        predictions.Options(dataset="toy"),
    ).report
    agree = predictions.check(
        read(pd.DataFrame({"question": ["same?", "same?"], "label": ["FP", "FP"]})),
        twins,
        DETECT,
        predictions.Options(dataset="toy"),
    ).report
    assert differ.matched == 0 and {p.kind for p in differ.skipped} == {"ambiguous"}
    assert agree.matched == 2  # identical predictions for identical texts: any assignment stores the same thing


def test_a_split_column_tells_apart_the_same_text_in_two_splits():
    twins = pd.DataFrame(
        {"example_id": ["x", "y"], "split": ["dev", "test"], "input": ["Same?", "Same?"], "hypothesis": [None] * 2}
    )
    frame = pd.DataFrame({"question": ["same?", "Same? "], "split": ["test", "dev"], "label": ["FP", "N"]})
    plan = predictions.check(read(frame), twins, DETECT, predictions.Options(dataset="toy"))
    assert plan.report.ok and plan.predictions.set_index("example_id")["label"].to_dict() == {"y": "FP", "x": "N"}


def test_normalise_is_documented_by_example():
    assert matching.normalise(pd.Series(["\u201cA\u201d\u00a0 b\u2014C "])).tolist() == ['"a" b-c']


# --- round trips on the real data: an exported paper run, imported by text, scores exactly the same ---


def _same_tables(original: str, copy: str, report: dict) -> int:
    compared = 0
    for title, frame in report.items():
        if "run" not in frame.columns or not frame["run"].isin([original]).any():
            continue
        a = frame[frame["run"] == original].drop(columns=[c for c in ("run", "model", "source") if c in frame])
        b = frame[frame["run"] == copy].drop(columns=[c for c in ("run", "model", "source") if c in frame])
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), obj=title)
        compared += 1
    return compared


@pytest.mark.parametrize("with_probs", [False, True])
def test_a_nope_paper_run_exported_as_text_and_word_labels_imports_with_identical_metrics(store, tmp_path, with_probs):
    lab = Lab(store)
    original = lab.predictions(ROBERTA)
    export = pd.DataFrame(
        {
            "premise": original["input"],
            "hypothesis": original["hypothesis"],
            "predicted_label": original["label"].map(WORDS),
        }
    )
    if with_probs:  # one column per label, named by word; by id, since two repeated NOPE items got probabilities
        for k, label in enumerate("ENC"):  # that differ in the last digits, which by text is rightly ambiguous
            export[f"prob_{WORDS[label]}"] = original["probs"].map(lambda p, k=k: p[k])
        export.insert(0, "uid", original["example_id"])
    path = tmp_path / "roberta.csv"
    export.sample(frac=1, random_state=0).to_csv(path, index=False)  # another order than the store's
    report = lab.import_run(path, dataset="nope", model="my-roberta")
    assert report.ok and report.matched == 2732 and report.coverage == 1
    assert report.match_by == ("id" if with_probs else "text (premise + hypothesis)")
    copy = "nope/user/my-roberta"
    with session(store) as con:
        nope = evaluate.nope_report(con, [ROBERTA, copy], groups=False)
        calibration = nope.pop("Human vs model: crowd label shares vs model probabilities")
        tables = {**nope, **evaluate.classification_report(con, "nope", [ROBERTA, copy])}
        compared = _same_tables(ROBERTA, copy, {**tables, **({"calibration": calibration} if with_probs else {})})
        board = overview.headline(con).set_index("run")
        for split in ("main", "adv"):
            filters = (("split", (split,)),)
            a, b = (explore.slice_summary(con, Slice("nope", filters, run_a=r)) for r in (ROBERTA, copy))
            assert (a.accuracy, a.macro_f1, a.confusion.to_dict()) == (b.accuracy, b.macro_f1, b.confusion.to_dict())
    assert compared >= (
        8 if with_probs else 7
    )  # Figure 5, Table 4, majority-N, headline, bias, facets, pairs (+ calibration)
    assert (calibration["run"] == copy).any() == with_probs
    pd.testing.assert_frame_equal(
        board.loc[[ROBERTA], ["split", "value", "low", "high", "n"]].reset_index(drop=True),
        board.loc[[copy], ["split", "value", "low", "high", "n"]].reset_index(drop=True),
    )
    assert board.loc[copy, "kind"].iloc[0] == "your import"


def test_an_ifqa_qa_run_imports_by_question_with_identical_exact_match(lab, tmp_path):
    from tests.helpers.data import QA_RUN

    store = tmp_path / "lab.duckdb"
    shutil.copy(lab["store"], store)
    api = Lab(store)
    original = api.predictions(QA_RUN)
    assert len(original) == 6
    path = tmp_path / "answers.jsonl"
    path.write_text(
        "".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in zip(original["input"], original["answer"]))
    )
    report = api.import_run(path, dataset="ifqa", model="my-reader", split="S-dev")
    assert report.ok and report.matched == 6 and report.match_by == "text (question)"
    copy = "ifqa/user/my-reader"
    with session(store) as con:
        board = overview.headline(con).set_index("run")
        stored = con.execute(
            "SELECT example_id, answer FROM predictions WHERE run_id = $r ORDER BY 1", {"r": copy}
        ).fetchall()
        before = con.execute(
            "SELECT example_id, answer FROM predictions WHERE run_id = $r ORDER BY 1", {"r": QA_RUN}
        ).fetchall()
    assert stored == before
    assert board.loc[copy, ["value", "n"]].tolist() == board.loc[QA_RUN, ["value", "n"]].tolist()


def test_question_files_import_as_qa_and_writing_runs_with_their_own_overview_chart_and_model_card(
    store, tmp_path, open_page, capsys
):
    """Issue 54, item 8: a `question,answer` file for qaqa and a `question,presupposition,correction` file for crepe
    were checked as detection runs (the datasets' task) and rejected; imported with the task set by hand, the
    QA run was drawn on the macro-F1 axis of qaqa's baselines and a writing run had no headline metric at all."""
    from backend.cli.main import main
    from backend.views import cards
    from tests.helpers.data import shared

    qaqa = pd.read_csv(shared("qaqa") / "Data" / "QAQA.csv", dtype=str, keep_default_na=False)
    answers = qaqa[["question", "abstractive_answer"]].rename(columns={"abstractive_answer": "answer"})
    answers.loc[::2, "answer"] = "I do not know."  # every other answer wrong
    answers.to_csv(tmp_path / "qaqa_answers.csv", index=False)
    sycon = shared("crepe") / "sycon_bench_subset"
    written = pd.DataFrame({c: (sycon / f"{c}s.txt").read_text().splitlines() for c in WRITTEN})
    written.loc[::2, "correction"] = ""  # every other correction missing: that item's mean F1 is (1 + 0) / 2
    written.to_csv(tmp_path / "crepe_writer.csv", index=False)
    for name, dataset in (("qaqa_answers", "qaqa"), ("crepe_writer", "crepe")):  # no --task: guessed
        assert main(["--store", str(store), "import-run", str(tmp_path / f"{name}.csv"), "--dataset", dataset]) == 0
    said = capsys.readouterr().out  # issue 64, item 9: the report says the task is not the dataset's own
    assert "task qa, guessed from the file's columns: not the dataset's own task, detect" in said
    assert "task write, guessed from the file's columns: not the dataset's own task, detect" in said
    with session(store) as con:
        board = overview.headline(con).set_index("run")
        models = cards.models(con)
        card = cards.card(con, "crepe_writer")
    qa, write = board.loc["qaqa/user/qaqa_answers/qa"], board.loc["crepe/user/crepe_writer/write"]
    assert (qa["metric"], qa["split"], qa["n"], qa["part"]) == ("exact match", "eval", 570, "")
    assert qa["value"] == pytest.approx((answers["answer"] == qaqa["abstractive_answer"]).mean())  # 0.5
    assert (write["metric"], write["split"], write["n"]) == ("unigram F1 (presupposition and correction)", "test", 200)
    assert write["value"] == pytest.approx((1 + (written["correction"] != "").mean()) / 2)  # 0.75
    assert {"qaqa_answers", "crepe_writer"} <= set(models)
    assert card["run"].tolist() == ["crepe/user/crepe_writer/write"] and card["metric"][0] == write["metric"]
    at = open_page(store, "pages/overview.py", {"board": "qaqa"})  # (a writing run's chart is drawn the same way)
    drawn = {spec["title"]["text"]: spec for spec in (json.loads(c.proto.spec) for c in at.get("vega_lite_chart"))}
    layer = drawn["qaqa exact match on eval"]["layer"][0]["encoding"]  # its own chart: no macro-F1 baseline on it
    assert layer["color"]["scale"]["domain"] == ["your import"] and layer["x"]["title"] == "exact match (eval)"
    assert any(set(t.value.get("run", ())) == {"qaqa/user/qaqa_answers/qa"} for t in at.dataframe)  # its own table


def test_user_runs_survive_a_reingest_replace_only_when_asked_and_delete(store):
    lab = Lab(store)
    frame = pd.DataFrame({"id": ["test-0", "test-1"], "label": ["FP", "N"]})
    assert lab.import_run(frame, dataset="falseqa", model="mine").ok
    with pytest.raises(predictions.RunExists, match="replace it"):
        lab.import_run(frame, dataset="falseqa", model="mine")
    assert lab.import_run(frame.assign(label=["N", "N"]), dataset="falseqa", model="mine", replace=True).ok
    from backend.imports.ingest import ingest

    assert ingest(["falseqa"], store=store)[0].status == "loaded"
    kept = lab.predictions("falseqa/user/mine")
    assert kept["label"].tolist() == ["N", "N"]
    with pytest.raises(predictions.RunExists, match="not one of yours"):
        lab.import_run(frame, dataset="falseqa", run_id="falseqa/baseline/always-N", replace=True)
    with pytest.raises(ValueError, match="only runs you imported"):
        lab.delete_run("falseqa/baseline/always-N")
    lab.delete_run("falseqa/user/mine")
    assert "falseqa/user/mine" not in set(lab.runs("falseqa")["run_id"])


def test_a_rejected_import_writes_nothing(store):
    with session(store) as con:
        before = (
            con.execute("SELECT count(*) FROM runs").fetchone()[0],
            con.execute("SELECT count(*) FROM predictions").fetchone()[0],
        )
    report = Lab(store).import_run(
        pd.DataFrame({"id": ["test-0", "test-1"], "label": ["FP", "sometimes"]}), dataset="falseqa", model="bad"
    )
    assert not report.ok and report.problems[0].kind == "unknown label"
    with session(store) as con:
        after = (
            con.execute("SELECT count(*) FROM runs").fetchone()[0],
            con.execute("SELECT count(*) FROM predictions").fetchone()[0],
        )
    assert after == before


# --- a user's own dataset ---


def _pairs_file(path: Path) -> Path:
    rows = []
    for i in range(30):
        verb = ["stop", "know", "regret"][i % 3]
        rows += [
            {
                "id": f"{i}a",
                "premise": f"Kim {verb}s thing {i}.",
                "hypothesis": f"Thing {i} is so.",
                "label": "entailment",
                "verb": verb,
                "pair": f"p{i}",
                "role": "a-plain",
                "note": f"free text {i}",
            },
            {
                "id": f"{i}b",
                "premise": f"Kim doesn't {verb} thing {i}.",
                "hypothesis": f"Thing {i} is so.",
                "label": "neutral" if i % 4 else "entailment",
                "verb": verb,
                "pair": f"p{i}",
                "role": "b-negated",
                "note": f"free text {i}b",
            },
        ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_a_user_dataset_gets_facets_pairs_baselines_and_works_on_every_page(store, tmp_path, open_page):
    options = user_datasets.DatasetOptions(
        name="my-pairs", task="nli", columns={"pair_id": "pair", "pair_role": "role"}
    )
    bundle, description = user_datasets.check(read(_pairs_file(tmp_path / "pairs.csv")), options)
    assert (
        description.facets == ("verb",) and len(bundle.examples) == 60 and len(bundle.pairs) == 30
    )  # 'note' is free text
    with session(store) as con:
        counts = user_datasets.save(con, bundle)
        assert counts["baseline runs"] == 4
        with pytest.raises(user_datasets.DatasetExists):
            user_datasets.save(con, bundle)
        assert explore.slice_count(con, Slice("my-pairs", (("extra.verb", ("stop",)),))) == 20
        assert (
            json.loads(con.execute("SELECT extra FROM examples WHERE example_id = '0a'").fetchone()[0])["note"]
            == "free text 0"
        )
    lab = Lab(store)
    frame = lab.examples("my-pairs")[["example_id"]].assign(label="E")
    assert lab.import_run(frame, dataset="my-pairs", model="always-yes").ok
    assert lab.metrics("my-pairs", "my-pairs/user/always-yes")["accuracy"].value == pytest.approx(38 / 60)
    params = {"dataset": "my-pairs", "run_a": "my-pairs/user/always-yes", "extra.verb": "know"}
    for page, query in [
        ("overview", {}),
        ("explore", params),
        ("example", {"dataset": "my-pairs", "example": "0b"}),
        ("pairs", {}),
        ("rate", {}),
        ("imports", {}),
    ]:
        at = open_page(store, f"pages/{page}.py", query)
        assert not at.exception and not at.error, (page, at.exception, [e.value for e in at.error])
    assert "my-pairs" in "".join(str(t.value) for t in open_page(store, "pages/overview.py").dataframe)


@pytest.mark.parametrize(
    "text, problem, line, column",
    [
        ("premise,hypothesis,label\nA.,B.,E\nA.,B.,yes\n", "gold label 'yes' is not one of", 3, "label"),
        ("id,premise,hypothesis,label\n1,A.,B.,E\n1,C.,D.,N\n", "example id '1' is used by an earlier row", 3, "id"),
        ("premise,label\nA.,E\n", "needs a hypothesis column", None, "hypothesis"),
        ("premise,hypothesis,label\n,B.,E\n", "empty text", 2, "premise"),
        (
            "premise,hypothesis,label,pair_id,pair_role\nA.,B.,E,p1,a\nC.,D.,N,p1,b\nE.,F.,E,p1,c\n",
            "pair 'p1' has 3 rows",
            2,
            "pair_id",
        ),
    ],
)
def test_a_broken_dataset_file_names_the_line_and_column(text, problem, line, column):
    with pytest.raises(DataError, match=problem) as caught:
        user_datasets.check(read(text.encode(), name="mine.csv"), user_datasets.DatasetOptions(name="mine", task="nli"))
    assert (caught.value.path, caught.value.line, caught.value.field) == ("mine.csv", line, column)


def test_built_in_names_are_reserved():
    with pytest.raises(DataError, match="built-in"):
        user_datasets.check(
            read(b"premise,hypothesis,label\nA.,B.,E\n", name="x.csv"),
            user_datasets.DatasetOptions(name="nope", task="nli"),
        )


def test_parquet_and_json_read_like_csv():
    frame = pd.DataFrame({"id": ["a", "b"], "label": ["FP", "N"]})
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame), buffer)
    for raw, name in [
        (buffer.getvalue(), "p.parquet"),
        (frame.to_json(orient="records").encode(), "p.json"),
        (frame.to_csv(sep="\t", index=False).encode(), "p.tsv"),
    ]:
        assert check(raw, name=name).matched == 2


# --- found in review: each failed before its fix ---


def test_csv_columns_are_read_as_text_so_ids_keep_their_zeros_and_blank_cells_stay_missing():
    table = read(b"id,label\n007,FP\n,N\n010,N\n", name="p.csv")
    assert table.frame["id"].tolist()[0::2] == ["007", "010"] and table.frame["id"].isna().tolist() == [
        False,
        True,
        False,
    ]
    examples = pd.DataFrame(
        {"example_id": ["007", "010"], "split": ["t", "t"], "input": ["a", "b"], "hypothesis": [None] * 2}
    )
    report = predictions.check(table, examples, DETECT, predictions.Options(dataset="toy")).report
    assert report.matched == 2 and [p.where for p in report.skipped] == ["line 3"]


def test_a_malformed_csv_row_and_a_tsv_quote_are_handled_with_the_line():
    with pytest.raises(DataError, match="not valid CSV") as caught:
        read(b"id,label\n1,E\n2,E,extra\n", name="p.csv")
    assert caught.value.line == 3
    assert read(b'id\tlabel\n1\t"FP\n2\tN\n', name="p.tsv").frame["label"].tolist() == ['"FP', "N"]  # no quoting in TSV


@pytest.mark.parametrize(
    "labels, positive, values, expected",
    [
        (("0", "1"), "1", ["1.0", "0.0", "1"], ["1", "0", "1"]),  # a number column with a blank cell reads 1.0
        (("E", "N", "C"), "E", ["neutral", "valid"], ["N", None]),  # detection words are not NLI labels
    ],
)
def test_number_labels_and_label_words_per_label_set(labels, positive, values, expected):
    from backend.imports.columns import label_lookup

    lookup = label_lookup(
        pd.Series(values), Description("detect" if len(labels) == 2 else "nli", labels, positive), (), {}
    )
    assert [lookup[v] for v in values] == expected


def test_a_label_map_onto_no_label_is_refused_before_reading_rows():
    report = check("id,label\na,yes\n", label_map={"yes": "TRUE"})
    assert not report.ok and report.problems[0].kind == "column" and "yes=TRUE" in report.problems[0].message


def test_a_new_store_in_a_new_folder_can_be_created(tmp_path):
    with session(tmp_path / "new" / "deeper" / "lab.duckdb", create=True) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()


@pytest.mark.parametrize(
    "text, options, problem, line",
    [
        ("premise,hypothesis,label,adversarial\nA.,B.,E,yes\nC.,D.,N,perhaps\n", {}, "'perhaps' is not true/false", 3),
        (
            "premise,hypothesis,label,split\nA.,B.,E,dev\n",
            {"train_split": "train"},
            "--train-split 'train' is not a split",
            None,
        ),
    ],
)
def test_typed_columns_and_declared_splits_are_checked_before_writing(text, options, problem, line):
    with pytest.raises(DataError, match=problem) as caught:
        user_datasets.check(
            read(text.encode(), name="mine.csv"), user_datasets.DatasetOptions(name="mine", task="nli", **options)
        )
    assert caught.value.line == line


def test_replacing_a_user_dataset_drops_the_baselines_of_its_old_labels(store):
    first = user_datasets.check(
        read(b"question,label\nA?,yes\nB?,no\n", name="q.csv"),
        user_datasets.DatasetOptions(name="qs", task="detect", labels=("yes", "no"), positive="yes"),
    )
    second = user_datasets.check(
        read(b"question,label\nA?,A\nB?,B\n", name="q.csv"),
        user_datasets.DatasetOptions(name="qs", task="detect", labels=("A", "B"), positive="A"),
    )
    with session(store) as con:
        user_datasets.save(con, first[0])
        user_datasets.save(con, second[0], replace=True)
        runs = sorted(r[0] for r in con.execute("SELECT run_id FROM runs WHERE dataset_id = 'qs'").fetchall())
    assert runs == ["qs/baseline/always-A", "qs/baseline/always-B", "qs/baseline/random"]


def test_text_from_a_user_dataset_is_shown_as_text_not_markdown(store, open_page):
    bundle, _ = user_datasets.check(
        read(
            b"id,question,label\nx1,Why? ![t](http://evil.example/p.png) [here](http://evil.example),FP\n", name="q.csv"
        ),
        user_datasets.DatasetOptions(name="evil", task="detect"),
    )
    with session(store) as con:
        user_datasets.save(con, bundle)
    at = open_page(store, "pages/example.py", {"dataset": "evil", "example": "x1"})
    shown = [m.value for m in at.markdown if "evil" in m.value]
    assert not at.exception and shown and all("\\]\\(http" in m and "![" not in m for m in shown)


def test_a_file_checked_against_the_wrong_dataset_names_the_one_its_rows_match(store, tmp_path):
    """NOPE's predictions checked against CommitmentBank: nothing matches, the report counts 2,732 unmatched rows
    (not one more for the file-level problem), and the dataset the rows do match is found."""
    original = Lab(store).predictions(ROBERTA)
    path = tmp_path / "preds.csv"
    pd.DataFrame(
        {
            "premise": original["input"],
            "hypothesis": original["hypothesis"],
            "predicted_label": original["label"].map(WORDS),
        }
    ).to_csv(path, index=False)
    table = read(path.read_bytes(), path.name)
    options = predictions.Options(dataset="commitmentbank")
    with session(store) as con:
        plan = predictions.plan(con, table, options)
        best = predictions.best_dataset(con, table, options, ["commitmentbank", "falseqa", "nope"])
    assert plan.report.matched == 0 and not plan.report.ok
    assert plan.report.counts() == {"unmatched": 2_732} and "unmatched: 2,732 rows" in plan.report.summary()
    assert best == ("nope", 2_732)
    assert predictions.dataset_from_name("roberta_nope.csv", ["commitmentbank", "nope"]) == "nope"
