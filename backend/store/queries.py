"""Read-only query functions over the store; each returns a pandas DataFrame. Pages call these."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa


def loaded_datasets(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per loaded dataset: title, source folder, when, licence, notes (a list), what its loader changed in
    the published text (`normalised`), whether a user's, example count."""
    frame = con.execute("""
        SELECT d.dataset_id, d.title, d.source, d.loaded_at, d.license, d.citation, d.notes,
               coalesce(d.description->>'$.normalised', '') AS normalised,
               coalesce(CAST(d.description->>'$.user' AS BOOLEAN), FALSE) AS user, count(e.example_id) AS examples
        FROM datasets d LEFT JOIN examples e USING (dataset_id)
        GROUP BY ALL ORDER BY d.dataset_id
    """).df()
    frame["notes"] = frame["notes"].map(lambda n: json.loads(n) if n else [])
    return frame


def origin(con: duckdb.DuckDBPyConnection, dataset_id: str) -> dict:
    """Where a dataset came from: its source, the SHA-256 of what was read, and for a generated set the
    line saying what it was generated from (the template or facts; its first note)."""
    row = con.execute(
        "SELECT source, sha256, notes, coalesce(CAST(description->>'$.user' AS BOOLEAN), FALSE) "
        "FROM datasets WHERE dataset_id = ?",
        [dataset_id],
    ).fetchone()
    if row is None:
        return {}
    notes = json.loads(row[2]) if row[2] else []
    generated = next((n.splitlines()[0].rstrip(":") for n in notes if row[3] and n.startswith("generated from")), None)
    return {"source": row[0], "sha256": row[1], "generated": generated}


def split_label_counts(con: duckdb.DuckDBPyConnection, dataset_id: str | None = None) -> pd.DataFrame:
    """Examples per dataset, split and gold label (label NULL shown as '—')."""
    return con.execute(
        """
        SELECT dataset_id, split, coalesce(gold_label, '—') AS gold_label, count(*) AS n
        FROM examples WHERE $d IS NULL OR dataset_id = $d
        GROUP BY ALL ORDER BY ALL
    """,
        {"d": dataset_id},
    ).df()


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


def dataset_ids(con: duckdb.DuckDBPyConnection, with_examples: bool = False) -> list[str]:
    """The stored datasets' ids, sorted (only those with examples, when asked)."""
    table = "examples" if with_examples else "datasets"
    return [r[0] for r in con.execute(f"SELECT DISTINCT dataset_id FROM {table} ORDER BY 1").fetchall()]


