"""Judges and people (issue 29): judge runs against a real llama.cpp server serving SmolLM2 (a poor judge,
and the page must say so from what is measured), the agreement metrics against the reference
implementations, and the Rate page's *Judge vs people* section.

The people's ratings here are made by two raters in the test: they check the mechanics (no human ratings
of free-form outputs ship with the lab), so no number below is a finding about SmolLM2 as a judge.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from backend.actions import jobs as job_actions
from backend.analysis import judging, pairwise
from backend.analysis import ratings as rate
from backend.cli.main import main as cli
from backend.execution import batch, rescoring, runs
from backend.execution.judging import JudgeRequest
from backend.metrics import agreement, squad
from backend.metrics.rubrics import RUBRIC
from backend.models.prompts import parsers, templates
from backend.store import backup
from backend.store import judgements as store_judgements
from backend.store.connection import connect
from tests.helpers.data import QA_RUN, WRITE_RUN
from tests.helpers.llm_endpoint import NAME, serving
from tests.helpers.people import LOCAL, give_roles

# outputs judged per run, and tokens per judge response: enough for the mechanics, few enough for CI's 2 cores
WRITTEN, ANSWERED, COMPARED, TOKENS = 3, 10, 4, 16  # ANSWERED = judging.MIN_ITEMS: the trust verdict is reached


@pytest.mark.parametrize(
    ("text", "low", "high", "status", "value"),
    [
        ("Reason: it reads well.\nScore: 3", 0, 3, "ok", 3.0),
        ("2. It reads well.", 0, 3, "ok", 2.0),
        ("The answer is 1.", 0, 1, "ok", 1.0),
        ("Score: 2/3", 0, 3, "ok", 2.0),
        ("Score: 4", 0, 3, "out-of-range", None),
        ("Score: 1\nScore: 0", 0, 1, "ambiguous", None),
        ("Score: 1.5", 0, 3, "unparsed", None),
        ("The answer is no, 1 = yes.", 0, 1, "unparsed", None),
        ("I would say it is about 2", 0, 3, "unparsed", None),
        ("   ", 0, 3, "empty", None),
        ("I'm sorry, I cannot rate this.", 0, 3, "refusal", None),
    ],
)
def test_judge_responses_are_parsed_strictly(text, low, high, status, value):
    parsed = parsers.judgement(text, low, high)
    assert (parsed.status, parsed.value) == (status, value)


@pytest.mark.parametrize("points", [2, 4, 7])
def test_paired_agreement_matches_the_reference_implementations(points):
    rng, domain = np.random.default_rng(points), np.arange(points)
    for _ in range(25):
        n = int(rng.integers(4, 40))
        a = rng.integers(0, points, n)
        b = np.clip(a + rng.integers(-1, 2, n), 0, points - 1)
        if np.unique(np.r_[a, b]).size < 2:
            continue
        got = agreement.paired(a, b, domain)
        scale = "nominal" if points == 2 else "ordinal"
        want = krippendorff.alpha(
            reliability_data=np.vstack([a, b]).astype(float), value_domain=domain, level_of_measurement=scale
        )
        assert got.alpha == pytest.approx(want, abs=1e-9)
        kappa = cohen_kappa_score(a, b, labels=domain, weights=None if points == 2 else "quadratic")
        assert got.kappa == pytest.approx(kappa, abs=1e-9, nan_ok=True)
        assert got.rho == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-9, nan_ok=True)
        assert got.alpha_low <= got.alpha <= got.alpha_high or np.isnan(got.alpha_low)


def test_consensus_kendall_and_the_verdict_on_known_tables():
    assert [agreement.consensus(s) for s in ([0, 1], [2], [1, 3, 3], [0, 3, 3, 2])] == [0, 2, 3, 2]
    assert agreement.kendall([0.5, 1.0, 2.0], [1, 2, 3]) == pytest.approx((1.0, 0.333), abs=1e-3)
    assert np.isnan(agreement.kendall([1, 2], [1, 2])[0])
    table = pd.DataFrame(
        [
            ("fluency", judging.PEOPLE, 20, 0.85, 0.70, 0.95),
            ("correction", judging.PEOPLE, 20, 0.30, 0.05, 0.60),
            ("consistency", judging.PEOPLE, 20, 0.72, 0.50, 0.90),
            ("presupposition", judging.PEOPLE, 6, 0.90, 0.80, 1.00),
            ("fluency", "ann", 20, 0.10, -0.2, 0.3),
        ],
        columns=["criterion", "against", "n", "alpha", "alpha_low", "alpha_high"],
    )
    verdict = judging.verdict(table).set_index("criterion")["trust"].to_dict()
    assert verdict == {
        "fluency": "reliable",
        "correction": "poor",
        "consistency": "tentative",
        "presupposition": "unknown",
    }


def test_every_judge_rubric_renders_its_scale_and_the_output():
    item = {"question": "Q?", "premise": "Q?", "hypothesis": "", "gold_label": "FP"}
    item |= {"gold_answers": ["ga"], "gold_presuppositions": ["gp"], "gold_corrections": ["gc"]}
    for template in templates.for_task("judge"):
        assert template.criteria and template.judges, template.name
        for criterion in template.criteria:
            levels = [[score, meaning] for score, meaning in RUBRIC[criterion].items()]
            scale = {"name": criterion, "low": levels[0][0], "high": levels[-1][0], "levels": levels}
            text = template.render_with(item=item, criterion=scale, output="OUT", output_a="OUT A", output_b="OUT B")
            shown = ("OUT A", "OUT B") if template.strategy == "pairwise" else ("OUT",)
            meaning = levels[-1][1].lower()
            assert "Q?" in text and all(s in text for s in shown) and meaning in text.lower(), template.name


@pytest.fixture(scope="module")
def judged(real_store, tmp_path_factory):
    """A CREPE writing run and a (QA)2 answering run by SmolLM2 over the endpoint, each judged by SmolLM2
    (the (QA)2 one with two samples; two (QA)2 runs compared pairwise), and two raters' scores of the (QA)2 answers."""
    with serving(real_store, tmp_path_factory.mktemp("judges")) as served:
        store, server = served["store"], served["server"]
        write_request = runs.Request(NAME, "crepe", "write", template="write-two-lines", limit=WRITTEN)
        write = batch.predict(store, write_request, progress=False)
        qa_request = runs.Request(NAME, "qaqa", "qa", split="eval", template="qa-zero-shot", limit=ANSWERED)
        qa = batch.predict(store, qa_request, progress=False)
        before = server.completions()
        writing = judging.JudgeRequest(NAME, write, "judge-crepe-writing", max_tokens=TOKENS)
        crepe_judge = judging.judge(store, writing, progress=False)
        asked = server.completions() - before
        sampled = judging.JudgeRequest(NAME, qa, "judge-corrects-assumption", samples=2, max_tokens=TOKENS)
        qa_judge = judging.judge(store, sampled, progress=False)
        few = runs.Request(NAME, "qaqa", "qa", split="eval", template="qa-few-shot", shots=2, limit=COMPARED)
        qa_b = batch.predict(store, few, progress=False)
        versus = judging.JudgeRequest(NAME, qa, "judge-pairwise", versus=qa_b, max_tokens=TOKENS)
        pair_judge = judging.judge(store, versus, progress=False)
        con = connect(store)
        for i, example_id in enumerate(rate.targets(con, qa)["example_id"]):
            ann = i % 2  # made-up scores: they check the mechanics, not the judge
            rate.save(con, qa, example_id, "ann", {"corrects_assumption": ann})
            rate.save(con, qa, example_id, "bob", {"corrects_assumption": ann if i % 3 else 1 - ann})
        yield {
            **served,
            "con": con,
            "write": write,
            "qa": qa,
            "crepe_judge": crepe_judge,
            "qa_judge": qa_judge,
            "asked": asked,
            "qa_b": qa_b,
            "pair_judge": pair_judge,
        }
        con.close()


