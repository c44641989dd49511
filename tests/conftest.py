"""Shared fixtures: the real shared datasets, a store ingested from them (once per session)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("PLAB_OFFLINE", "1")  # tests never download; the download test serves files itself

from backend.config import settings  # noqa: E402

SHARED = settings().shared_datasets


def shared(name: str) -> Path:
    """A dataset folder of ../shared/datasets, or skip the test when shared/ is absent."""
    path = SHARED / name
    if not path.is_dir():
        pytest.skip(f"{path} is missing: the real-data tests need ../shared/datasets beside the checkout")
    return path


@pytest.fixture(scope="session")
def real_store(tmp_path_factory) -> Path:
    """A store ingested from ../shared/datasets, with the results of that ingest."""
    from backend.ingest import ingest

    shared("nope")
    path = tmp_path_factory.mktemp("store") / "lab.duckdb"
    results = ingest(store=path)
    failed = [r.message for r in results if r.status == "failed"]
    assert not failed, failed
    return path


@pytest.fixture()
def real_con(real_store):
    from backend.store.connection import connect

    con = connect(real_store, read_only=True)
    yield con
    con.close()


@pytest.fixture()
def open_page(monkeypatch):
    """Render one page with AppTest on a given store and URL parameters; Streamlit caches cleared around it."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parent.parent

    def render(store: Path, page: str, params: dict | None = None) -> AppTest:
        monkeypatch.setenv("PLAB_STORE", str(store))
        at = AppTest.from_file(str(root / "app.py"), default_timeout=120)
        at.query_params.update(params or {})
        return at.switch_page(page).run()

    st.cache_resource.clear()
    st.cache_data.clear()
    yield render
    st.cache_resource.clear()
    st.cache_data.clear()
