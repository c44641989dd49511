"""The one rendering rule, checked statically (issue 25): every argument that Streamlit renders as Markdown
— bodies of markdown, captions, alerts, toasts; widget labels and help; the options of radio, pills and
segmented controls — is a constant of the lab's own, a number, or text passed through the escaping
function (`plain` / `message`, backend.views.markdown). A new page cannot show outside text as Markdown
without this test naming the file and line."""

from __future__ import annotations

import ast
import html
import re
from pathlib import Path

import pytest

from backend.analysis.markdown import JOINER, plain
from tests.helpers.payloads import GFM, PAYLOAD, PAYLOADS, autolinkable

ROOT = Path(__file__).resolve().parent.parent

FILES = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "ui").glob("*.py"))]
# Streamlit calls whose first argument (body or label) is rendered as Markdown
RENDERS_FIRST = {
    "markdown",
    "caption",
    "error",
    "warning",
    "info",
    "success",
    "toast",
    "write",
    "title",
    "header",
    "subheader",
    "expander",
    "popover",
    "tabs",
    "checkbox",
    "toggle",
    "button",
    "download_button",
    "link_button",
    "page_link",
    "selectbox",
    "multiselect",
    "text_input",
    "text_area",
    "number_input",
    "slider",
    "select_slider",
    "pills",
    "segmented_control",
    "radio",
    "file_uploader",
    "metric",
    "status",
    "progress",
    "form_submit_button",
    "date_input",
    "spinner",
    "badge",
    "color_picker",
    "time_input",
}
RENDERED_KEYWORDS = {"body", "label", "help", "text", "caption", "captions"}
OPTIONS_AS_MARKDOWN = {"radio", "pills", "segmented_control"}  # their options are Markdown too (seen in Chromium)
ESCAPERS = {"plain", "message", "option"}
LAB_URLS = {"page_url"}  # a relative link to a page of the lab, its values url-encoded
NUMERIC = {"len", "int", "round", "float", "abs"}
NUMERIC_SPEC = set("dfFeEgGn%xXbo,_")
# Functions of the lab that return Markdown built only from constants and escaped text (their bodies are
# checked by the same rule below).
MARKDOWN_BUILDERS = {"label_badge", "passage_markdown", "_badge_line", "_cell_line"}
# Parameters a function shows as Markdown, trusted because every caller passes a constant of the lab's own
# (checked below: each call site's argument must itself pass the rule).
# st.html shows HTML as it is: its argument must come from an HTML escaper (html.escape, or the pairs' word
# diff, which escapes every word) or a constant.
HTML_ESCAPERS = frozenset({"escape", "diff_html"})
HTML_TRUSTED = {("pages/pairs.py", "member", "premise"), ("pages/pairs.py", "member", "hypothesis")}
TRUSTED_PARAMETERS = {
    ("ui/widgets.py", "require", "empty"),
    ("pages/imports.py", "uploaded", "label"),
    ("pages/imports.py", "show_problem", "title"),
    ("pages/nope.py", "pick", "label"),
    ("pages/projection.py", "pick", "label"),
    ("pages/pairs.py", "facet_filter", "label"),
    ("ui/export.py", "downloads", "suffix"),
}


