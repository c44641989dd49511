"""Re-scoring a stored run by a metric, without re-running it: the scores attach to the run as a scorer
run of kind 'metric' (a `judge_runs` row, source `metric:<name>`, with the package versions that
computed it) and one `judgements` row per item and part, so the Example page and `judges` show them
beside the judges'. A second re-score with the same metric replaces the first.

Metrics, per run task: QA answers against the gold answers — SQuAD exact match (`metrics.squad`); QA
answers or written presuppositions and corrections against their gold — F1 (SQuAD's token F1, which is
CREPE's unigram F1) and sentence BLEU (sacreBLEU, `metrics.generation`). An item without gold gets
no score (parse 'no-gold'), not a zero.
"""

from __future__ import annotations

import importlib.metadata
from datetime import UTC, datetime

import numpy as np

from backend.execution.runs import provenance
from backend.metrics import generation, squad
from backend.store import judgements as store_judgements
from backend.store import ratings as store_ratings
from backend.store import runs as store_runs
from backend.store.access import StoreRef, opener


def _squad(score):
    return lambda outputs, golds: np.array([score(o, g) if g else np.nan for o, g in zip(outputs, golds)], dtype=float)


METRICS = {  # name → (run tasks, scorer(outputs, golds) → per-item scores, the package that computes it)
    "exact_match": (("qa",), _squad(squad.exact_match), None),
    "f1": (("qa", "write"), generation.unigram_f1, None),  # SQuAD token F1 = CREPE's unigram F1
    "bleu": (("qa", "write"), generation.sentence_bleu, "sacrebleu"),
}
PARTS = {"qa": [("answer", "gold_answers")], "write": [("presupposition", "gold_presuppositions"),
                                                         ("correction", "gold_corrections")]}  # fmt: skip


def rescore(store: StoreRef, run_id: str, metric: str) -> str:
    """Score the run's stored outputs by `metric` and attach the scores to it; returns the scorer run's id."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}")
    tasks, scorer, package = METRICS[metric]
    with opener(store)() as con:
        dataset_id, task = store_runs.field(con, run_id, "dataset_id"), store_runs.field(con, run_id, "task")
        if dataset_id is None:
            raise ValueError(f"no run {run_id!r} in the store; `python -m backend status` lists the runs")
        if task not in tasks:
            raise ValueError(f"{metric} scores {', '.join(tasks)} runs; {run_id} is a {task} run")
        items = store_ratings.targets(con, run_id)
        version = importlib.metadata.version(package) if package else provenance()["code_version"]
        scorer_id = f"{run_id}//metric:{metric}"
        now = datetime.now(UTC).replace(tzinfo=None)
        rows = []
        for part, gold in PARTS[task]:
            outputs = [o if isinstance(o, str) else "" for o in items[part]]
            golds = [list(g) if g is not None else [] for g in items[gold]]
            scores = scorer(outputs, golds)
            rows += [
                _judgement(scorer_id, e, f"{metric}:{part}", o, v, now)
                for e, o, v in zip(items["example_id"], outputs, scores)
            ]
        row = {
            "judge_run_id": scorer_id,
            "run_id": run_id,
            "dataset_id": dataset_id,
            "model_id": "metric",
            "rubric": f"{metric}@{version}",
            "rubric_sha256": "",
            "kind": "metric",
            "source": f"metric:{metric}",
            "samples": 1,
            "config": {"metric": metric, "package": package, "version": version, **provenance()},
        }
        store_judgements.replace(con, row, rows)
    return scorer_id


def _judgement(scorer_id: str, example_id: str, criterion: str, output: str, value: float, now) -> dict:
    scored = not np.isnan(value)
    return {
        "judge_run_id": scorer_id,
        "example_id": example_id,
        "criterion": criterion,
        "sample": 0,
        "position": "",
        "value": float(value) if scored else None,
        "parse": "ok" if scored else "no-gold",
        "response": output,
        "judged_at": now,
    }