def dataset_sha256(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str | None:
    """The SHA-256 of the dataset's files as ingested (None: no such dataset)."""
    row = con.execute("SELECT sha256 FROM datasets WHERE dataset_id = $d", {"d": dataset_id}).fetchone()
    return row[0] if row else None


def dataset_description(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str | None:
    """The description JSON stored with a dataset (None: no such dataset, or stored before descriptions)."""
    row = con.execute("SELECT description FROM datasets WHERE dataset_id = $d", {"d": dataset_id}).fetchone()
    return row[0] if row else None


SOURCE_NAMES = {
    "import": "paper-reported",
    "baseline": "baseline",
    "batch": "model run",
    "live": "live",
    "user": "your import",
}  # runs.source, shown
FACETS = [
    "split",
    "gold_label",
    "trigger_type",
    "polarity",
    "adversarial",
    "answer_type",
    "question_type",
    "hop",
    "ambiguous",
]


def examples_frame(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Every example of a dataset with its facet columns, indexed by example_id (store order)."""
    return (
        con.execute(
            f"""
        SELECT example_id, input, hypothesis, gold_answers, {", ".join(FACETS)}
        FROM examples WHERE dataset_id = $d ORDER BY example_id
    """,
            {"d": dataset_id},
        )
        .df()
        .set_index("example_id")
    )


def extra_columns(con: duckdb.DuckDBPyConnection, dataset_id: str, keys: tuple[str, ...]) -> pd.DataFrame:
    """Keys of examples.extra as text columns named 'extra.KEY', indexed by example_id (store order)."""
    if not keys:
        return pd.DataFrame()
    columns = ", ".join(f"json_extract_string(extra, $k{i}) AS c{i}" for i in range(len(keys)))
    frame = con.execute(
        f"SELECT example_id, {columns} FROM examples WHERE dataset_id = $d ORDER BY example_id",
        {"d": dataset_id, **{f"k{i}": "$." + json.dumps(key) for i, key in enumerate(keys)}},
    ).df()
    return frame.set_index("example_id").set_axis([f"extra.{key}" for key in keys], axis=1)


def crowd_votes(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Per example, the crowd's labels and numeric ratings as lists (NOPE: five of each)."""
    return (
        con.execute(
            """
        SELECT example_id,
               list(label ORDER BY rater_id) FILTER (WHERE label IS NOT NULL) AS crowd_labels,
               list(value ORDER BY rater_id) FILTER (WHERE criterion = 'nope_likelihood') AS crowd_ratings
        FROM ratings WHERE dataset_id = $d AND source = 'crowd' AND criterion IN ('nope_label', 'nope_likelihood')
        GROUP BY example_id
    """,
            {"d": dataset_id},
        )
        .df()
        .set_index("example_id")
    )


def pairs_frame(con: duckdb.DuckDBPyConnection, dataset_id: str, kind: str | None = None) -> pd.DataFrame:
    return con.execute(
        """
        SELECT pair_id, kind, example_a, example_b, role_a, role_b FROM pairs
        WHERE dataset_id = $d AND ($k IS NULL OR kind = $k) ORDER BY pair_id
    """,
        {"d": dataset_id, "k": kind},
    ).df()


def predictions_frame(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pd.DataFrame:
    return con.execute(
        """
        SELECT run_id, example_id, label, probs, answer FROM predictions
        WHERE list_contains($runs, run_id) ORDER BY run_id, example_id
    """,
        {"runs": run_ids},
    ).df()


def passage_texts(con: duckdb.DuckDBPyConnection, corpus_id: str = "wiki") -> dict[str, str]:
    """doc_id → text for a corpus (12.9k passages: small enough to hold in memory)."""
    return dict(con.execute("SELECT doc_id, text FROM passages WHERE corpus_id = $c", {"c": corpus_id}).fetchall())


def run_inputs(
    con: duckdb.DuckDBPyConnection, dataset_id: str, split: str | None = None, only_label: str | None = None
) -> pd.DataFrame:
    """Examples to run a model on: id, input, hypothesis, gold label and answers (optionally one split / gold label)."""
    return con.execute(
        """
        SELECT example_id, input, hypothesis, gold_label, gold_answers FROM examples
        WHERE dataset_id = $d AND ($s IS NULL OR split = $s) AND ($l IS NULL OR gold_label = $l)
        ORDER BY example_id
    """,
        {"d": dataset_id, "s": split, "l": only_label},
    ).df()


def run_training(con: duckdb.DuckDBPyConnection, dataset_id: str) -> list[tuple]:
    """(run id, model id, the split it predicted or None, its config's `trained_on` JSON or None) per run of
    a dataset."""
    return con.execute(
        """
        SELECT run_id, model_id, config->>'$.split' AS split, config->'$.trained_on' AS trained_on
        FROM runs WHERE dataset_id = $d
    """,
        {"d": dataset_id},
    ).fetchall()


def run_template_sha(con: duckdb.DuckDBPyConnection, run_id: str) -> str | None:
    """The hash of the prompt template a stored run was made with (None: not prompted, or no such run)."""
    row = con.execute(
        "SELECT config->>'$.prompt.template_sha256' FROM runs WHERE run_id = $r", {"r": run_id}
    ).fetchone()
    return row[0] if row else None


def dataset_exists(con: duckdb.DuckDBPyConnection, dataset_id: str) -> bool:
    return con.execute("SELECT 1 FROM datasets WHERE dataset_id = $d", {"d": dataset_id}).fetchone() is not None


def example_count(con: duckdb.DuckDBPyConnection, dataset_id: str) -> int:
    return con.execute("SELECT count(*) FROM examples WHERE dataset_id = $d", {"d": dataset_id}).fetchone()[0]


def examples_to_match(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """example_id, split, input and hypothesis of every example (what predictions are matched against)."""
    return con.execute(
        "SELECT example_id, split, input, hypothesis FROM examples WHERE dataset_id = $d", {"d": dataset_id}
    ).df()


def extra_json(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """example_id and `extra` (every field without a column of its own, as JSON text)."""
    return con.execute("SELECT example_id, extra FROM examples WHERE dataset_id = $d", {"d": dataset_id}).df()


def probs_of(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """example_id and the probabilities (in the run's label order) of every prediction of the run."""
    return con.execute("SELECT example_id, probs FROM predictions WHERE run_id = $r", {"r": run_id}).df()


def predicted_ids(con: duckdb.DuckDBPyConnection, run_id: str) -> set[str]:
    """The example ids a run has stored predictions for."""
    return {r[0] for r in con.execute("SELECT example_id FROM predictions WHERE run_id = ?", [run_id]).fetchall()}


def live_answers(con: duckdb.DuckDBPyConnection, limit: int) -> pd.DataFrame:
    """The newest live answers: when asked, run, model, task, input, hypothesis, label, answer, latency, error."""
    return con.execute(
        """
        SELECT p.text->>'$.asked_at' AS asked_at, r.run_id, r.model_id, r.task,
               coalesce(p.text->>'$.input.question', p.text->>'$.input.premise') AS input,
               p.text->>'$.input.hypothesis' AS hypothesis, p.label, p.answer, p.latency_ms, p.error
        FROM predictions p JOIN runs r USING (run_id)
        WHERE r.source = 'live' ORDER BY asked_at DESC NULLS LAST, p.run_id LIMIT $n
    """,
        {"n": limit},
    ).df()


def projection_rows(
    con: duckdb.DuckDBPyConnection, dataset_id: str, trigger: str, operator: str, where: dict
) -> pd.DataFrame:
    """example_id, trigger, raw_operator (as text), gold_label, input, hypothesis of the examples whose fields
    equal `where`'s values; each field an examples column (`FACETS`) or a key of `extra`."""
    params: dict = {"d": dataset_id}

    def column(name: str) -> str:
        if name in FACETS:
            return f"e.{name}"
        params[f"k{len(params)}"] = "$." + json.dumps(name)
        return f"json_extract_string(e.extra, ${list(params)[-1]})"

    conditions = []
    for key, value in where.items():
        field = column(key)
        params[f"v{len(params)}"] = str(value).lower() if isinstance(value, bool) else str(value)
        conditions.append(f"CAST({field} AS VARCHAR) = ${list(params)[-1]}")
    return con.execute(
        f"""
        SELECT e.example_id, CAST({column(trigger)} AS VARCHAR) AS trigger,
               CAST({column(operator)} AS VARCHAR) AS raw_operator, e.gold_label, e.input, e.hypothesis
        FROM examples e WHERE e.dataset_id = $d AND {" AND ".join(conditions) or "TRUE"} ORDER BY e.example_id
    """,
        params,
    ).df()


def crowd_survival(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    criterion: str,
    label: str | None,
    least: float | None,
    raters: list[str] | None = None,
) -> pd.DataFrame:
    """Per example, the share of its crowd judgements on `criterion` that equal `label` (or, without a label,
    reach `least`): example_id, survives; only `raters`' judgements when given (a study's analysed participants)."""
    return con.execute(
        """
        SELECT example_id, avg(CASE WHEN $label IS NOT NULL THEN CAST(label = $label AS DOUBLE)
                                    ELSE CAST(value >= $least AS DOUBLE) END) AS survives
        FROM ratings WHERE dataset_id = $d AND source = 'crowd' AND criterion = $c
                           AND ($every OR list_contains($raters, rater_id))
        GROUP BY example_id
    """,
        {"d": dataset_id, "c": criterion, "label": label, "least": least}
        | {"every": raters is None, "raters": list(raters or [])},
    ).df()


def crowd_label_counts(con: duckdb.DuckDBPyConnection, dataset_id: str, criterion: str) -> pd.DataFrame:
    """example_id, label, n: how many crowd judgements on `criterion` gave each label to each example."""
    return con.execute(
        """
        SELECT example_id, label, count(*) AS n FROM ratings
        WHERE dataset_id = $d AND source = 'crowd' AND criterion = $c AND label IS NOT NULL GROUP BY ALL ORDER BY ALL
    """,
        {"d": dataset_id, "c": criterion},
    ).df()


def positive_share(con: duckdb.DuckDBPyConnection, dataset_id: str, run_ids: list[str], positive: str) -> pd.DataFrame:
    """Per example, the share of the runs that labelled it `positive` (`said`) and how many runs labelled it."""
    return con.execute(
        """
        SELECT p.example_id, avg(CAST(p.label = $pos AS DOUBLE)) AS said, count(*) AS runs
        FROM predictions p JOIN runs r USING (run_id)
        WHERE r.dataset_id = $d AND list_contains($runs, p.run_id) AND p.label IS NOT NULL GROUP BY p.example_id
    """,
        {"d": dataset_id, "runs": run_ids, "pos": positive},
    ).df()


def json_rows(frame: pd.DataFrame) -> np.ndarray | None:
    """Each row of an Arrow-typable frame as a JSON object (column → value, NULL for missing), built by an
    in-memory DuckDB (not the store): a million rows in seconds. None when the frame has mixed-type columns."""
    try:
        arrow = pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    quote = lambda name: '"' + str(name).replace('"', '""') + '"'  # noqa: E731
    fields = ", ".join(f"{quote(c)} := {quote(c)}" for c in frame.columns)
    with duckdb.connect() as con:
        con.register("rest", arrow)
        return (
            con.execute(f"SELECT to_json(struct_pack({fields}))::VARCHAR FROM rest")
            .df()
            .iloc[:, 0]
            .to_numpy(dtype=object)
        )


def examples_to_export(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Every example of a dataset with its text, gold and facets, in split and id order (what an export writes)."""
    return con.execute(
        f"""
        SELECT example_id, input, context, hypothesis, gold_answers, {", ".join(FACETS)}
        FROM examples WHERE dataset_id = $d ORDER BY split, example_id
    """,
        {"d": dataset_id},
    ).df()


def crowd_values(
    con: duckdb.DuckDBPyConnection, dataset_id: str, criterion: str, keys: tuple[str, ...]
) -> pd.DataFrame:
    """Every crowd rating on `criterion`: rater, item (example id), value, the item's split and `extra` keys."""
    extra, params = _extra_columns(keys)
    params |= {"d": dataset_id, "c": criterion}
    return con.execute(
        f"""
        SELECT r.rater_id AS rater, r.example_id AS item, r.value, e.split{extra}
        FROM ratings r JOIN examples e USING (dataset_id, example_id)
        WHERE r.dataset_id = $d AND r.source = 'crowd' AND r.criterion = $c ORDER BY r.example_id, r.rater_id
    """,
        params,
    ).df()


def pilot_values(con: duckdb.DuckDBPyConnection, study_id: str, keys: tuple[str, ...]) -> pd.DataFrame:
    """A study's pilot participants' answers to target trials, in `crowd_values`' columns (pilot answers make no
    crowd rating: they are read from here, and only for what a researcher chooses them for)."""
    extra, params = _extra_columns(keys)
    params |= {"s": study_id}
    return con.execute(
        f"""
        SELECT r.participant_id AS rater, r.trial AS item, r.value, e.split{extra}
        FROM study_responses r JOIN examples e ON e.dataset_id = r.study_id AND e.example_id = r.trial
        WHERE r.study_id = $s AND r.pilot AND r.kind = 'target' ORDER BY r.trial, r.participant_id
    """,
        params,
    ).df()


def _extra_columns(keys: tuple[str, ...]) -> tuple[str, dict]:
    """The select list's `extra` keys of the examples `e`, one column each, and their parameters."""
    extra = "".join(f', json_extract_string(e.extra, $k{i}) AS "{key}"' for i, key in enumerate(keys))
    return extra, {f"k{i}": "$." + json.dumps(key) for i, key in enumerate(keys)}