class Checker:
    """Decides whether an expression can only produce the lab's constants, numbers or escaped text."""

    def __init__(self, tree: ast.Module, relative: str, escapers=frozenset(ESCAPERS), trusted=None):
        self.relative, self.escapers = relative, escapers
        self.trusted = TRUSTED_PARAMETERS if trusted is None else trusted
        self.module_constants = {
            t.id
            for node in tree.body
            if isinstance(node, ast.Assign)
            for t in node.targets
            if isinstance(t, ast.Name) and self._constant_data(node.value)
        }
        self.tree = tree
        self.functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
        self.scopes: dict[ast.AST, ast.AST] = {}  # each node's innermost function (ast.walk visits outer ones first)
        for scope in ast.walk(tree):
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                self.scopes.update((child, scope) for child in ast.walk(scope))

    def _constant_data(self, node) -> bool:
        """A literal built only of constants: "x", ("a", "b"), {"k": "v"}, ...; also plain(...) of anything."""
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return all(self._constant_data(e) for e in node.elts)
        if isinstance(node, ast.Dict):
            return all(k is None or self._constant_data(k) for k in node.keys) and all(
                self._constant_data(v) for v in node.values
            )
        return False

    def safe(self, node, seen=frozenset()) -> bool:
        if node is None or isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.JoinedStr):
            return all(self.safe(v, seen) for v in node.values)
        if isinstance(node, ast.FormattedValue):
            spec = "".join(v.value for v in getattr(node.format_spec, "values", []) if isinstance(v, ast.Constant))
            numeric = bool(spec and spec[-1] in NUMERIC_SPEC) or bool(set(spec) & {",", "_"})  # fails on text
            return numeric or self.safe(node.value, seen)
        if isinstance(node, ast.IfExp):
            return self.safe(node.body, seen) and self.safe(node.orelse, seen)
        if isinstance(node, ast.BinOp):
            return self.safe(node.left, seen) and self.safe(node.right, seen)
        if isinstance(node, ast.BoolOp):
            return all(self.safe(v, seen) for v in node.values)
        if isinstance(node, (ast.Tuple, ast.List)):
            return all(self.safe(e, seen) for e in node.elts)
        if isinstance(node, ast.Starred):
            return self.safe(node.value, seen)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self.safe(
                node.elt,
                seen
                | {g.target.id for g in node.generators if isinstance(g.target, ast.Name) and self.safe(g.iter, seen)},
            )
        if isinstance(node, ast.Call):
            return self._safe_call(node, seen)
        if isinstance(node, ast.Subscript):  # a module constant's entry, or a slice of safe text
            return self.safe(node.value, seen)
        if isinstance(node, ast.Name):
            return self._safe_name(node, seen)
        if isinstance(node, ast.Attribute):  # a module's constant, e.g. charts.NOTE (upper case by convention)
            return node.attr.isupper()
        return False

    def _safe_call(self, node: ast.Call, seen) -> bool:
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in self.escapers or name in NUMERIC or name in MARKDOWN_BUILDERS or name in LAB_URLS:
            return True
        if name in {"list", "tuple", "sorted"} and isinstance(node.func, ast.Name):
            return all(self.safe(a, seen) for a in node.args)
        if name == "map" and node.args:
            return self.formatter(node.args[0], seen)
        if isinstance(node.func, ast.Name) and node.func.id in self.functions:  # a helper of this file: its returns
            return self._safe_function(node.func.id, seen)
        if name == "join" and isinstance(node.func, ast.Attribute):
            return self.safe(node.func.value, seen) and all(self.safe(a, seen) for a in node.args)
        if name == "format" and isinstance(node.func, ast.Attribute):
            return (
                self.safe(node.func.value, seen)
                and all(self.safe(a, seen) for a in node.args)
                and all(self.safe(k.value, seen) for k in node.keywords)
            )
        if name in {"capitalize", "upper", "lower", "strip", "title", "items", "keys", "values"} and isinstance(
            node.func, ast.Attribute
        ):
            return self.safe(node.func.value, seen)
        if name == "get" and isinstance(node.func, ast.Attribute):  # a constant table's entry, or a safe default
            return self.safe(node.func.value, seen) and all(self.safe(a, seen) for a in node.args[1:])
        return False

    def formatter(self, node, seen=frozenset()) -> bool:
        """Whether a function (format_func, map's) returns only safe text: an escaper, a lambda whose body is
        safe, a helper of this file whose returns are, or a name bound only to such."""
        if isinstance(node, ast.Lambda):
            return self.safe(node.body, seen)
        if isinstance(node, ast.IfExp):
            return self.formatter(node.body, seen) and self.formatter(node.orelse, seen)
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
        if name in self.escapers:
            return True
        if isinstance(node, ast.Name) and name in self.functions:
            return self._safe_function(name, seen)
        if isinstance(node, ast.Name) and name not in seen:
            scope = self.scopes.get(node, self.tree)
            values = [
                v
                for target, v, where in _assignments(scope)
                if target == name and self.scopes.get(where, self.tree) is scope
            ]
            return bool(values) and all(self.formatter(v, seen | {name}) for v in values)
        return False

    def _safe_function(self, name: str, seen) -> bool:
        if name in seen:
            return True
        returns = [r.value for r in ast.walk(self.functions[name]) if isinstance(r, ast.Return)]
        return bool(returns) and all(self.safe(r, seen | {name}) for r in returns)

    def _safe_name(self, node: ast.Name, seen) -> bool:
        if node.id in seen or node.id in self.module_constants or node.id.isupper():
            return True
        scope = self.scopes.get(node, self.tree)
        if scope is not self.tree:
            args = scope.args
            params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
            if node.id in params:
                return (self.relative, getattr(scope, "name", "<lambda>"), node.id) in self.trusted
        values = [
            v
            for target, v, where in _assignments(scope)
            if target == node.id and self.scopes.get(where, self.tree) is scope
        ]  # this scope's own, not a nested function's
        return bool(values) and all(self.safe(v, seen | {node.id}) for v in values)


