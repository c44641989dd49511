"""Opening the store file. Code that may run beside other processes opens it through
`backend.store.access.session()`, which shares the file between them; `connect` is the raw open.

Inside a process, use one `cursor()` per thread (Streamlit sessions are threads).
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from backend.config import settings

from backend.store import migrations

CRITERIA = [
    # criterion, kind, min, max, labels, description
    ("nope_likelihood", "numeric", 0, 100, None, "NOPE crowd rating: how likely the hypothesis is true given the premise (0-100 slider)"),
    ("nope_label", "label", None, None, ["E", "N", "C"], "NOPE crowd label: the rater's slider value mapped to E/N/C with rater-specific thresholds"),
    ("nope_prior_likelihood", "numeric", 0, 100, None, "NOPE prior: how likely the hypothesis is true given the context alone, without the trigger sentence"),
    ("fluency", "numeric", 0, 3, None, "CREPE writing: is the text fluent and grammatical? (0-3)"),
    ("presupposition", "numeric", 0, 3, None, "CREPE writing: is the presupposition correct and stated in the question? (0-3)"),
    ("correction", "numeric", 0, 3, None, "CREPE writing: does the correction correct the presupposition with a true fact? (0-3)"),
    ("consistency", "numeric", 0, 3, None, "CREPE writing: do presupposition and correction form a consistent pair? (0-3)"),
    ("acceptability", "numeric", 0, 1, None, "QA: is the model's answer acceptable? (0 = no, 1 = yes)"),
]


def store_path(path: Path | str | None = None) -> Path:
    return Path(path) if path is not None else settings().store_path


def existing_store(path: Path | str | None = None) -> Path:
    """The store file, or FileNotFoundError saying how to build it."""
    target = store_path(path)
    if not target.exists():
        raise FileNotFoundError(f"no store at {target}: build it with `python -m backend ingest`")
    return target


def connect(path: Path | str | None = None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open the store; a read-write open creates the file and the schema if needed."""
    target = store_path(path)
    if read_only:
        try:
            return duckdb.connect(str(existing_store(target)), read_only=True)
        except duckdb.ConnectionException:  # this process already has it open read-write: share that
            return duckdb.connect(str(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(target))
    try:
        migrations.bring_up_to_date(con, target, CRITERIA)  # bump migrations.SCHEMA_VERSION when CRITERIA change
    except BaseException:
        con.close()
        raise
    return con
