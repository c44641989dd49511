"""Examples as the store keeps them: the Explore slice (facets, runs, correctness and text → one query),
facet values, and one example's rows (its predictions, pairs, retrievals and gold passages).

A slice is ONE parameterised DuckDB query: the dataset's examples, joined with run A's predictions
(an inner join: with a run A, the slice holds the items that run predicted), left-joined with run
B's, then filtered by facets, predicted label, run A's correctness and a case-insensitive search.
Joins use `example_key` (an integer derived from the ids: 2-4× faster than joining 1M string ids).
Filter values are query parameters; column names and sort orders come from whitelists.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import duckdb
import numpy as np
import pandas as pd

from backend.store.ids import pasted
from backend.store.queries import FACETS
from backend.store.runs import LABELS, ORDERS

Filters = tuple[tuple[str, tuple], ...]
RUN_ORDER = f"ORDER BY {ORDERS['classifiers first']}"
BOOLEAN_FACETS = {"adversarial", "ambiguous"}
EXTRA = "extra."  # facet name prefix for a key of examples.extra (a user dataset's own column)
RUN_FILTERS = ("label_a", "label_b", "correct_b")  # correct_b: "true" / "false" (run B right / wrong)
CORRECTNESS = ("all", "correct", "incorrect")
LABEL_ORDER = {"E": 0, "N": 1, "C": 2, "FP": 3}


@dataclass(frozen=True)
class Slice:
    """One slice of a dataset, from the URL to the SQL and back: the values chosen per facet (`filters`, as
    ((facet, (value, ...)), ...): the split is one of them, a user dataset's column is 'extra.KEY', and the run
    filters label_a / label_b / correct_b narrow by what the runs said), runs A and B, run A's correctness
    (`CORRECTNESS`) and a case-insensitive text search. Frozen, so a page caches results by it."""

    dataset: str
    filters: Filters = ()
    run_a: str | None = None
    run_b: str | None = None
    search: str = ""
    correctness: str = "all"

    @property
    def splits(self) -> tuple | None:
        """The splits chosen, or None when every split is pooled."""
        return dict(self.filters).get("split") or None

    def narrowed(self, filters: Filters) -> Slice:
        """This slice with more filters (e.g. one confusion cell's gold and predicted label)."""
        return replace(self, filters=tuple(self.filters) + tuple(filters))


SORTS = {  # name → ORDER BY clause (never user text)
    "example_id": "example_id",
    "gold_label": "gold_label, example_id",
    "label_a": "label_a, example_id",
    "p_a_desc": "p_a DESC NULLS LAST, example_id",
    "p_a_asc": "p_a ASC NULLS LAST, example_id",
    "disagree_first": "label_a IS NOT DISTINCT FROM label_b, example_id",
    "split": "split, example_id",
}
COLUMNS = [
    "example_id",
    "split",
    "gold_label",
    "label_a",
    "p_a",
    "correct_a",
    "label_b",
    "p_b",
    "correct_b",
    "input",
    "context",
    "hypothesis",
    "gold_answers",
    "answer_a",
    "answer_b",
    "trigger_type",
    "polarity",
    "adversarial",
    "answer_type",
    "question_type",
    "hop",
    "ambiguous",
]
_IN_KEYS = "AND {alias}.example_key IN (SELECT unnest($keys))"
_NO_RUN = (
    "SELECT NULL::UBIGINT AS example_key, NULL::VARCHAR AS label, NULL::VARCHAR AS answer, NULL::DOUBLE AS prob "
    "WHERE FALSE"
)


def facet_values(con: duckdb.DuckDBPyConnection, dataset_id: str, extra_keys: tuple[str, ...] = ()) -> dict[str, list]:
    """Facet → its sorted distinct non-null values: the typed columns the dataset uses, then each of
    `extra_keys` (keys of examples.extra: a user dataset's categorical columns) as 'extra.KEY'."""
    lists = ", ".join(f"list_sort(list(DISTINCT {f}) FILTER (WHERE {f} IS NOT NULL)) AS {f}" for f in FACETS)
    row = con.execute(f"SELECT {lists} FROM examples WHERE dataset_id = $d", {"d": dataset_id}).fetchall()[0]
    values = {facet: list(v) for facet, v in zip(FACETS, row) if v}
    for key in extra_keys:
        found = con.execute(
            "SELECT list_sort(list(DISTINCT v) FILTER (WHERE v IS NOT NULL)) FROM "
            "(SELECT json_extract_string(extra, $p) AS v FROM examples WHERE dataset_id = $d)",
            {"p": _json_path(key), "d": dataset_id},
        ).fetchall()[0][0]
        if found:
            values[EXTRA + key] = list(found)
    if "gold_label" in values:
        values["gold_label"].sort(key=lambda label: (LABEL_ORDER.get(label, 9), label))
    return values


def _json_path(key: str) -> str:
    """'$."key"' for json_extract (a bound parameter, so any key is safe)."""
    return "$." + json.dumps(key)


def _run_cte(param: str | None, keys: bool) -> str:
    """Predictions of one run with the probability of the predicted label (probs follow config.labels);
    with `keys`, only those of the examples whose keys are in $keys."""
    if param is None:
        return _NO_RUN
    labels = f"(SELECT {LABELS} FROM runs r WHERE r.run_id = ${param})"  # read once, not per row
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
            raise ValueError(
                f"unknown filter {column!r}: allowed {', '.join(FACETS + list(RUN_FILTERS))} or {EXTRA}KEY"
            )
        if not values:
            continue
        lower = column in BOOLEAN_FACETS
        params[f"f{i}"] = [str(v).lower() if lower else str(v) for v in values]
        if extra:
            params[f"p{i}"] = _json_path(column[len(EXTRA) :])
            where.append(f"list_contains($f{i}, json_extract_string(extra, $p{i}))")
        else:
            where.append(f"list_contains($f{i}, CAST({column} AS VARCHAR))")
    search = pasted(search)
    if search:
        escaped = search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        params["q"] = f"%{escaped}%"
        where.append("(" + " OR ".join(f"{c} ILIKE $q ESCAPE '\\'" for c in ("input", "hypothesis", "context")) + ")")
    if correctness not in CORRECTNESS:
        raise ValueError(f"correctness {correctness!r}: allowed {', '.join(CORRECTNESS)}")
    if correctness != "all" and not has_a:
        raise ValueError("filtering by correctness needs a run A")
    if correctness != "all":
        where.append("correct_a" if correctness == "correct" else "NOT correct_a")
    return where or ["TRUE"]


def slice_sql(where: Slice, keys: list[int] | None = None) -> tuple[str, dict]:
    """`WITH … SELECT {select} FROM s WHERE …` for one slice (of only the examples with `keys`, if given),
    and its parameters."""
    run_a, run_b = where.run_a, where.run_b
    params: dict = {"d": where.dataset}
    if keys is not None:
        params["keys"] = keys
    for name, run in (("run_a", run_a), ("run_b", run_b)):
        if run:
            params[name] = run
    conditions = _conditions(tuple(where.filters), where.search or "", where.correctness, bool(run_a), params)
    sql = f"""
        WITH a AS ({_run_cte("run_a" if run_a else None, keys is not None)}),
             b AS ({_run_cte("run_b" if run_b else None, keys is not None)}),
        s AS (
            SELECT e.*, a.label AS label_a, a.prob AS p_a, a.answer AS answer_a, {_correct("a", bool(run_a))} AS
            correct_a,
                   b.label AS label_b, b.prob AS p_b, b.answer AS answer_b, {_correct("b", bool(run_b))} AS correct_b
            FROM examples e {"JOIN" if run_a else "LEFT JOIN"} a ON a.example_key = e.example_key
            LEFT JOIN b ON b.example_key = e.example_key
            WHERE e.dataset_id = $d {_IN_KEYS.format(alias="e") if keys is not None else ""})
        SELECT {{select}} FROM s WHERE {" AND ".join(conditions)}"""
    return sql, params


def slice_frame(
    con: duckdb.DuckDBPyConnection,
    where: Slice,
    sort: str = "example_id",
    limit: int | None = 500,
) -> pd.DataFrame:
    """The slice's rows (at most `limit`; None = all), sorted by a whitelisted order (`SORTS`).

    A page is found in two steps: the keys of its rows (sorting the slice needs only the sort
    columns), then its columns for those keys: reading every column of a 1M-row slice to keep 500
    rows cost 3× more."""
    if sort not in SORTS:
        raise ValueError(f"sort {sort!r}: allowed {', '.join(SORTS)}")
    keys = None
    if limit is not None:
        sql, params = slice_sql(where)
        page = f"{sql.format(select='example_key')} ORDER BY {SORTS[sort]} LIMIT $limit"
        keys = [row[0] for row in con.execute(page, {**params, "limit": int(limit)}).fetchall()]
    sql, params = slice_sql(where, keys=keys)
    return con.execute(f"{sql.format(select=', '.join(COLUMNS))} ORDER BY {SORTS[sort]}", params).df()


def slice_count(
    con: duckdb.DuckDBPyConnection,
    where: Slice,
) -> int:
    """How many examples the slice holds (the table shows at most 500 of them)."""
    sql, params = slice_sql(where)
    return int(con.execute(sql.format(select="count(*)"), params).fetchall()[0][0])


def _records(con: duckdb.DuckDBPyConnection, sql: str, params: dict) -> pd.DataFrame:
    return con.execute(sql, params).df()


def example_row(con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str) -> dict:
    """Every column of the example (lists as lists, `extra` parsed); KeyError naming what ids look like. The id may
    be pasted (backend.store.ids)."""
    example_id = pasted(example_id)
    cursor = con.execute(
        "SELECT * FROM examples WHERE dataset_id = $d AND example_id = $e", {"d": dataset_id, "e": example_id}
    )
    rows, names = cursor.fetchall(), [c[0] for c in cursor.description]
    if not rows:
        sample = [
            r[0]
            for r in con.execute(
                "SELECT example_id FROM examples WHERE dataset_id = $d ORDER BY example_id LIMIT 4", {"d": dataset_id}
            ).fetchall()
        ]
        if not sample:
            raise KeyError(f"dataset {dataset_id!r} is not loaded: run `python -m backend ingest`")
        raise KeyError(f"no example {example_id!r} in {dataset_id}: its ids look like {', '.join(map(repr, sample))}")
    row = dict(zip(names, rows[0]))
    row["extra"] = json.loads(row["extra"]) if row.get("extra") else {}
    return row


def predictions_of(con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str) -> pd.DataFrame:
    """Every complete or live run's output for the example: label, its probability `p`, the run's `labels`
    and all `probs`, answer, text; for a prompted run the parse status, the prompt sent and the raw response."""
    params = {"d": dataset_id, "e": example_id}
    return _records(
        con,
        f"""
        SELECT r.run_id, r.model_id, r.source, r.task, p.label,
               p.probs[list_position(CAST(r.config->'$.labels' AS VARCHAR[]), p.label)] AS p,
               CAST(r.config->'$.labels' AS VARCHAR[]) AS labels, p.probs, p.answer, p.text->>'$.parse' AS parse,
               p.text, p.error, p.text->>'$.prompt' AS prompt, p.text->>'$.generation' AS response,
               p.label = e.gold_label AS correct
        FROM predictions p JOIN runs r ON r.run_id = p.run_id
        JOIN examples e ON e.dataset_id = r.dataset_id AND e.example_id = p.example_id
        WHERE r.dataset_id = $d AND p.example_id = $e AND r.status IN ('complete', 'live')
        {RUN_ORDER}""",
        params,
    )


def pairs_of(con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str) -> pd.DataFrame:
    """Pairs the example belongs to: kind, its role, the partner's id, role, text and gold label."""
    return _records(
        con,
        """
        WITH mine AS (
            SELECT pair_id, kind, example_a = $e AS is_a,
                   CASE WHEN example_a = $e THEN example_b ELSE example_a END AS partner,
                   CASE WHEN example_a = $e THEN role_a ELSE role_b END AS role,
                   CASE WHEN example_a = $e THEN role_b ELSE role_a END AS partner_role
            FROM pairs WHERE dataset_id = $d AND (example_a = $e OR example_b = $e))
        SELECT m.pair_id, m.kind, m.role, m.partner, m.partner_role, x.input AS partner_input,
               x.hypothesis AS partner_hypothesis, x.gold_label AS partner_gold
        FROM mine m LEFT JOIN examples x ON x.dataset_id = $d AND x.example_id = m.partner
        ORDER BY m.kind, m.partner""",
        {"d": dataset_id, "e": example_id},
    )


def retrievals_of(con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str, top: int = 10) -> pd.DataFrame:
    """Top passages per retrieval run, with title, text and whether each is a gold passage."""
    return _records(
        con,
        """
        SELECT t.run_id, t.rank, t.doc_id, t.score, pa.title, pa.text,
               EXISTS (SELECT 1 FROM qrels q WHERE q.dataset_id = $d AND q.example_id = $e AND q.doc_id = t.doc_id) AS
               gold
        FROM retrievals t JOIN runs r ON r.run_id = t.run_id
        LEFT JOIN passages pa ON pa.doc_id = t.doc_id AND pa.corpus_id = coalesce(r.config->>'$.corpus_id', 'wiki')
        WHERE r.dataset_id = $d AND t.example_id = $e AND t.rank <= $top
        ORDER BY t.run_id, t.rank""",
        {"d": dataset_id, "e": example_id, "top": top},
    )


def qrels_of(con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str) -> pd.DataFrame:
    """The example's gold passages (qrels) with their title and text."""
    return _records(
        con,
        """
        SELECT q.corpus_id, q.doc_id, pa.title, pa.text FROM qrels q
        LEFT JOIN passages pa ON pa.corpus_id = q.corpus_id AND pa.doc_id = q.doc_id
        WHERE q.dataset_id = $d AND q.example_id = $e ORDER BY q.doc_id""",
        {"d": dataset_id, "e": example_id},
    )


def slice_cells(
    con: duckdb.DuckDBPyConnection,
    where: Slice,
) -> pd.DataFrame:
    """The slice's (gold_label, label_a, label_b) cells with their counts `n`."""
    sql, params = slice_sql(where)
    return con.execute(sql.format(select="gold_label, label_a, label_b, count(*) AS n") + " GROUP BY ALL", params).df()


def slice_labels(con: duckdb.DuckDBPyConnection, where: Slice) -> dict[str, np.ndarray]:
    """The slice's gold_label, label_a and label_b columns (masked where NULL), by example id."""
    sql, params = slice_sql(where)
    return con.execute(sql.format(select="gold_label, label_a, label_b") + " ORDER BY example_id", params).fetchnumpy()


def _facet_columns(facets: list[str], params: dict, lower_booleans: bool) -> list[str]:
    """SELECT items naming each facet's value as text, column "0", "1", … (a key of `extra` bound in `params`)."""
    columns = []
    for i, facet in enumerate(facets):
        if facet.startswith(EXTRA):
            params[f"p{i}"] = _json_path(facet[len(EXTRA) :])
            columns.append(f'json_extract_string(e.extra, $p{i}) AS "{i}"')
        elif facet in FACETS:
            cast = f"CAST(e.{facet} AS VARCHAR)"
            columns.append(f'{"lower(" + cast + ")" if lower_booleans and facet in BOOLEAN_FACETS else cast} AS "{i}"')
        else:
            raise ValueError(f"unknown facet {facet!r}: allowed {', '.join(FACETS)} or {EXTRA}KEY")
    return columns


def wrongness(
    con: duckdb.DuckDBPyConnection, dataset_id: str, facets: list[str], run_a: str, run_b: str | None = None
) -> pd.DataFrame:
    """One row per item run A (and B) labelled that has a gold label: example_key, the gold label as `_gold`,
    each facet's value as text (booleans lower case), `wrong_a` and `wrong_b` (NULL without run B)."""
    params: dict = {"d": dataset_id, "a": run_a, "b": run_b}
    columns = _facet_columns(facets, params, lower_booleans=True)
    return (
        con.execute(
            f"""
        SELECT e.example_key, e.gold_label AS _gold, {", ".join(columns) + "," if columns else ""}
               coalesce(pa.label <> e.gold_label, TRUE) AS wrong_a,
               {"coalesce(pb.label <> e.gold_label, TRUE)" if run_b else "NULL"} AS wrong_b
        FROM examples e JOIN predictions pa ON pa.example_key = e.example_key AND pa.run_id = $a
        {"JOIN" if run_b else "LEFT JOIN"} predictions pb ON pb.example_key = e.example_key AND pb.run_id = $b
        WHERE e.dataset_id = $d AND e.gold_label IS NOT NULL
    """,
            params,
        )
        .df()
        .rename(columns={str(i): f for i, f in enumerate(facets)})
    )


def labels_by_key(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.Series:
    """The run's predicted label per example_key."""
    return (
        con.execute("SELECT example_key, label FROM predictions WHERE run_id = ?", [run_id])
        .df()
        .set_index("example_key")["label"]
    )


def correctness(con: duckdb.DuckDBPyConnection, dataset_id: str, facets: list[str], run_id: str | None) -> pd.DataFrame:
    """Every example: id, input, each facet's value as text, and run `run_id`'s `predicted` label and whether
    it is `correct` ('right', 'wrong' or 'not predicted')."""
    params: dict = {"d": dataset_id, "r": run_id}
    columns = _facet_columns(facets, params, lower_booleans=False)
    return (
        con.execute(
            f"""
        SELECT e.example_id, e.input {", " + ", ".join(columns) if columns else ""}, p.label AS predicted,
               CASE WHEN p.label IS NULL THEN 'not predicted' WHEN p.label = e.gold_label THEN 'right'
                    ELSE 'wrong' END AS correct
        FROM examples e LEFT JOIN predictions p ON p.example_key = e.example_key AND p.run_id = $r
        WHERE e.dataset_id = $d""",
            params,
        )
        .df()
        .rename(columns={str(i): f for i, f in enumerate(facets)})
    )


def embedded_texts(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """example_id and the text the Map embeds for it (input, then the hypothesis when there is one)."""
    return con.execute(
        """
        SELECT example_id, concat_ws(' ', input, hypothesis) AS text FROM examples
        WHERE dataset_id = ? ORDER BY example_id""",
        [dataset_id],
    ).df()