def _assignments(scope):
    """(name, value expression, the assigning node) for every assignment under `scope`; an unknowable value
    (a part of an unpacked call's result) is ast.Name("?"), which is never safe."""
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                yield from ((name, value, node) for name, value in _unpacked(target, node.value))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            yield node.target.id, node.value, node
        elif isinstance(node, (ast.For, ast.comprehension)):
            rows = node.iter.elts if isinstance(node.iter, (ast.Tuple, ast.List)) else None
            if isinstance(node.target, ast.Tuple) and rows and all(isinstance(r, ast.Tuple) for r in rows):
                for row in rows:  # a literal table: each name takes its column's cells
                    yield from ((name, value, node) for name, value in _unpacked(node.target, row))
            else:  # safe only when it iterates over something safe (constants)
                yield from ((t.id, node.iter, node) for t in ast.walk(node.target) if isinstance(t, ast.Name))
        elif isinstance(node, ast.NamedExpr):
            yield node.target.id, node.value, node


def _unpacked(target, value):
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, ast.Tuple):
        same = isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts)
        for i, part in enumerate(target.elts):  # a call's parts: as safe as the call (an escaper's are)
            part_value = value.elts[i] if same else value if isinstance(value, ast.Call) else ast.Name("?")
            yield from _unpacked(part, part_value)


def rendered_arguments(call: ast.Call):
    """The (what, expression) pairs of a Streamlit call that it renders as Markdown."""
    name = call.func.attr
    if call.args and name != "progress":  # progress(value, text=...): its first argument is a number
        yield "body/label", call.args[0]
    for keyword in call.keywords:
        if keyword.arg in RENDERED_KEYWORDS:
            yield keyword.arg, keyword.value
    if name in OPTIONS_AS_MARKDOWN:
        given = {k.arg: k.value for k in call.keywords}
        options = call.args[1] if len(call.args) > 1 else given.get("options")
        shown = given.get("format_func")
        if shown is None:
            yield "options", options
        else:
            yield "format_func", shown


def violations(source: str, relative: str) -> list[str]:
    tree = ast.parse(source)
    checker, html_checker = Checker(tree, relative), Checker(tree, relative, HTML_ESCAPERS, HTML_TRUSTED)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "html":
            found += [
                f"{relative}:{node.lineno}: html() {ast.unparse(a)[:120]}"
                for a in node.args[:1]
                if not html_checker.safe(a)
            ]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RENDERS_FIRST:
            if node.func.attr == "write" and not _streamlit_like(node.func.value):
                continue  # file.write(...), not st.write
            for what, expr in rendered_arguments(node):
                if not (checker.formatter(expr) if what == "format_func" else checker.safe(expr)):
                    found.append(f"{relative}:{node.lineno}: {node.func.attr}() {what}: {ast.unparse(expr)[:120]}")
        if isinstance(node, ast.FunctionDef) and node.name in MARKDOWN_BUILDERS:
            for ret in ast.walk(node):
                if isinstance(ret, ast.Return) and not checker.safe(ret.value):
                    found.append(f"{relative}:{ret.lineno}: {node.name} returns {ast.unparse(ret.value)[:120]}")
    return found


def _streamlit_like(receiver) -> bool:
    return not (isinstance(receiver, ast.Name) and receiver.id in {"file", "handle", "out", "registry", "sys"})


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_markdown_shows_only_constants_numbers_and_escaped_text(path):
    relative = str(path.relative_to(ROOT))
    assert violations(path.read_text(), relative) == []


@pytest.mark.parametrize("trusted, escapers", [(TRUSTED_PARAMETERS, ESCAPERS), (HTML_TRUSTED, HTML_ESCAPERS)])
def test_trusted_parameters_are_given_only_constants_or_escaped_text(trusted, escapers):
    """A parameter the rule trusts (e.g. require(..., empty=...)) is passed only safe text at every call."""
    checked = 0
    for path in FILES:
        relative = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text())
        checker = Checker(tree, relative, frozenset(escapers), trusted)
        for where, function, parameter in trusted:
            definition = checker.functions.get(function) if where == relative else None
            names = [a.arg for a in definition.args.args] if definition else []
            position = names.index(parameter) if parameter in names else None  # else keyword-only
            for node in ast.walk(tree):
                name = getattr(node, "func", None) and getattr(node.func, "attr", getattr(node.func, "id", ""))
                if not isinstance(node, ast.Call) or name != function:
                    continue
                given = [k.value for k in node.keywords if k.arg == parameter]
                given += node.args[position : position + 1] if position is not None else []
                for value in given:
                    checked += 1
                    call = f"{function}({parameter}={ast.unparse(value)[:80]})"
                    assert checker.safe(value), f"{relative}:{node.lineno}: {call}"
    assert checked >= len(trusted)


