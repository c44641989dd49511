"""Explore: slice a dataset by facets, runs, correctness and text; look at one example in full.

Every function takes the store connection first (pages call them through `ui.resources.query`).
A slice is ONE parameterised DuckDB query: the dataset's examples, joined with run A's predictions
(an inner join: with a run A, the slice holds the items that run predicted), left-joined with run
B's, then filtered by facets, predicted label, run A's correctness and a case-insensitive search.
Joins use `example_key` (an integer derived from the ids: 2-4× faster than joining 1M string ids).
Filter values are query parameters; column names and sort orders come from whitelists.
"""
from __future__ import annotations

import json
import threading
from contextlib import contextmanager

import duckdb
import numpy as np
import pandas as pd
from threadpoolctl import ThreadpoolController

from backend import contamination
from backend.descriptions import UnknownDataset, describe
from backend.metrics import classification
from backend.metrics.bootstrap import LARGE_N, paired_difference
from backend.metrics.pairs import mcnemar
from backend.store.queries import CLASSIFICATION_TASKS, FACETS

_BLAS = ThreadpoolController()  # found once, so limiting per call costs nothing
_BLAS_LOCK = threading.Lock()

Filters = tuple[tuple[str, tuple], ...]
RUN_ORDER = f"ORDER BY r.task NOT IN {CLASSIFICATION_TASKS}, r.source = 'baseline', r.run_id"  # classifiers, baselines last
BOOLEAN_FACETS = {"adversarial", "ambiguous"}
EXTRA = "extra."  # facet name prefix for a key of examples.extra (a user dataset's own column)
RUN_FILTERS = ("label_a", "label_b", "correct_b")  # correct_b: "true" / "false" (run B right / wrong)
CORRECTNESS = ("all", "correct", "incorrect")
LABEL_ORDER = {"E": 0, "N": 1, "C": 2, "FP": 3}
SORTS = {  # name → ORDER BY clause (never user text)
    "example_id": "example_id",
    "gold_label": "gold_label, example_id",
    "label_a": "label_a, example_id",
    "p_a_desc": "p_a DESC NULLS LAST, example_id",
    "p_a_asc": "p_a ASC NULLS LAST, example_id",
    "disagree_first": "label_a IS NOT DISTINCT FROM label_b, example_id",
    "split": "split, example_id",
}
COLUMNS = ["example_id", "split", "gold_label", "label_a", "p_a", "correct_a", "label_b", "p_b", "correct_b",
           "input", "context", "hypothesis", "gold_answers", "answer_a", "answer_b",
           "trigger_type", "polarity", "adversarial", "answer_type", "question_type", "hop", "ambiguous"]
_IN_KEYS = "AND {alias}.example_key IN (SELECT unnest($keys))"
_NO_RUN = "SELECT NULL::UBIGINT AS example_key, NULL::VARCHAR AS label, NULL::VARCHAR AS answer, NULL::DOUBLE AS prob WHERE FALSE"


def url_value(facet: str, value) -> str:
    """A facet value as Explore's URL writes it (its multiselect shows booleans as yes / no)."""
    if facet in BOOLEAN_FACETS:
        return {"true": "yes", "false": "no"}.get(str(value).lower(), str(value))
    return str(value)


def facet_values(con: duckdb.DuckDBPyConnection, dataset_id: str) -> dict[str, list]:
    """Facet → its sorted distinct non-null values, for the facets the dataset uses: the typed columns,
    then the `extra` keys its description names (a user dataset's categorical columns), as 'extra.KEY'."""
    lists = ", ".join(f"list_sort(list(DISTINCT {f}) FILTER (WHERE {f} IS NOT NULL)) AS {f}" for f in FACETS)
    row = con.execute(f"SELECT {lists} FROM examples WHERE dataset_id = $d", {"d": dataset_id}).fetchall()[0]
    values = {facet: list(v) for facet, v in zip(FACETS, row) if v}
    for key in _extra_facets(con, dataset_id):
        found = con.execute("SELECT list_sort(list(DISTINCT v) FILTER (WHERE v IS NOT NULL)) FROM "
                            "(SELECT json_extract_string(extra, $p) AS v FROM examples WHERE dataset_id = $d)",
                            {"p": _json_path(key), "d": dataset_id}).fetchall()[0][0]
        if found:
            values[EXTRA + key] = list(found)
    if "gold_label" in values:
        values["gold_label"].sort(key=lambda label: (LABEL_ORDER.get(label, 9), label))
    return values


