"""Every st.cache_* wrapper lives here: one store connection per process, a cursor per call."""
from __future__ import annotations

import duckdb
import streamlit as st

from backend.config import settings
from backend.store.connection import connect


@st.cache_resource(show_spinner=False)
def _store(path: str) -> duckdb.DuckDBPyConnection:
    return connect(path, read_only=True)


def store() -> duckdb.DuckDBPyConnection:
    """A cursor on the shared read-only store (one per thread); FileNotFoundError if not built."""
    return _store(str(settings().store_path)).cursor()
