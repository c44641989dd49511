"""Read-only query functions over the store; each returns a pandas DataFrame. Pages call these."""
from __future__ import annotations

import json

import duckdb
import pandas as pd

from backend import contamination
from backend.datasets import DATASETS


def loaded_datasets(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per loaded dataset: title, source folder, when, licence, notes (a list), whether a user's, example count."""
    frame = con.execute("""
        SELECT d.dataset_id, d.title, d.source, d.loaded_at, d.license, d.citation, d.notes,
               coalesce(CAST(d.description->>'$.user' AS BOOLEAN), FALSE) AS user, count(e.example_id) AS examples
        FROM datasets d LEFT JOIN examples e USING (dataset_id)
        GROUP BY ALL ORDER BY d.dataset_id
    """).df()
    frame["notes"] = frame["notes"].map(lambda n: json.loads(n) if n else [])
    return frame


def origin(con: duckdb.DuckDBPyConnection, dataset_id: str) -> dict:
    """Where a dataset came from: its source, the SHA-256 of what was read, and for a generated set the
    line saying what it was generated from (the template or facts; its first note)."""
    row = con.execute("SELECT source, sha256, notes, coalesce(CAST(description->>'$.user' AS BOOLEAN), FALSE) "
                      "FROM datasets WHERE dataset_id = ?", [dataset_id]).fetchone()
    if row is None:
        return {}
    notes = json.loads(row[2]) if row[2] else []
    generated = next((n.splitlines()[0].rstrip(":") for n in notes if row[3] and n.startswith("generated from")), None)
    return {"source": row[0], "sha256": row[1], "generated": generated}


def split_label_counts(con: duckdb.DuckDBPyConnection, dataset_id: str | None = None) -> pd.DataFrame:
    """Examples per dataset, split and gold label (label NULL shown as '—')."""
    return con.execute("""
        SELECT dataset_id, split, coalesce(gold_label, '—') AS gold_label, count(*) AS n
        FROM examples WHERE $d IS NULL OR dataset_id = $d
        GROUP BY ALL ORDER BY ALL
    """, {"d": dataset_id}).df()


def split_label_table(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """One dataset's examples as a split × gold label table with 'all splits' totals (row and column)."""
    # pivot + sums: pandas' pivot_table(margins=True) took 35 ms a dataset for the same table
    table = split_label_counts(con, dataset_id).pivot(index="split", columns="gold_label", values="n")
    table = table.fillna(0).astype("int64")
    table["all splits"] = table.sum(axis=1)
    table.loc["all splits"] = table.sum(axis=0)
    return table


def table_counts(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Per dataset: pairs, crowd ratings, imported runs, predictions, passages, qrels."""
    # predictions are counted per run first (one scan, grouped by run), then summed per dataset: a
    # correlated count per dataset joined 10M predictions with runs once per dataset
    return con.execute("""
        WITH per_run AS (SELECT run_id, count(*) AS n FROM predictions GROUP BY run_id),
             per_dataset AS (SELECT r.dataset_id, sum(p.n) AS n FROM per_run p JOIN runs r USING (run_id) GROUP BY 1)
        SELECT d.dataset_id,
            (SELECT count(*) FROM pairs p WHERE p.dataset_id = d.dataset_id) AS pairs,
            (SELECT count(*) FROM ratings r WHERE r.dataset_id = d.dataset_id) AS ratings,
            (SELECT count(*) FROM runs r WHERE r.dataset_id = d.dataset_id) AS runs,
            coalesce(CAST(pd.n AS BIGINT), 0) AS predictions,
            (SELECT count(*) FROM passages p WHERE p.dataset_id = d.dataset_id) AS passages,
            (SELECT count(*) FROM qrels q WHERE q.dataset_id = d.dataset_id) AS qrels
        FROM datasets d LEFT JOIN per_dataset pd USING (dataset_id) ORDER BY d.dataset_id
    """).df()


def pair_counts(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return con.execute("SELECT dataset_id, kind, count(*) AS n FROM pairs GROUP BY ALL ORDER BY ALL").df()


def missing_datasets(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Known datasets that are not in the store, with how to add each."""
    loaded = {row[0] for row in con.execute("SELECT dataset_id FROM datasets").fetchall()}
    rows = [{"dataset_id": s.name, "title": s.title, "how_to_add": s.how_to_add}
            for s in DATASETS.values() if s.name not in loaded]
    return pd.DataFrame(rows, columns=["dataset_id", "title", "how_to_add"])


CLASSIFICATION_TASKS = ("nli", "detect")  # tasks whose runs predict labels (accuracy, confusion, bias)
SOURCE_NAMES = {"import": "paper-reported", "baseline": "baseline", "batch": "model run", "live": "live", "user": "your import"}  # runs.source, shown
FACETS = ["split", "gold_label", "trigger_type", "polarity", "adversarial", "answer_type", "question_type", "hop", "ambiguous"]


def examples_frame(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Every example of a dataset with its facet columns, indexed by example_id (store order)."""
    return con.execute(f"""
        SELECT example_id, input, hypothesis, gold_answers, {", ".join(FACETS)}
        FROM examples WHERE dataset_id = $d ORDER BY example_id
    """, {"d": dataset_id}).df().set_index("example_id")


def extra_columns(con: duckdb.DuckDBPyConnection, dataset_id: str, keys: tuple[str, ...]) -> pd.DataFrame:
    """Keys of examples.extra as text columns named 'extra.KEY', indexed by example_id (store order)."""
    if not keys:
        return pd.DataFrame()
    columns = ", ".join(f"json_extract_string(extra, $k{i}) AS c{i}" for i in range(len(keys)))
    frame = con.execute(f"SELECT example_id, {columns} FROM examples WHERE dataset_id = $d ORDER BY example_id",
                        {"d": dataset_id, **{f"k{i}": "$." + json.dumps(key) for i, key in enumerate(keys)}}).df()
    return frame.set_index("example_id").set_axis([f"extra.{key}" for key in keys], axis=1)


def crowd_votes(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Per example, the crowd's labels and numeric ratings as lists (NOPE: five of each)."""
    return con.execute("""
        SELECT example_id,
               list(label ORDER BY rater_id) FILTER (WHERE label IS NOT NULL) AS crowd_labels,
               list(value ORDER BY rater_id) FILTER (WHERE criterion = 'nope_likelihood') AS crowd_ratings
        FROM ratings WHERE dataset_id = $d AND source = 'crowd' AND criterion IN ('nope_label', 'nope_likelihood')
        GROUP BY example_id
    """, {"d": dataset_id}).df().set_index("example_id")


def pairs_frame(con: duckdb.DuckDBPyConnection, dataset_id: str, kind: str | None = None) -> pd.DataFrame:
    return con.execute("""
        SELECT pair_id, kind, example_a, example_b, role_a, role_b FROM pairs
        WHERE dataset_id = $d AND ($k IS NULL OR kind = $k) ORDER BY pair_id
    """, {"d": dataset_id, "k": kind}).df()


def runs_frame(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Complete runs of a dataset with their labels and training data pulled out of config, and why a
    run is contaminated ('' when it is not: `backend.contamination`)."""
    frame = con.execute("""
        SELECT run_id, task, model_id, source, seed, status, provenance, created_at,
               config->>'$.training_data' AS training_data,
               CAST(config->'$.labels' AS VARCHAR[]) AS labels,
               coalesce(CAST(config->>'$.in_paper_tables' AS BOOLEAN), FALSE) AS in_paper_tables
        FROM runs WHERE dataset_id = $d AND status = 'complete' ORDER BY run_id
    """, {"d": dataset_id}).df()
    flagged = contamination.flags(con, dataset_id)
    return frame.assign(contaminated=[flagged.get(r, "") for r in frame["run_id"]])


def predictions_frame(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pd.DataFrame:
    return con.execute("""
        SELECT run_id, example_id, label, probs, answer FROM predictions
        WHERE list_contains($runs, run_id) ORDER BY run_id, example_id
    """, {"runs": run_ids}).df()


def passage_texts(con: duckdb.DuckDBPyConnection, corpus_id: str = "wiki") -> dict[str, str]:
    """doc_id → text for a corpus (12.9k passages: small enough to hold in memory)."""
    return dict(con.execute("SELECT doc_id, text FROM passages WHERE corpus_id = $c", {"c": corpus_id}).fetchall())


def run_inputs(con: duckdb.DuckDBPyConnection, dataset_id: str, split: str | None = None,
               only_label: str | None = None) -> pd.DataFrame:
    """Examples to run a model on: id, input, hypothesis, gold label and answers (optionally one split / gold label)."""
    return con.execute("""
        SELECT example_id, input, hypothesis, gold_label, gold_answers FROM examples
        WHERE dataset_id = $d AND ($s IS NULL OR split = $s) AND ($l IS NULL OR gold_label = $l)
        ORDER BY example_id
    """, {"d": dataset_id, "s": split, "l": only_label}).df()


def run_template_sha(con: duckdb.DuckDBPyConnection, run_id: str) -> str | None:
    """The hash of the prompt template a stored run was made with (None: not prompted, or no such run)."""
    row = con.execute("SELECT config->>'$.prompt.template_sha256' FROM runs WHERE run_id = $r", {"r": run_id}).fetchone()
    return row[0] if row else None


def run_status(con: duckdb.DuckDBPyConnection, run_id: str) -> dict | None:
    row = con.execute("""SELECT r.status, r.seconds, count(p.example_id) FROM runs r
                         LEFT JOIN predictions p USING (run_id) WHERE r.run_id = $r GROUP BY ALL""",
                      {"r": run_id}).fetchone()
    return None if row is None else {"status": row[0], "seconds": row[1], "predictions": row[2]}
