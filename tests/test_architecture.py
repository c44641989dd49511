"""The architecture stays visible: backend never imports Streamlit, pages hold no SQL, app.py lists every page."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
IMPORTS_STREAMLIT = re.compile(r"^\s*(import streamlit|from streamlit)", re.M)
# SQL inside one string literal, any case: SELECT … FROM, INSERT INTO, UPDATE … SET, DELETE FROM
SQL = re.compile(r"\bselect\b.+\bfrom\b|\binsert\s+into\b|\bupdate\s+\w+\s+set\b|\bdelete\s+from\b", re.I | re.S)
STORE_OR_MODEL_CODE = {"duckdb", "torch", "transformers", "faiss", "bm25s", "gguf", "sentence_transformers"}


def imported(tree: ast.AST) -> set[str]:
    """Top-level names of every module a file imports."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def sql_strings(tree: ast.AST) -> list[str]:
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and SQL.search(node.value)]


@pytest.mark.parametrize("path", sorted((ROOT / "backend").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_backend_never_imports_streamlit(path):
    assert not IMPORTS_STREAMLIT.search(path.read_text())


@pytest.mark.parametrize("path", sorted((ROOT / "pages").glob("*.py")), ids=lambda p: p.name)
def test_pages_hold_no_sql_and_no_model_code(path):
    tree = ast.parse(path.read_text())
    assert not sql_strings(tree)
    assert not imported(tree) & STORE_OR_MODEL_CODE


def test_the_page_checks_catch_what_they_should():
    tree = ast.parse('import numpy\nfrom torch import nn\nimport faiss.contrib\nq("select * from examples")\n'
                     'st.caption("Select a row to open it.")\nx = "update ratings set value = 1"')
    assert imported(tree) & STORE_OR_MODEL_CODE == {"torch", "faiss"}
    assert sorted(sql_strings(tree)) == ["select * from examples", "update ratings set value = 1"]


def test_every_page_is_registered_in_app():
    listed = set(re.findall(r'st\.Page\("pages/([^"]+\.py)"', (ROOT / "app.py").read_text()))
    assert listed == {p.name for p in (ROOT / "pages").glob("*.py")}
