"""Passages as the store keeps them: a corpus's passages (and its hash, which names its indexes), the
questions' gold passages (qrels), and what retrieval and retrieval-augmented runs stored about them."""

from __future__ import annotations

import duckdb
import pandas as pd


def corpus_hash(con: duckdb.DuckDBPyConnection, corpus_id: str) -> str:
    """SHA-256 hex over the corpus's (doc_id, text) pairs sorted by doc_id; computed inside DuckDB."""
    row = con.execute(
        """
        SELECT sha256(string_agg(doc_id || chr(31) || text, chr(30) ORDER BY doc_id))
        FROM passages WHERE corpus_id = $c
    """,
        {"c": corpus_id},
    ).fetchall()
    if not row or row[0][0] is None:
        raise LookupError(
            f"no passages for corpus {corpus_id!r} in the store: run `python -m backend ingest --only corpus`"
        )
    return row[0][0]


def corpus_passages(con: duckdb.DuckDBPyConnection, corpus_id: str) -> tuple[list[str], list[str]]:
    """(doc_ids, texts) of a corpus sorted by doc_id (the order the indexes use)."""
    rows = con.execute(
        "SELECT doc_id, text FROM passages WHERE corpus_id = $c ORDER BY doc_id", {"c": corpus_id}
    ).fetchall()
    return [r[0] for r in rows], [r[1] for r in rows]


def titled(con: duckdb.DuckDBPyConnection, doc_ids: list[str], corpus_id: str = "wiki") -> pd.DataFrame:
    """doc_id, title and text of the given passages."""
    return con.execute(
        "SELECT doc_id, title, text FROM passages WHERE corpus_id = $c AND list_contains($ids, doc_id)",
        {"c": corpus_id, "ids": sorted(set(doc_ids))},
    ).df()


def questions(con: duckdb.DuckDBPyConnection, dataset_id: str, splits, corpus_id: str) -> pd.DataFrame:
    """example_id, split, input and the gold doc_ids (a possibly empty list) of the chosen splits."""
    return con.execute(
        """
        SELECT e.example_id, e.split, e.input,
               coalesce(list(q.doc_id ORDER BY q.doc_id) FILTER (WHERE q.doc_id IS NOT NULL), []) AS gold
        FROM examples e LEFT JOIN qrels q
          ON q.dataset_id = e.dataset_id AND q.example_id = e.example_id AND q.corpus_id = $c
        WHERE e.dataset_id = $d AND list_contains($s, e.split)
        GROUP BY ALL ORDER BY e.split, e.example_id
    """,
        {"d": dataset_id, "s": list(splits), "c": corpus_id},
    ).df()


def gold_doc_ids(
    con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str, corpus_id: str = "wiki"
) -> list[str]:
    """The question's gold passages (qrels) in the corpus, sorted."""
    rows = con.execute(
        """SELECT doc_id FROM qrels WHERE dataset_id = $d AND example_id = $e AND corpus_id = $c
                          ORDER BY doc_id""",
        {"d": dataset_id, "e": example_id, "c": corpus_id},
    ).fetchall()
    return [r[0] for r in rows]


def datasets_with_gold(con: duckdb.DuckDBPyConnection, corpus_id: str = "wiki") -> list[str]:
    """Datasets whose questions have gold passages (qrels) in the corpus."""
    rows = con.execute(
        "SELECT DISTINCT dataset_id FROM qrels WHERE corpus_id = $c ORDER BY 1", {"c": corpus_id}
    ).fetchall()
    return [r[0] for r in rows]


def first_gold_ranks(con: duckdb.DuckDBPyConnection, dataset_id: str, run_id: str, split: str | None = None) -> list:
    """Per question with gold passages (optionally of one split), the rank of the first gold passage a
    retrieval run found (None: not within its k), by example id."""
    rows = con.execute(
        """
        SELECT CAST(p.text->>'$.first_gold_rank' AS INTEGER) FROM predictions p
        JOIN examples e ON e.dataset_id = $d AND e.example_id = p.example_id
        WHERE p.run_id = $r AND CAST(p.text->>'$.n_gold' AS INTEGER) > 0 AND ($s IS NULL OR e.split = $s)
        ORDER BY p.example_id""",
        {"d": dataset_id, "r": run_id, "s": split},
    ).fetchall()
    return [r[0] for r in rows]


def reader_rows(con: duckdb.DuckDBPyConnection, dataset_id: str, run_id: str, corpus_id: str = "wiki") -> pd.DataFrame:
    """Per prediction of a retrieval-augmented QA run: example_id, split, answer_type, input, answer,
    gold_answers, error, reader_k (passages it read), gold_rank (first gold among them) and n_gold."""
    return con.execute(
        """
        WITH seen AS (
            SELECT t.example_id, max(t.rank) AS reader_k,
                   min(t.rank) FILTER (WHERE q.doc_id IS NOT NULL) AS gold_rank
            FROM retrievals t LEFT JOIN qrels q
              ON q.dataset_id = $d AND q.corpus_id = $c AND q.example_id = t.example_id AND q.doc_id = t.doc_id
            WHERE t.run_id = $r GROUP BY t.example_id),
        golds AS (SELECT example_id, count(*) AS n_gold FROM qrels WHERE dataset_id = $d AND corpus_id = $c GROUP BY
        ALL)
        SELECT p.example_id, e.split, e.answer_type, e.input, p.answer, e.gold_answers, p.error,
               s.reader_k, s.gold_rank, coalesce(g.n_gold, 0) AS n_gold
        FROM predictions p
        LEFT JOIN examples e ON e.dataset_id = $d AND e.example_id = p.example_id
        LEFT JOIN seen s ON s.example_id = p.example_id
        LEFT JOIN golds g ON g.example_id = p.example_id
        WHERE p.run_id = $r ORDER BY e.split, p.example_id""",
        {"r": run_id, "d": dataset_id, "c": corpus_id},
    ).df()