def _rows(con, judge_run_id: str) -> pd.DataFrame:
    return con.execute(
        "SELECT example_id, criterion, sample, value, parse, reason, response, cost FROM judgements "
        "WHERE judge_run_id = $j ORDER BY ALL",
        {"j": judge_run_id},
    ).df()


def test_a_judge_run_scores_every_output_on_every_criterion_and_counts_what_it_could_not_parse(judged):
    con, rows = judged["con"], _rows(judged["con"], judged["crepe_judge"])
    assert len(rows) == WRITTEN * 4 == judged["asked"]  # one request per output and criterion
    assert set(rows["criterion"]) == {"fluency", "presupposition", "correction", "consistency"}
    assert set(rows["parse"]) <= {"ok", "unparsed", "out-of-range", "ambiguous", "empty", "refusal"}
    assert rows.loc[rows["parse"] == "ok", "value"].between(0, 3).all()
    assert rows.loc[rows["parse"] != "ok", "value"].isna().all()  # counted, never guessed
    for row in rows.itertuples():  # the stored score is what the parser reads from the stored response
        assert parsers.judgement(row.response, 0, 3).value == (None if np.isnan(row.value) else row.value)
    listed = judging.judge_runs(con, judged["write"]).set_index("judge_run_id").loc[judged["crepe_judge"]]
    assert listed["source"] == f"judge:{NAME}:judge-crepe-writing@1" and listed["status"] == "complete"
    assert (listed["parsed"], listed["unparsed"]) == ((rows["parse"] == "ok").sum(), (rows["parse"] != "ok").sum())
    assert listed["cost"] == pytest.approx(rows["cost"].sum()) and listed["cost"] > 0


