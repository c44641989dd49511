"""The architecture stays visible: the layers (import-linter's contracts in pyproject.toml), no import
hidden inside a function, the backend's root only its entry points, a view per page, no SQL in pages,
app.py lists every page."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ui import streamlit_private

ROOT = Path(__file__).resolve().parent.parent
IMPORTS_STREAMLIT = re.compile(r"^\s*(import streamlit|from streamlit)", re.M)
# SQL inside one string literal, any case: SELECT … FROM, INSERT INTO, UPDATE … SET, DELETE FROM
SQL = re.compile(
    r"\bselect\b.+\bfrom\b|\binsert\s+into\b|\bupdate\s+\w+\s+set\b|\bdelete\s+from\b"
    r"|\bcreate\s+(table|view|index)\b|\balter\s+table\b|\bdrop\s+table\b",
    re.I | re.S,
)
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
    """String literals (and the literal parts of f-strings, joined) that read as SQL."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
        else:
            continue
        if SQL.search(text):
            found.append(text)
    return found


@pytest.mark.parametrize("path", sorted((ROOT / "backend").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_backend_never_imports_streamlit(path):
    assert not IMPORTS_STREAMLIT.search(path.read_text())


@pytest.mark.parametrize("path", sorted((ROOT / "pages").glob("*.py")), ids=lambda p: p.name)
def test_pages_hold_no_sql_and_no_model_code(path):
    tree = ast.parse(path.read_text())
    assert not sql_strings(tree)
    assert not imported(tree) & STORE_OR_MODEL_CODE


OUTSIDE_STORE = [
    p
    for p in sorted([*(ROOT / "backend").rglob("*.py"), *(ROOT / "ui").glob("*.py")])
    if (ROOT / "backend" / "store") not in p.parents
]


@pytest.mark.parametrize("path", OUTSIDE_STORE, ids=lambda p: str(p.relative_to(ROOT)))
def test_sql_lives_only_in_store(path):
    """Every SQL string is in backend/store/: views, models, imports and the ui ask store functions."""
    assert not sql_strings(ast.parse(path.read_text()))


def test_the_page_checks_catch_what_they_should():
    tree = ast.parse(
        'import numpy\nfrom torch import nn\nimport faiss.contrib\nq("select * from examples")\n'
        'st.caption("Select a row to open it.")\nx = "update ratings set value = 1"'
    )
    assert imported(tree) & STORE_OR_MODEL_CODE == {"torch", "faiss"}
    assert sorted(sql_strings(tree)) == ["select * from examples", "update ratings set value = 1"]
    assert sql_strings(ast.parse('con.execute(f"SELECT {cols} FROM runs WHERE x")')) == ["SELECT  FROM runs WHERE x"]


def test_every_page_is_registered_in_app():
    listed = set(re.findall(r'st\.Page\("pages/([^"]+\.py)"', (ROOT / "app.py").read_text()))
    assert listed == {p.name for p in (ROOT / "pages").glob("*.py")}


def test_import_contracts_hold():
    """pyproject.toml's contracts: pages over ui over backend; the backend's layers; no Streamlit in backend."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


LAZY = re.compile(r"#\s*(lazy|here):")  # a function-level import says why it is there


def hidden_imports(source: str) -> list[tuple[int, str]]:
    """Imports inside functions whose line does not say why (`# lazy: …` for start-up time, `# here: …`)."""
    lines, found = source.splitlines(), []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if not isinstance(inner, (ast.Import, ast.ImportFrom)):
                    continue
                if not LAZY.search("\n".join(lines[inner.lineno - 1 : inner.end_lineno])):
                    found.append((inner.lineno, lines[inner.lineno - 1].strip()))
    return found


def test_no_import_inside_a_function_without_its_reason():
    code = [
        *sorted((ROOT / "backend").rglob("*.py")),
        *sorted((ROOT / "ui").glob("*.py")),
        *sorted((ROOT / "pages").glob("*.py")),
        ROOT / "app.py",
    ]
    assert [
        f"{path.relative_to(ROOT)}:{line}: {text}" for path in code for line, text in hidden_imports(path.read_text())
    ] == []


def test_the_hidden_import_check_catches_one():
    probe = "import os\n\ndef f():\n    from backend import x\n    import ray  # lazy: start-up time\n"
    assert hidden_imports(probe) == [(4, "from backend import x")]


def test_pages_stop_through_urls_stop_so_a_link_s_notices_still_show():
    """After `st.stop()` nothing more is drawn, so a page that stops early would hide the notices naming the link's
    unusable values (ui.urls.reported draws them last): pages and ui stop through `ui.urls.stop`, which draws them
    first."""
    code = [*sorted((ROOT / "ui").glob("*.py")), *sorted((ROOT / "pages").glob("*.py")), ROOT / "app.py"]
    stops = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in code
        if path.name != "urls.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "st.stop()" in line
    ]
    assert stops == []


def test_the_backends_root_holds_only_its_entry_points():
    assert {p.name for p in (ROOT / "backend").glob("*.py")} == {"__init__.py", "__main__.py", "api.py", "config.py"}


def test_every_page_has_a_view_of_the_same_name():
    assert {p.name for p in (ROOT / "pages").glob("*.py")} <= {
        p.name for p in (ROOT / "backend" / "views").glob("*.py")
    }


@pytest.mark.parametrize(
    "command", [["check", "--output-format", "concise"], ["format", "--check"]], ids=["lint", "format"]
)
def test_ruff_finds_nothing(command):
    """The house rules (pyproject.toml's [tool.ruff]): the rule set and the formatting, line length 120."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "ruff"), *command, "."], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_the_one_private_streamlit_patch_still_applies():
    """ui/streamlit_private.py is the only place that touches Streamlit's private API; it was written for one
    version."""
    assert streamlit_private.still_applies() == []
    private = [
        p.relative_to(ROOT)
        for p in [*(ROOT / "ui").glob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "app.py"]
        if re.search(r"streamlit\.(runtime|web\.server|elements\.lib)", p.read_text())
    ]
    assert [str(p) for p in private] == ["ui/streamlit_private.py"]


CONNECTION_API = re.compile(r"\bcon\.(execute|executemany|sql|register|begin|commit)\b|\.fetch(all|one|numpy|df)\(")


@pytest.mark.parametrize(
    "path",
    [*sorted((ROOT / "backend" / "views").glob("*.py")), *sorted((ROOT / "pages").glob("*.py")), ROOT / "app.py"],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_pages_and_views_never_use_a_connections_api(path):
    """They pass the session's connection to store functions; only store/ executes on it."""
    assert not CONNECTION_API.search(path.read_text())


def test_the_connection_check_catches_a_query():
    assert CONNECTION_API.search('rows = con.execute("SELECT 1").fetchall()')
    assert not CONNECTION_API.search("frame = store_runs.listing(con, dataset_id)")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports from, at any depth."""
    tree = ast.parse(path.read_text())
    found = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return found | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}


def test_tests_share_helpers_through_tests_helpers_not_through_each_other():
    """What tests share lives in tests/helpers/ (or is a conftest fixture): a test module imported by another runs
    its own module-level code there and ties the two files' fixtures together."""
    borrowed = {
        f"{path.name} imports {module}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for module in imported_modules(path)
        if re.fullmatch(r"tests\.(conftest|test_\w+)", module)
    }
    assert borrowed == set()
