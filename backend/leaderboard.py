"""The overview's table: one headline metric per dataset × run, with its split, n and 95% CI.

Each dataset's description (`backend.descriptions`) names its headline splits and metric; built in:

| dataset | task | headline |
|---|---|---|
| NOPE | nli | accuracy on main (and on adversarial) |
| FalseQA, CREPE, Syn-(QA)² | detect | macro-F1 (FP/N) on the evaluation split (test; CREPE dev when loaded) |
| IfQA | qa | exact match (SQuAD normalisation, best over answers) on S-dev |
| IfQA | retrieve | Recall@20 of the gold passage on S-dev |

A user dataset is scored the same way on the headline splits it declared. Paper-reported runs
(source `import`) and your imports (source `user`) are marked; baselines sit beside models.
"""
from __future__ import annotations

import json

import duckdb
import numpy as np
import pandas as pd

from backend import contamination, descriptions
from backend.descriptions import Description
from backend.metrics import classification, retrieval, squad
from backend.metrics.bootstrap import Estimate, mean
from backend.store import queries



def _predictions(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return con.execute("""
        SELECT r.dataset_id, r.run_id, r.model_id, r.source, r.task, CAST(r.config->'$.labels' AS VARCHAR[]) AS labels,
               e.split, e.gold_label, e.gold_answers, p.label, p.answer, p.text
        FROM runs r JOIN predictions p USING (run_id)
        JOIN examples e ON e.dataset_id = r.dataset_id AND e.example_id = p.example_id
        WHERE r.status = 'complete'
        ORDER BY r.run_id, p.example_id  -- one item order: the bootstrap intervals do not depend on storage order
    """).df()


def _classification(group: pd.DataFrame, description: Description) -> tuple[str, Estimate]:
    if description.headline_metric == "accuracy":
        return "accuracy", classification.accuracy(group["gold_label"], group["label"])
    return "macro-F1", classification.macro_f1(group["gold_label"], group["label"], list(group["labels"].iloc[0]))


def _qa(group: pd.DataFrame, description: Description) -> tuple[str, Estimate]:
    scores = [squad.exact_match(a or "", list(g)) for a, g in zip(group["answer"], group["gold_answers"])]
    return "exact match", mean(np.array(scores))


def _retrieval(group: pd.DataFrame, description: Description) -> tuple[str, Estimate]:
    """Recall@20 over the questions that have a gold passage (as the Retrieval page and `index` count them)."""
    texts = [json.loads(t) if t else {} for t in group["text"]]
    ranks = [t.get("first_gold_rank") for t in texts if t.get("n_gold", 1) > 0]
    return "Recall@20", retrieval.recall_at_k(ranks, 20)


def _bias(group: pd.DataFrame) -> str:
    """'N for 99.6% (gold 50.0%)' when the run gives one label to almost everything, else ''."""
    scored = group[group["gold_label"].notna()]
    skew = classification.dominant_label(classification.response_bias(scored["gold_label"], scored["label"],
                                                                      list(group["labels"].iloc[0])))
    return f"{skew['label']} for {skew['predicted_share']:.1%} (gold {skew['gold_share']:.1%})" if skew else ""


METRICS = {"nli": _classification, "detect": _classification, "qa": _qa, "retrieve": _retrieval}


def headline(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """dataset, run, model, kind (paper-reported | baseline | model run), metric, split, value, low, high, n,
    bias (for a classifier that gives one label to almost every item, which and how often) and
    contaminated (why, when the run's model was trained on this dataset: `backend.contamination`)."""
    frame, described = _predictions(con), descriptions.described(con)
    flagged = {d: contamination.flags(con, d) for d in frame["dataset_id"].unique()}
    rows = []
    for (dataset, run_id, split), group in frame.groupby(["dataset_id", "run_id", "split"], sort=True):
        task, description = group["task"].iloc[0], described.get(dataset)
        if description is None or split not in description.headline_splits or task not in METRICS:
            continue
        metric, estimate = METRICS[task](group, description)
        rows.append({"dataset": dataset, "run": run_id, "model": group["model_id"].iloc[0],
                     "kind": queries.SOURCE_NAMES.get(group["source"].iloc[0], group["source"].iloc[0]), "metric": metric,
                     "split": split, **estimate.as_dict(), "bias": _bias(group) if task in queries.CLASSIFICATION_TASKS else "",
                     "contaminated": flagged[dataset].get(run_id, "")})
    columns = ["dataset", "run", "model", "kind", "metric", "split", "value", "low", "high", "n", "bias", "contaminated"]
    return pd.DataFrame(rows, columns=columns).sort_values(["dataset", "split", "value"], ascending=[True, True, False])