def test_a_judge_run_resumes_without_asking_again(judged):
    before = judged["server"].completions()
    writing = judging.JudgeRequest(NAME, judged["write"], "judge-crepe-writing", max_tokens=TOKENS)
    again = judging.judge(judged["store"], writing, progress=False)
    assert again == judged["crepe_judge"] and judged["server"].completions() == before


def test_agreement_with_people_is_what_the_reference_implementations_give(judged):
    con, qa = judged["con"], judged["qa"]
    table = judging.agreement_table(con, judged["qa_judge"], qa)
    assert set(table["against"]) == {judging.PEOPLE, "ann", "bob"}
    rated = con.execute(
        "SELECT example_id, rater_id, value FROM ratings WHERE run_id = $r AND source = 'user'", {"r": qa}
    ).df()
    mine = _rows(con, judged["qa_judge"]).dropna(subset=["value"])
    judge = mine.groupby("example_id")["value"].agg(lambda v: sorted(v)[(len(v) - 1) // 2])  # recomputed here
    people = rated.groupby("example_id")["value"].agg(lambda v: sorted(v)[(len(v) - 1) // 2])
    for against, theirs in [(judging.PEOPLE, people), *rated.groupby("rater_id")]:
        theirs = theirs if against == judging.PEOPLE else theirs.set_index("example_id")["value"]
        row = table[table["against"] == against].iloc[0]
        both = sorted(set(judge.index) & set(theirs.index))
        assert row["n"] == len(both) and row["judge_unscored"] == len(set(theirs.index) - set(judge.index))
        pair = np.array([judge[both].to_numpy(), theirs[both].to_numpy()], dtype=float)
        if len(both) >= 2 and np.unique(pair).size > 1:
            want = krippendorff.alpha(reliability_data=pair, value_domain=[0, 1], level_of_measurement="nominal")
            assert row["alpha"] == pytest.approx(want, abs=1e-9)
            kappa = cohen_kappa_score(pair[0].astype(int), pair[1].astype(int), labels=[0, 1])
            assert row["kappa"] == pytest.approx(kappa, abs=1e-9, nan_ok=True)
    verdict = judging.verdict(table).iloc[0]
    people_row = table[table["against"] == judging.PEOPLE].iloc[0]
    if verdict["trust"] == "reliable":  # the verdict follows the measured alpha, whatever it is
        assert people_row["alpha"] >= judging.RELIABLE and people_row["alpha_low"] >= judging.TENTATIVE
    elif verdict["trust"] == "poor":
        assert people_row["alpha_high"] < judging.TENTATIVE
    elif verdict["trust"] == "unknown":
        assert people_row["n"] < judging.MIN_ITEMS or np.isnan(people_row["alpha"])


def test_the_confusion_cells_hold_the_items_people_and_judge_scored(judged):
    con, qa, judge_run_id = judged["con"], judged["qa"], judged["qa_judge"]
    cells = judging.confusion(con, judge_run_id, qa, "corrects_assumption")
    assert cells["items"].sum() == ANSWERED  # every rated output, scored by the judge or 'unscored'
    for cell in cells[cells["items"] > 0].itertuples():
        items = judging.cell_items(con, judge_run_id, qa, "corrects_assumption", cell.judge, cell.people)
        assert len(items) == cell.items and items["input"].notna().all()


def test_self_consistency_and_the_rated_criterion_of_a_qa_judge(judged):
    con, qa, qa_judge = judged["con"], judged["qa"], judged["qa_judge"]
    rows = _rows(con, qa_judge)
    assert len(rows) == ANSWERED * 2 and set(rows["sample"]) == {0, 1}
    consistency = judging.self_consistency(con, qa_judge)
    matrix = rows.pivot(index="sample", columns="example_id", values="value").to_numpy(dtype=float)
    matrix = matrix[:, np.isfinite(matrix).sum(axis=0) >= 2]
    assert consistency.iloc[0]["samples"] == 2 and consistency.iloc[0]["items"] == matrix.shape[1]
    if matrix.shape[1] and np.unique(matrix[np.isfinite(matrix)]).size > 1:
        want = krippendorff.alpha(reliability_data=matrix, value_domain=[0, 1], level_of_measurement="nominal")
        assert consistency.iloc[0]["alpha"] == pytest.approx(want)
    # people can now rate the criterion the judge scored, beside the run's usual one
    assert rate.criteria_of(con, qa) == ["acceptability", "corrects_assumption", "equivalent"]  # QA judges score
    ranked = judging.ranking(con, f"judge:{NAME}:judge-corrects-assumption@1", "corrects_assumption")
    assert "ranking runs needs three or more" in ranked["why"] and np.isnan(ranked["tau"])


def test_a_judge_cannot_score_a_run_its_rubric_is_not_for(judged):
    with pytest.raises(ValueError, match="judge-qa-equivalence scores qa runs; .* is a write run"):
        judging.judge(
            judged["store"], judging.JudgeRequest(NAME, judged["write"], "judge-qa-equivalence"), progress=False
        )
    assert "judge-crepe-writing@1" in judging.rubrics("write")
    assert {t.name for t in templates.for_task("judge")} >= {"judge-crepe-writing", "judge-corrects-assumption"}


def test_the_rate_page_and_the_cli_say_how_far_to_trust_the_judge(judged, open_page, capsys):
    con, qa, write = judged["con"], judged["qa"], judged["write"]
    verdicts = judging.verdict(judging.agreement_table(con, judged["qa_judge"], qa))
    at = open_page(judged["store"], "pages/rate.py", {"run": qa, "rater": "ann", "judge": judged["qa_judge"]})
    assert not at.exception and any(s.value == "Judge vs people" for s in at.subheader)
    shown = " ".join(e.value for kind in ("error", "warning", "success", "info") for e in getattr(at, kind))
    for row in verdicts.itertuples():
        assert f"{row.criterion}**: {row.trust}" in shown.replace("\\", "")
    parsed = (_rows(con, judged["crepe_judge"])["parse"] == "ok").sum()
    at = open_page(judged["store"], "pages/rate.py", {"run": write, "rater": "ann", "judge": judged["crepe_judge"]})
    shown = " ".join(e.value for e in at.error)
    assert ("This judge gave no usable score" in shown) == (parsed == 0)  # SmolLM2 on CREPE: said, not hidden
    assert cli(["--store", str(judged["store"]), "judges", "--run", qa]) == 0
    printed = capsys.readouterr().out
    assert judged["qa_judge"] in printed and "people (consensus)" in printed


def test_a_backup_keeps_judge_runs(judged, tmp_path):
    folder = backup.write(judged["con"], "test", target=tmp_path / "b")
    rows = json.loads((folder / "manifest.json").read_text())["rows"]
    assert rows["judge_runs"] == 3 and rows["judgements"] == WRITTEN * 4 + ANSWERED * 2 + COMPARED * 2


def test_a_pairwise_judge_sees_both_orders_and_its_verdicts_are_in_run_terms(judged):
    con, judge_run_id = judged["con"], judged["pair_judge"]
    rows = con.execute(
        "SELECT example_id, position, verdict, parse, response FROM judgements WHERE judge_run_id = $j",
        {"j": judge_run_id},
    ).df()
    assert len(rows) == COMPARED * 2 and sorted(set(rows["position"])) == ["AB", "BA"]
    prefix = re.compile(r"^\s*(the\s+)?(better\s+)?answer\s+is\s*:?\s*[\"']?", re.IGNORECASE)
    for row in rows.itertuples():  # first / second as shown, turned into run A / B by the order shown
        stated = prefix.sub("", row.response, count=1)
        said = parsers.label(stated, {"first": ("first",), "second": ("second",), "tie": ("tie",)}).label
        want = {"first": row.position[0], "second": row.position[1], "tie": "tie"}.get(said)
        assert (row.verdict if isinstance(row.verdict, str) else None) == want
        assert (row.parse == "ok") == (want is not None)
    items = pairwise.outcomes(con, judge_run_id)
    summary = pairwise.summary(con, judge_run_id).set_index("measure")
    decided = items.dropna(subset=["outcome"])
    assert summary.loc["A wins (both orders)", "n"] == len(decided)
    shares = summary.loc[["A wins (both orders)", "tie (or the order decided)", "B wins (both orders)"], "share"]
    assert len(decided) == 0 or shares.sum() == pytest.approx(1.0)
    wide = rows.pivot(index="example_id", columns="position", values="verdict").dropna()
    if len(wide):
        assert summary.loc["verdict flips with the order", "share"] == pytest.approx((wide["AB"] != wide["BA"]).mean())
    assert summary.loc["responses with no verdict (unparsed)", "n"] == rows["verdict"].isna().sum()
    reasons = pairwise.reasons(con, judge_run_id)
    found = pairwise.clusters(reasons)
    assert found[["A", "B", "tie"]].to_numpy().sum() == len(reasons)
    for cluster in found.itertuples():
        assert len(pairwise.cluster_items(reasons, cluster.cluster)) == cluster.A + cluster.B + cluster.tie
    with pytest.raises(ValueError, match="pairwise judge: name run B"):
        judging.judge(judged["store"], judging.JudgeRequest(NAME, judged["qa"], "judge-pairwise"), progress=False)


def test_side_by_side_shows_the_pairwise_judge(judged, open_page):
    params = {"dataset": "qaqa", "run_a": judged["qa"], "run_b": judged["qa_b"], "pair_judge": judged["pair_judge"]}
    at = open_page(judged["store"], "pages/outputs.py", params)
    assert not at.exception
    assert any(e.label.startswith("Pairwise judge") for e in at.expander)
    assert any("verdict flips with the order" in str(frame.value["measure"].tolist()) for frame in at.dataframe)


VERDICTS = {  # example: (verdict with A shown first, with B shown first, reason); None = unparsed
    "e1": ("A", "A", "the date is correct"),
    "e2": ("A", "B", "the date is correct"),
    "e3": ("B", "B", "wrong year given"),
    "e4": ("tie", "tie", "both equally vague"),
    "e5": ("A", None, "the date is correct"),
    "e6": ("A", "A", "correct date and place"),
}


def test_pairwise_shares_flips_and_clusters_on_a_hand_made_judge_run(store_copy):
    con = connect(store_copy)
    row = {"judge_run_id": "j", "run_id": "ra", "other_run_id": "rb", "dataset_id": "qaqa", "model_id": "m"}
    row |= {"rubric": "judge-pairwise@1", "rubric_sha256": "x", "kind": "pairwise", "source": "judge:m:p", "samples": 1}
    store_judgements.start(con, row)
    rows = [
        {"judge_run_id": "j", "example_id": e, "criterion": "acceptability", "sample": 0, "position": position,
         "verdict": verdict, "reason": reason if verdict else None, "parse": "ok" if verdict else "unparsed",
         "judged_at": datetime(2026, 1, 1)}
        for e, (ab, ba, reason) in VERDICTS.items()
        for position, verdict in (("AB", ab), ("BA", ba))
    ]  # fmt: skip
    store_judgements.append(con, rows)
    summary = pairwise.summary(con, "j").set_index("measure")
    assert summary.loc["A wins (both orders)", ["share", "n"]].tolist() == [0.4, 5]  # e1, e6 of the 5 decided
    assert summary.loc["tie (or the order decided)", "share"] == pytest.approx(0.4)  # e2 (flipped), e4
    assert summary.loc["B wins (both orders)", "share"] == pytest.approx(0.2)
    assert summary.loc["verdict flips with the order", "share"] == pytest.approx(0.2)  # e2
    assert summary.loc["verdicts naming the answer shown first", ["share", "n"]].tolist() == [pytest.approx(6 / 9), 9]
    assert summary.loc["responses with no verdict (unparsed)", "n"] == 1
    found = pairwise.clusters(pairwise.reasons(con, "j"))
    assert len(found) == 2 and found[["A", "B", "tie"]].to_numpy().sum() == 11
    assert found["name"].str.len().gt(0).all()
    dated = found[found["name"].str.contains("date")]  # the reasons about the date gather, and name their cluster
    assert len(dated) == 1 and dated.iloc[0]["A"] == 6
    con.close()


def test_a_stored_run_is_rescored_by_a_metric_without_rerunning_it(lab, tmp_path, capsys):
    store = tmp_path / "lab.duckdb"
    store.write_bytes(lab["store"].read_bytes())
    scorer = rescoring.rescore(store, QA_RUN, "exact_match")
    rescoring.rescore(store, QA_RUN, "exact_match")  # again: replaced, not doubled
    con = connect(store)
    items = rate.targets(con, QA_RUN)
    rows = _rows(con, scorer).set_index("example_id")
    assert len(rows) == len(items)
    for item in items.itertuples():  # each score is SQuAD's exact match of the stored answer, recomputed here
        gold = list(item.gold_answers) if item.gold_answers is not None else []
        want = squad.exact_match(item.answer or "", gold) if gold else None
        got = rows.loc[item.example_id, "value"]
        assert (np.isnan(got) and want is None) or got == want
    listed = judging.all_judge_runs(con, QA_RUN).set_index("judge_run_id").loc[scorer]
    assert (listed["kind"], listed["source"], listed["status"]) == ("metric", "metric:exact_match", "complete")
    con.close()
    bleu = rescoring.rescore(store, WRITE_RUN, "bleu")
    con = connect(store)
    assert set(_rows(con, bleu)["criterion"]) == {"bleu:presupposition", "bleu:correction"}
    con.close()
    with pytest.raises(ValueError, match="exact_match scores qa runs; .* is a write run"):
        rescoring.rescore(store, WRITE_RUN, "exact_match")
    assert cli(["--store", str(store), "rescore", "--run", QA_RUN, "--metric", "f1"]) == 0
    assert "f1:answer" in capsys.readouterr().out


def test_a_judge_run_started_as_a_job_is_refused_before_anything_starts(lab, tmp_path, monkeypatch):
    """Issue 45, item 13 (the page's Start button calls this): a request that cannot be judged, or a role that may
    not judge, starts no process and writes no judge run."""
    import shutil

    from backend.identity.actor import Actor
    from backend.identity.permissions import Forbidden
    from backend.store.access import session

    store = tmp_path / "lab.duckdb"
    shutil.copy(lab["store"], store)
    monkeypatch.setenv("PLAB_DATA_DIR", str(lab["data"]))
    with pytest.raises(ValueError, match="scores qa runs"):
        job_actions.start_judge(store, JudgeRequest("tiny-gen", WRITE_RUN, "judge-qa-equivalence"), actor=LOCAL)
    with pytest.raises(ValueError, match="a judge must be a generator"):
        job_actions.start_judge(store, JudgeRequest("tiny-nli", WRITE_RUN, "judge-crepe-writing"), actor=LOCAL)
    viewer = Actor("vi@lab.example", "viewer", "sign-in")
    give_roles(store, viewer)
    with pytest.raises(Forbidden, match="that needs the analyst role"):
        job_actions.start_judge(store, JudgeRequest("tiny-gen", WRITE_RUN, "judge-crepe-writing"), actor=viewer)
    with session(store) as con:
        assert store_judgements.of_run(con).empty
    assert not (lab["data"] / "jobs").exists() or not list((lab["data"] / "jobs").glob("*judge*"))


def test_a_running_judge_shows_its_progress_after_a_reload_never_a_verdict(lab, tmp_path, monkeypatch, open_page):
    """Issue 54, item 3: while a judge ran, the Rate page said "This judge gave no usable score: none of its 0
    responses…", and a reload (a new session) lost the progress line, kept only in the page's session state. The judge
    here is a real `python -m backend judge` process, held before its first batch by an endpoint that does not answer
    yet (the hostile helper's lock held: a busy server, which a real one cannot be made to be on cue)."""
    import os
    import shutil
    import signal

    from backend.execution import jobs
    from backend.store.access import session
    from tests.helpers.data import QA_RUN
    from tests.helpers.hostile_endpoint import MODEL, hostile

    store, data = tmp_path / "lab.duckdb", tmp_path / "data"
    shutil.copy(lab["store"], store)
    shutil.copytree(lab["data"], data, symlinks=True)
    monkeypatch.setenv("PLAB_DATA_DIR", str(data))
    with hostile() as server, server.lock:  # every completion waits for the lock
        assert cli(["models", "add", "busy", "--base-url", server.url, "--model", MODEL]) == 0
        key = job_actions.start_judge(store, JudgeRequest("busy", QA_RUN, "judge-qa-equivalence"), actor=LOCAL)
        try:
            for _ in range(600):  # the process has stored its judge run (running) and asks for its first batch
                with session(store) as con:
                    state, stored = jobs.judge_progress(con, key), store_judgements.progress(con, key)
                if state["status"] == "running" and stored:
                    break
                time.sleep(0.1)
            at = open_page(store, "pages/rate.py", {"run": QA_RUN, "rater": "ann"})  # a fresh session: a reload
            assert not at.exception
            lines = [p.proto.text.replace("\\", "") for p in at.get("progress")]  # (Markdown's escapes)
            assert any(f"{key}: running — 0 of {state['total']} responses" in line for line in lines), lines
            said = " ".join(m.value for m in (*at.error, *at.warning, *at.info, *at.success))
            assert "gave no usable score" not in said and "still running" in said, said
        finally:
            os.killpg(jobs.read(key)["pid"], signal.SIGTERM)  # the process this test started (its own group)


def test_each_judgement_is_stored_and_counted_as_its_answer_comes_back(judged):
    """Issue 64, item 6: a judge run over 10 outputs showed "0 of 10 responses" until it ended. Each answer is now
    stored as it comes back, its starter's role asked before each write: the count the pages read grows by one
    at a time."""
    seen = []

    def allowed(con):
        seen.append(con.execute("SELECT count(*) FROM judgements").fetchone()[0])

    request = judging.JudgeRequest(NAME, judged["qa"], "judge-corrects-assumption", max_tokens=TOKENS)
    run = judging.judge(judged["store"], request, progress=False, allowed=allowed)
    total = len(_rows(judged["con"], run))
    assert total >= 2 and len(seen) == total and seen == list(range(seen[0], seen[0] + total))
