"""What a cached page function reads is declared where it is defined (`backend.store.sessions.reads`), and the
dashboard's cache follows the declaration: every function a page or ui/ passes to `query()` / `require()` is
defined in the view the call names (a page: its own view) and declares its areas; a real write of each kind
changes the cache key of exactly the functions that read it, and a page's cached result shows the write."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
import streamlit as st

from backend.store import sessions, writer
from backend.store.connection import connect
from backend.store.examples import Slice
from backend.store.writer import AREAS, atomic
from backend.views import explore, overview, rate
from tests.helpers.data import WRITE_RUN
from tests.helpers.people import LOCAL
from ui import resources

ROOT = Path(__file__).resolve().parent.parent


CACHING = {"query": 0, "require": 0, "linked_items": 1}  # ui's functions that cache a function: its argument


def cached_functions() -> dict[str, tuple[str, str]]:
    """'file: view.fn' → (the view module the call names, the function's name), for every call in pages/ and ui/
    that caches a view's function (query(), require(), widgets.linked_items())."""
    found = {}
    for path in sorted([*(ROOT / "pages").glob("*.py"), *(ROOT / "ui").rglob("*.py")]):
        tree = ast.parse(path.read_text())
        aliases = {
            alias.asname or alias.name: f"{node.module}.{alias.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("backend")
            for alias in node.names
        }
        for node in ast.walk(tree):
            name = getattr(getattr(node, "func", None), "attr", None) or getattr(
                getattr(node, "func", None), "id", None
            )
            position = CACHING.get(name)
            if isinstance(node, ast.Call) and position is not None and len(node.args) > position:
                target = node.args[position]
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    module = aliases.get(target.value.id)
                    if module:
                        found[f"{path.relative_to(ROOT)}: {ast.unparse(target)}"] = (module, target.attr)
    return found


CACHED = cached_functions()


def test_the_scan_finds_the_pages_cached_calls():
    assert len(CACHED) > 60, "the scan of query()/require() calls found too few: is it still reading the pages?"


def test_every_cached_function_is_its_views_own_and_says_what_it_reads():
    wrong = []
    for where, (module, name) in CACHED.items():
        fn = getattr(importlib.import_module(module), name)
        page = where.split(":")[0]
        if page.startswith("pages/") and module != f"backend.views.{Path(page).stem}":
            wrong.append(f"{where}: a page caches only its own view's functions, not {module}'s")
        if fn.__module__ != module:
            wrong.append(f"{where}: defined in {fn.__module__}, not in {module} (a re-export)")
        if not getattr(fn, "reads", None):
            wrong.append(f"{where}: no @reads declaration")
    assert wrong == []


def test_an_undeclared_function_is_refused_by_query_naming_it():
    def undeclared(con):
        return 1

    with pytest.raises(TypeError, match="undeclared does not say what it reads"):
        resources.query(undeclared)
    with pytest.raises(TypeError, match="areas of"):
        sessions.reads("predictions")


@pytest.mark.parametrize("area", ["data", "ratings", "live", "saved"])
def test_a_write_of_each_kind_changes_the_cache_key_of_exactly_the_functions_that_read_it(
    area, store_copy, monkeypatch
):
    monkeypatch.setenv("PLAB_STORE", str(store_copy))
    functions = {where: getattr(importlib.import_module(m), n) for where, (m, n) in CACHED.items()}
    before = {where: resources.store_version(fn) for where, fn in functions.items()}
    con = connect(store_copy)
    with atomic(con, area):  # the writer's own transaction, as every write of that kind makes
        con.execute("INSERT OR REPLACE INTO meta VALUES ('unrelated:probe', '1')")  # a row no page reads
    con.close()
    after = {where: resources.store_version(fn) for where, fn in functions.items()}
    changed = {where for where in functions if before[where] != after[where]}
    readers = {where for where, fn in functions.items() if area in fn.reads}
    assert changed == readers
    assert area in AREAS and (readers or area == "saved")  # every kind of data has readers among the pages


def test_a_pages_cached_result_shows_each_kind_of_write(lab, tmp_path, monkeypatch):
    """Through `query()` as the pages call it: a saved slice (saved), a rating (ratings), a run deleted (data)."""
    store = tmp_path / "lab.duckdb"
    store.write_bytes(lab["store"].read_bytes())
    monkeypatch.setenv("PLAB_STORE", str(store))
    st.cache_data.clear()
    assert "probe" not in set(resources.query(overview.saved_slices)["name"])
    rated = len(resources.query(rate.ratings_frame, WRITE_RUN))
    runs = set(resources.query(explore.runs_for, "nope")["run_id"])

    with resources.store() as con:
        explore.save_slice(con, "probe", Slice("nope", (("split", ("adv",)),)), actor=LOCAL)
    assert "probe" in set(resources.query(overview.saved_slices)["name"])

    with resources.store() as con:
        example = resources.query(rate.targets, WRITE_RUN)["example_id"].iloc[0]
        criterion = resources.query(rate.criteria_of, WRITE_RUN)[0]
        rate.save(con, WRITE_RUN, example, "probe-rater", {criterion: 2}, actor=LOCAL)
    assert len(resources.query(rate.ratings_frame, WRITE_RUN)) == rated + 1

    gone = sorted(runs)[0]
    with resources.store() as con:
        writer.replace_run_table(con, None, None, delete=gone)
    assert gone in runs and gone not in set(resources.query(explore.runs_for, "nope")["run_id"])
