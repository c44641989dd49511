"""Shared fixtures: the real shared datasets, a store ingested from them (once per session)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("PLAB_OFFLINE", "1")  # tests never download; the download test serves files itself

from backend.models import loading  # noqa: E402
from tests.helpers import tiny_models  # noqa: E402
from tests.helpers.browser import CHROMIUM, FLAGS, serve  # noqa: E402
from tests.helpers.data import CHECKOUT_DATA, shared  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def pages_through_app():
    """Every AppTest runs its page through app.py (one store session per rerun, link checks), as the
    server does: see ui.apptest."""
    from ui.apptest import served

    with served():
        yield


def made_once(tmp_path_factory, name: str, make) -> Path:
    """A folder that `make(folder)` fills once per test run. The pytest-xdist workers of a run share its temporary
    root: the first to ask makes the folder there while the others wait on its lock, then read it; in one process
    it is made in the session's own temporary folder. Made in a staging folder and renamed, so a failed `make`
    leaves nothing the next asker would take (it tries again, and fails the same way)."""
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    root = root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root
    folder = root / name
    with FileLock(f"{folder}.lock"):
        if not folder.is_dir():
            staging = root / f"{name}.tmp-{os.getpid()}"
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir()
            make(staging)
            os.replace(staging, folder)
    return folder


def ingest_all(folder: Path) -> None:
    from backend.imports.ingest import ingest

    results = ingest(store=folder / "lab.duckdb")
    failed = [r.message for r in results if r.status == "failed"]
    assert not failed, failed


@pytest.fixture(scope="session")
def real_store(tmp_path_factory) -> Path:
    """A store ingested from ../shared/datasets (once per test run, not once per xdist worker: about 15 s), a copy
    of its own for each test process."""
    shared("nope")
    path = tmp_path_factory.mktemp("store") / "lab.duckdb"
    shutil.copy(made_once(tmp_path_factory, "real-store", ingest_all) / "lab.duckdb", path)
    return path


@pytest.fixture()
def store_copy(real_store, tmp_path) -> Path:
    """A copy of the real store, for a test that writes to it."""
    path = tmp_path / "lab.duckdb"
    shutil.copy(real_store, path)
    return path


@pytest.fixture()
def real_con(real_store):
    from backend.store.connection import connect

    con = connect(real_store)  # read-write like the dashboard: one process opens a file one way
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


@pytest.fixture(scope="session")
def lab(real_store, tmp_path_factory) -> dict:
    """For the live pages: a data folder (tiny models registered, the real indexes linked) and a copy of
    the real store with IfQA S-dev retrieval runs (their evaluation table as "retrieval"), an open-book QA run
    and a writing run."""
    import shutil

    from backend.execution import batch, live, runs
    from backend.models import loading
    from backend.retrieval.evaluate import evaluate_retrievers
    from backend.retrieval.index import build_all
    from backend.store.connection import connect

    root = tmp_path_factory.mktemp("live")
    data = root / "data"
    data.mkdir()
    real_indexes = CHECKOUT_DATA / "indexes"
    models = {
        "tiny-nli": {
            "task": "nli",
            "load": "local",
            "quality": "random tiny model",
            "path": str(tiny_models.classifier(root / "nli", ["contradiction", "entailment", "neutral"])),
        },
        "tiny-fp": {
            "task": "detect",
            "load": "local",
            "quality": "random tiny model",
            "path": str(tiny_models.classifier(root / "fp", ["N", "FP"])),
        },
        "tiny-gen": {
            "task": "generate",
            "load": "local",
            "quality": "random tiny model",
            "batch_size": 4,
            "path": str(tiny_models.generator(root / "gen")),
        },
    }
    tiny_models.register(data, models)
    store = root / "lab.duckdb"
    shutil.copy(real_store, store)
    with pytest.MonkeyPatch.context() as patch:
        con = connect(store)
        # the checkout's indexes (built once if it has none), whatever data folder an open fixture points at
        patch.setenv("PLAB_DATA_DIR", str(CHECKOUT_DATA))
        retrievers = build_all(con)
        (data / "indexes").symlink_to(real_indexes, target_is_directory=True)
        patch.setenv("PLAB_DATA_DIR", str(data))
        # the real corpus's IfQA S-dev evaluation, kept: test_retrieval's Recall@20 test checks this table
        retrieval = evaluate_retrievers(con, retrievers, "ifqa", splits=("S-dev",), k=100)
        batch.predict(
            con, runs.Request("tiny-gen", "ifqa", "qa", "S-dev", "bm25", k=3, limit=6), retrievers, progress=False
        )
        batch.predict(con, runs.Request("tiny-gen", "falseqa", "write", "test", limit=5), progress=False)
        con.close()
    yield {"store": store, "data": data, "retrieval": retrieval}
    for name in models:
        loading.unload(name)
    live.clear_cache()


collect_ignore = ["fixtures"]  # e.g. the harness task files there import lm-eval / Inspect, installed only apart


@pytest.fixture(scope="session")
def cb_run(lab, tmp_path_factory):
    """A real run of the tiny local NLI model (random weights: the mechanics, not a finding) on CommitmentBank, in
    a copy of the lab's store (test_gradient, test_cards)."""
    from backend.execution import batch, runs

    store = tmp_path_factory.mktemp("cb") / "lab.duckdb"
    shutil.copy(lab["store"], store)
    mp = pytest.MonkeyPatch()
    mp.setenv("PLAB_DATA_DIR", str(lab["data"]))
    try:
        run_id = batch.predict(store, runs.Request("tiny-nli", "commitmentbank", "nli"), progress=False)
    finally:
        mp.undo()
    return store, run_id


@pytest.fixture()
def tiny(tmp_path, monkeypatch):
    """A data dir whose registry.local.toml registers a tiny NLI model, detector and generator."""
    data = tmp_path / "data"
    monkeypatch.setenv("PLAB_DATA_DIR", str(data))
    entries = {
        "tiny-nli": {
            "task": "nli",
            "load": "local",
            "path": str(tiny_models.classifier(tmp_path / "nli", ["contradiction", "entailment", "neutral"])),
            "quality": "random tiny model",
            "batch_size": 2,
        },
        "tiny-fp": {
            "task": "detect",
            "load": "local",
            "path": str(tiny_models.classifier(tmp_path / "fp", ["N", "FP"])),
            "quality": "random tiny model",
        },
        "tiny-gen": {
            "task": "generate",
            "load": "local",
            "path": str(tiny_models.generator(tmp_path / "gen")),
            "quality": "random tiny model",
            "batch_size": 2,
        },
        "offline-hub": {"task": "nli", "load": "hub", "hub_id": "someone/some-nli-model", "quality": "online only"},
    }
    tiny_models.register(data, entries)
    yield entries
    for name in entries:
        loading.unload(name)


@pytest.fixture()
def served_lab(lab):
    """The live pages' store (retrieval, QA and writing runs) with the tiny models registered, served by the README's
    run command."""
    yield from serve({"PLAB_STORE": str(lab["store"]), "PLAB_DATA_DIR": str(lab["data"])})


@pytest.fixture(scope="module")
def browser():
    """A Chromium for a module's pages (test_server_browser, test_study_browser)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield launched
        launched.close()