def _extra_facets(con: duckdb.DuckDBPyConnection, dataset_id: str) -> tuple[str, ...]:
    try:
        return describe(con, dataset_id).facets
    except UnknownDataset:
        return ()


def _json_path(key: str) -> str:
    """'$."key"' for json_extract (a bound parameter, so any key is safe)."""
    return "$." + json.dumps(key)


def runs_for(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """Complete runs of the dataset that stored predictions: classification runs first (baselines
    last among them), then QA, writing and retrieval runs; with each run's label order ([] if none) and
    why it is contaminated ('' if not)."""
    frame = con.execute(f"""
        SELECT r.run_id, r.model_id, r.source, r.task,
               CAST(r.config->'$.labels' AS VARCHAR[]) AS labels
        FROM runs r
        WHERE r.dataset_id = $d AND r.status = 'complete'
          AND EXISTS (SELECT 1 FROM predictions p WHERE p.run_id = r.run_id)
        {RUN_ORDER}
    """, {"d": dataset_id}).df()
    frame["labels"] = frame["labels"].map(lambda v: list(v) if isinstance(v, (list, np.ndarray)) else [])
    flagged = contamination.flags(con, dataset_id)
    return frame.assign(contaminated=[flagged.get(r, "") for r in frame["run_id"]])


def _run_cte(param: str | None, keys: bool) -> str:
    """Predictions of one run with the probability of the predicted label (probs follow config.labels);
    with `keys`, only those of the examples whose keys are in $keys."""
    if param is None:
        return _NO_RUN
    labels = f"(SELECT CAST(config->'$.labels' AS VARCHAR[]) FROM runs WHERE run_id = ${param})"  # read once, not per row
    return f"""SELECT p.example_key, p.label, p.answer, p.probs[list_position({labels}, p.label)] AS prob
               FROM predictions p WHERE p.run_id = ${param} {_IN_KEYS.format(alias="p") if keys else ""}"""


def _correct(alias: str, present: bool) -> str:
    """1/0 correctness against the gold label; NULL without a run or a gold label (no label = wrong)."""
    if not present:
        return "NULL::BOOLEAN"
    return f"CASE WHEN e.gold_label IS NULL THEN NULL ELSE coalesce({alias}.label = e.gold_label, FALSE) END"


def _conditions(filters: Filters, search: str, correctness: str, has_a: bool, params: dict) -> list[str]:
    """WHERE conditions over the joined slice `s`; values go into `params`."""
    where = []
    for i, (column, values) in enumerate(filters):
        extra = column.startswith(EXTRA) and len(column) > len(EXTRA)
        if column not in FACETS and column not in RUN_FILTERS and not extra:
            raise ValueError(f"unknown filter {column!r}: allowed {', '.join(FACETS + list(RUN_FILTERS))} or {EXTRA}KEY")
        if not values:
            continue
        lower = column in BOOLEAN_FACETS
        params[f"f{i}"] = [str(v).lower() if lower else str(v) for v in values]
        if extra:
            params[f"p{i}"] = _json_path(column[len(EXTRA):])
            where.append(f"list_contains($f{i}, json_extract_string(extra, $p{i}))")
        else:
            where.append(f"list_contains($f{i}, CAST({column} AS VARCHAR))")
    if search.strip():
        escaped = search.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        params["q"] = f"%{escaped}%"
        where.append("(" + " OR ".join(f"{c} ILIKE $q ESCAPE '\\'" for c in ("input", "hypothesis", "context")) + ")")
    if correctness not in CORRECTNESS:
        raise ValueError(f"correctness {correctness!r}: allowed {', '.join(CORRECTNESS)}")
    if correctness != "all" and not has_a:
        raise ValueError("filtering by correctness needs a run A")
    if correctness != "all":
        where.append("correct_a" if correctness == "correct" else "NOT correct_a")
    return where or ["TRUE"]


def _slice_sql(dataset_id: str, filters: Filters, run_a: str | None, run_b: str | None,
               search: str, correctness: str, keys: list[int] | None = None) -> tuple[str, dict]:
    """`WITH … SELECT {select} FROM s WHERE …` for one slice (of only the examples with `keys`, if given),
    and its parameters."""
    params: dict = {"d": dataset_id}
    if keys is not None:
        params["keys"] = keys
    for name, run in (("run_a", run_a), ("run_b", run_b)):
        if run:
            params[name] = run
    where = _conditions(tuple(filters), search or "", correctness, bool(run_a), params)
    sql = f"""
        WITH a AS ({_run_cte("run_a" if run_a else None, keys is not None)}),
             b AS ({_run_cte("run_b" if run_b else None, keys is not None)}),
        s AS (
            SELECT e.*, a.label AS label_a, a.prob AS p_a, a.answer AS answer_a, {_correct("a", bool(run_a))} AS correct_a,
                   b.label AS label_b, b.prob AS p_b, b.answer AS answer_b, {_correct("b", bool(run_b))} AS correct_b
            FROM examples e {"JOIN" if run_a else "LEFT JOIN"} a ON a.example_key = e.example_key
            LEFT JOIN b ON b.example_key = e.example_key
            WHERE e.dataset_id = $d {_IN_KEYS.format(alias="e") if keys is not None else ""})
        SELECT {{select}} FROM s WHERE {" AND ".join(where)}"""
    return sql, params


def slice_frame(con: duckdb.DuckDBPyConnection, dataset_id: str, filters: Filters = (), run_a: str | None = None,
                run_b: str | None = None, search: str = "", correctness: str = "all", sort: str = "example_id",
                limit: int | None = 500) -> pd.DataFrame:
    """The slice's rows (at most `limit`; None = all), sorted by a whitelisted order (`SORTS`).

    A page is found in two steps: the keys of its rows (sorting the slice needs only the sort
    columns), then its columns for those keys: reading every column of a 1M-row slice to keep 500
    rows cost 3× more."""
    if sort not in SORTS:
        raise ValueError(f"sort {sort!r}: allowed {', '.join(SORTS)}")
    args = (dataset_id, filters, run_a, run_b, search, correctness)
    keys = None
    if limit is not None:
        sql, params = _slice_sql(*args)
        page = f"{sql.format(select='example_key')} ORDER BY {SORTS[sort]} LIMIT $limit"
        keys = [row[0] for row in con.execute(page, {**params, "limit": int(limit)}).fetchall()]
    sql, params = _slice_sql(*args, keys=keys)
    return con.execute(f"{sql.format(select=', '.join(COLUMNS))} ORDER BY {SORTS[sort]}", params).df()


def slice_count(con: duckdb.DuckDBPyConnection, dataset_id: str, filters: Filters = (), run_a: str | None = None,
                run_b: str | None = None, search: str = "", correctness: str = "all") -> int:
    """How many examples the slice holds (the table shows at most 500 of them)."""
    sql, params = _slice_sql(dataset_id, filters, run_a, run_b, search, correctness)
    return int(con.execute(sql.format(select="count(*)"), params).fetchall()[0][0])


def _objects(column: np.ndarray) -> np.ndarray:
    """A fetched (possibly masked) column as an object array with None for NULL."""
    return np.where(np.ma.getmaskarray(column), None, np.ma.getdata(column)).astype(object)


def run_labels(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    """The run's classes in the order of its probabilities ([] for runs without labels)."""
    rows = con.execute("SELECT CAST(config->'$.labels' AS VARCHAR[]) FROM runs WHERE run_id = $r", {"r": run_id}).fetchall()
    return list(rows[0][0] or []) if rows else []


def slice_summary(con: duckdb.DuckDBPyConnection, dataset_id: str, filters: Filters = (), run_a: str | None = None,
                  run_b: str | None = None, search: str = "", correctness: str = "all") -> dict:
    """Over the whole slice: n, and for run A accuracy and macro-F1 (95% bootstrap CI), the confusion
    matrix (gold × predicted), the response bias (label shares, gold vs predicted) and `unlabelled` (items
    run A gave no label: an unparsed, refused or empty response, or an error; counted wrong) on the
    items with a gold label; with a run B, how B compares with A (`compare`); None where undefined."""
    sql, params = _slice_sql(dataset_id, filters, run_a, run_b, search, correctness)
    cells = con.execute(sql.format(select="gold_label, label_a, label_b, count(*) AS n") + " GROUP BY ALL", params).df()
    if cells["n"].sum() > LARGE_N:  # a large slice: every metric from its (gold, A, B) cells, not per item
        return _summary_of_cells(cells, run_labels(con, run_a) if run_a else [], bool(run_b))
    columns = con.execute(sql.format(select="gold_label, label_a, label_b") + " ORDER BY example_id", params).fetchnumpy()
    gold, pred = _objects(columns["gold_label"]), _objects(columns["label_a"])
    labels = run_labels(con, run_a) if run_a else []
    summary = {"n": len(gold), "scored": 0, "labels": labels, "accuracy": None, "macro_f1": None, "confusion": None,
               "bias": None, "compare": None, "unlabelled": 0}
    scored = ~np.ma.getmaskarray(columns["gold_label"])
    if not labels or not scored.any():
        return summary
    gold, pred = gold[scored], pred[scored]
    with _one_blas_thread():
        accuracy, macro_f1 = classification.accuracy(gold, pred), classification.macro_f1(gold, pred, labels)
        compare = _compare(gold, pred, _objects(columns["label_b"])[scored], labels) if run_b else None
    return {**summary, "scored": int(scored.sum()), "unlabelled": int(sum(p is None for p in pred)),
            "accuracy": accuracy, "macro_f1": macro_f1,
            "confusion": classification.confusion(list(gold), list(pred), labels),
            "bias": classification.response_bias(gold, pred, labels), "compare": compare}


def _summary_of_cells(cells: pd.DataFrame, labels: list[str], with_b: bool) -> dict:
    """`slice_summary` from counts per (gold, A, B) label cell: the same numbers, and bootstrap resamples
    drawn over the cells (the same distribution as over items), so a million-item slice costs no more
    than a small one."""
    cells = cells.astype(object).where(cells.notna(), None).assign(n=cells["n"].astype(int))
    summary = {"n": int(cells["n"].sum()), "scored": 0, "labels": labels, "accuracy": None, "macro_f1": None,
               "confusion": None, "bias": None, "compare": None,
               "unlabelled": 0}
    scored = cells[cells["gold_label"].notna()]
    if not labels or scored.empty:
        return summary
    gold, pred, counts = scored["gold_label"].to_numpy(), scored["label_a"].to_numpy(), scored["n"].to_numpy()
    compare = None
    if with_b:  # the paired comparison wants items: expand the cells (their order does not matter for it)
        repeat = lambda column: np.repeat(scored[column].to_numpy(), counts)  # noqa: E731
        compare = _compare(repeat("gold_label"), repeat("label_a"), repeat("label_b"), labels)
    return {**summary, "scored": int(counts.sum()), "unlabelled": int(counts[pd.isna(pred)].sum()),
            "accuracy": classification.accuracy(gold, pred, counts=counts),
            "macro_f1": classification.macro_f1(gold, pred, labels, counts=counts),
            "confusion": classification.confusion(list(gold), list(pred), labels, counts=counts),
            "bias": classification.response_bias(gold, pred, labels, counts=counts), "compare": compare}


def _compare(gold: np.ndarray, pred_a: np.ndarray, pred_b: np.ndarray, labels: list[str]) -> dict | None:
    """Run B against run A on the items both labelled: accuracies, B − A (paired bootstrap CI and p), McNemar p,
    and the gold, A and B label shares over those same items (`shares`)."""
    both = np.array([label is not None for label in pred_b], dtype=bool)
    if not both.any():
        return None
    gold, pred_a, pred_b = gold[both], pred_a[both], pred_b[both]
    a, b = classification.correct(gold, pred_a), classification.correct(gold, pred_b)
    shares = classification.response_bias(gold, pred_a, labels).rename(columns={"gold_share": "gold", "predicted_share": "run A"})
    shares["run B"] = classification.response_bias(gold, pred_b, labels)["predicted_share"]
    return {"n": int(both.sum()), "accuracy_a": classification.accuracy(gold, pred_a),
            "accuracy_b": classification.accuracy(gold, pred_b),
            "difference": paired_difference(b, a), "mcnemar_p": mcnemar(a, b), "shares": shares}


@contextmanager
def _one_blas_thread():
    """The bootstrap's products are small (3 × n by n × 1,000): one BLAS thread runs them fastest, and
    a thread pool on a busy 2-core machine (or under many Streamlit sessions) runs them ~8× slower.
    The limit is process-wide, so sessions take turns (a few ms each): overlapping limits would
    restore the wrong thread count and leave every later BLAS call single-threaded."""
    with _BLAS_LOCK, _BLAS.limit(limits=1, user_api="blas"):
        yield


def _records(con: duckdb.DuckDBPyConnection, sql: str, params: dict) -> pd.DataFrame:
    return con.execute(sql, params).df()


def _example_row(con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str) -> dict:
    """Every column of the example (lists as lists, `extra` parsed); KeyError naming what ids look like."""
    cursor = con.execute("SELECT * FROM examples WHERE dataset_id = $d AND example_id = $e", {"d": dataset_id, "e": example_id})
    rows, names = cursor.fetchall(), [c[0] for c in cursor.description]
    if not rows:
        sample = [r[0] for r in con.execute("SELECT example_id FROM examples WHERE dataset_id = $d ORDER BY example_id LIMIT 4",
                                            {"d": dataset_id}).fetchall()]
        if not sample:
            raise KeyError(f"dataset {dataset_id!r} is not loaded: run `python -m backend ingest`")
        raise KeyError(f"no example {example_id!r} in {dataset_id}: its ids look like {', '.join(map(repr, sample))}")
    row = dict(zip(names, rows[0]))
    row["extra"] = json.loads(row["extra"]) if row.get("extra") else {}
    return row


def _format_probs(labels, probs) -> str | None:
    sized = (list, tuple, np.ndarray)
    if not isinstance(labels, sized) or not isinstance(probs, sized) or len(labels) != len(probs):
        return None
    return " · ".join(f"{label} {p:.3f}" for label, p in zip(labels, probs))


def _predictions(con: duckdb.DuckDBPyConnection, params: dict) -> pd.DataFrame:
    """Every run's output for the example: label, its probability, all probabilities, answer, text; for a
    prompted run the parse status, the prompt sent and the raw response."""
    frame = _records(con, f"""
        SELECT r.run_id, r.model_id, r.source, r.task, p.label,
               p.probs[list_position(CAST(r.config->'$.labels' AS VARCHAR[]), p.label)] AS p,
               CAST(r.config->'$.labels' AS VARCHAR[]) AS labels, p.probs, p.answer, p.text->>'$.parse' AS parse,
               p.text, p.error, p.text->>'$.prompt' AS prompt, p.text->>'$.generation' AS response,
               p.label = e.gold_label AS correct
        FROM predictions p JOIN runs r ON r.run_id = p.run_id
        JOIN examples e ON e.dataset_id = r.dataset_id AND e.example_id = p.example_id
        WHERE r.dataset_id = $d AND p.example_id = $e AND r.status IN ('complete', 'live')
        {RUN_ORDER}""", params)
    frame["probabilities"] = [_format_probs(ls, ps) for ls, ps in zip(frame["labels"], frame["probs"])]
    return frame.drop(columns=["labels", "probs"])


def _pairs(con: duckdb.DuckDBPyConnection, params: dict) -> pd.DataFrame:
    """Pairs the example belongs to: kind, its role, the partner's id, role, text and gold label."""
    return _records(con, """
        WITH mine AS (
            SELECT pair_id, kind, example_a = $e AS is_a,
                   CASE WHEN example_a = $e THEN example_b ELSE example_a END AS partner,
                   CASE WHEN example_a = $e THEN role_a ELSE role_b END AS role,
                   CASE WHEN example_a = $e THEN role_b ELSE role_a END AS partner_role
            FROM pairs WHERE dataset_id = $d AND (example_a = $e OR example_b = $e))
        SELECT m.pair_id, m.kind, m.role, m.partner, m.partner_role, x.input AS partner_input,
               x.hypothesis AS partner_hypothesis, x.gold_label AS partner_gold
        FROM mine m LEFT JOIN examples x ON x.dataset_id = $d AND x.example_id = m.partner
        ORDER BY m.kind, m.partner""", params)


def _crowd(ratings: pd.DataFrame) -> dict | None:
    """NOPE: the distribution of the crowd's labels (E/N/C) and their 0-100 ratings; None without."""
    crowd = ratings[ratings["source"] == "crowd"]
    labels = crowd.loc[crowd["criterion"] == "nope_label", "label"]
    if labels.empty:
        return None
    counts = labels.value_counts().reindex(["E", "N", "C"], fill_value=0)
    return {"labels": counts.rename_axis("label").reset_index(name="n"),
            "ratings": crowd.loc[crowd["criterion"] == "nope_likelihood", "value"].tolist()}


def _retrievals(con: duckdb.DuckDBPyConnection, params: dict, top: int = 10) -> pd.DataFrame:
    """Top passages per retrieval run, with title, text and whether each is a gold passage."""
    return _records(con, """
        SELECT t.run_id, t.rank, t.doc_id, t.score, pa.title, pa.text,
               EXISTS (SELECT 1 FROM qrels q WHERE q.dataset_id = $d AND q.example_id = $e AND q.doc_id = t.doc_id) AS gold
        FROM retrievals t JOIN runs r ON r.run_id = t.run_id
        LEFT JOIN passages pa ON pa.doc_id = t.doc_id AND pa.corpus_id = coalesce(r.config->>'$.corpus_id', 'wiki')
        WHERE r.dataset_id = $d AND t.example_id = $e AND t.rank <= $top
        ORDER BY t.run_id, t.rank""", {**params, "top": top})


def example_detail(con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str) -> dict:
    """Everything the store knows about one example: the row, every run's output, pair partners,
    ratings (and NOPE's crowd distribution), retrieved passages per run and gold passages."""
    params = {"d": dataset_id, "e": example_id}
    row = _example_row(con, dataset_id, example_id)
    ratings = _records(con, """
        SELECT source, rater_id, criterion, value, label, note, run_id, rated_at FROM ratings
        WHERE dataset_id = $d AND example_id = $e ORDER BY source, criterion, rater_id""", params)
    qrels = _records(con, """
        SELECT q.corpus_id, q.doc_id, pa.title, pa.text FROM qrels q
        LEFT JOIN passages pa ON pa.corpus_id = q.corpus_id AND pa.doc_id = q.doc_id
        WHERE q.dataset_id = $d AND q.example_id = $e ORDER BY q.doc_id""", params)
    return {"example": row, "predictions": _predictions(con, params), "pairs": _pairs(con, params),
            "ratings": ratings, "crowd": _crowd(ratings), "retrievals": _retrievals(con, params), "qrels": qrels}
