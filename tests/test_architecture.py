"""The architecture stays visible: backend never imports Streamlit, pages hold no SQL, app.py lists every page."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
IMPORTS_STREAMLIT = re.compile(r"^\s*(import streamlit|from streamlit)", re.M)
SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE)\b.+\b(FROM|INTO|SET)\b|duckdb|import torch|transformers", re.S)


@pytest.mark.parametrize("path", sorted((ROOT / "backend").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_backend_never_imports_streamlit(path):
    assert not IMPORTS_STREAMLIT.search(path.read_text())


@pytest.mark.parametrize("path", sorted((ROOT / "pages").glob("*.py")), ids=lambda p: p.name)
def test_pages_hold_no_sql_and_no_model_code(path):
    assert not SQL.search(path.read_text())


def test_every_page_is_registered_in_app():
    listed = set(re.findall(r'st\.Page\("pages/([^"]+\.py)"', (ROOT / "app.py").read_text()))
    assert listed == {p.name for p in (ROOT / "pages").glob("*.py")}
