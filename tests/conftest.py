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