@pytest.mark.parametrize(
    "source, flagged",
    [
        ('st.caption(f"{run} rated")', True),
        ('st.caption(f"{plain(run)} rated, {n:,} items, {share:.1%}")', False),
        ("st.warning(exc)", True),
        ('st.error(f"{message(exc)}")', False),
        ("x = row.title\nst.markdown(x)", True),
        ("x = plain(row.title)\nst.markdown(x)", False),
        ('st.toast(f"Pinned: {title}")', True),
        ('st.selectbox(f"Run {name}", runs)', True),
        ('st.checkbox("Hide", help=f"from {path}")', True),
        ('st.pills("Cell", cells)', True),
        ('st.pills("Cell", cells, format_func=plain)', False),
        ('st.radio("By", ["a", "b"])', False),
        ('st.segmented_control("Dataset", names, format_func=lambda d: f"{d} ({n})")', True),
        ('st.info("Pick " + label)', True),
        ('st.info("Pick " + plain(label))', False),
        ("def f(text):\n    st.caption(text)", True),
        ("for name in names:\n    st.caption(name)", True),
        ('HELP = "fixed"\nst.caption(HELP)', False),
        ('st.html(f"<b>{name}</b>")', True),
        ('st.html(f"<b>{html.escape(name)}</b>")', False),
        ("a, b = diff_html(x, y)\nst.html(a)", False),
        ("a, b = load(x, y)\nst.html(a)", True),
    ],
)
def test_the_rule_catches_outside_text(source, flagged):
    assert bool(violations(source, "pages/x.py")) is flagged


@pytest.mark.parametrize("payload", [*PAYLOADS.values(), PAYLOAD, "WWW.Plab-Payload.test", "x@y.org and http://a.b/"])
def test_escaped_text_renders_without_links_in_a_gfm_renderer(payload):
    """Escaped text leaves no URL shape that remark-gfm would link, and a second Markdown renderer
    (markdown-it-py with GFM autolinks) shows it as the text itself."""
    assert autolinkable(plain(payload)) == []
    rendered = GFM.render(plain(payload))
    assert "<a" not in rendered and "<img" not in rendered and "<script" not in rendered
    shown = html.unescape(re.sub(r"<[^>]+>", "", rendered)).replace(JOINER, "").strip()
    assert shown == payload.strip()
    assert re.search("<a |<img|<script", GFM.render(payload))  # unescaped, it would have been live


def test_ids_are_shown_as_they_are_and_read_back_without_the_joiner_from_cli_api_and_search(real_store, tmp_path):
    """Only a real autolink shape gets the invisible joiner (an id like `nli-zero-shot@1` is copied as it is); an
    id copied with one (an e-mail shown on a page) is read without it by the command line, the notebook API and
    the search box."""
    from backend.api import Lab
    from backend.cli.main import main
    from backend.identity import roles
    from backend.store.access import session
    from backend.store.examples import Slice, slice_frame

    assert JOINER not in plain("nli-zero-shot@1") + plain("nope/RoBERTa-large/mnli-snli-anli-fever/1")
    assert plain("me@lab.org").replace("\\", "") == "me@" + JOINER + "lab.org"
    store = tmp_path / "lab.duckdb"
    assert main(["--store", str(store), "users", "add", "me@" + JOINER + "lab.org", "analyst"]) == 0
    assert roles.read(roles.path(store)) == {"me@lab.org": "analyst"}
    run = "nope/RoBERTa-large/mnli-snli-anli-fever/1"
    lab = Lab(real_store)
    assert len(lab.predictions(run[:5] + JOINER + run[5:])) == len(lab.predictions(run)) > 0
    with session(real_store) as con:
        found = slice_frame(con, Slice("nope", search="Ann" + JOINER), limit=None)
        assert len(found) == len(slice_frame(con, Slice("nope", search="Ann"), limit=None)) > 0
