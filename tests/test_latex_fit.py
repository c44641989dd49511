"""LaTeX exports that print inside the page (issue 54, item 5): the report's tables compiled by a real pdflatex in
the article class (345 pt text width), with the packages the export's first line names, and the log read for
overfull boxes and errors."""

from __future__ import annotations

import re
import shutil
import subprocess

import pandas as pd
import pytest

from backend.store.access import session
from backend.views import explore, report
from tests.helpers.people import LOCAL

PDFLATEX = shutil.which("pdflatex")
needs_tex = pytest.mark.skipif(
    PDFLATEX is None,
    reason="pdflatex is not on PATH: install Debian's texlive-latex-recommended (scripts/test.sh does, as root) "
    "to compile the LaTeX exports",
)
ROBERTA = "nope/RoBERTa-large/mnli-snli-anli-fever/1"
BOW = "nope/BOW/mnli-snli-anli-fever/0"


def compiled(tex: str, folder) -> str:
    """The pdflatex log of the export in a minimal article document with the packages its comment lines name."""
    head = [line for line in tex.splitlines()[:3] if line.startswith("%")]
    packages = [
        name for line in head for names in re.findall(r"\\usepackage\{([^}]*)\}", line) for name in names.split(",")
    ]
    document = (
        "\\documentclass{article}\n"
        + "".join(f"\\usepackage{{{name.strip()}}}\n" for name in packages)
        + "\\begin{document}\n"
        + tex
        + "\n\\end{document}\n"
    )
    (folder / "tables.tex").write_text(document, encoding="utf-8")
    done = subprocess.run(
        [PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "tables.tex"],
        cwd=folder,
        capture_output=True,
        timeout=120,
    )
    log = (folder / "tables.log").read_text(encoding="latin-1")
    assert done.returncode == 0, log[-3000:]
    return log


@needs_tex
def test_a_wide_explore_table_and_a_small_numeric_one_print_inside_the_page(store_copy, tmp_path):
    """The issue's table: NOPE main's 2,386 rows with runs A and B (15 columns, premises up to 710 characters),
    and a short table of numbers beside ids and a URL with no break point and characters pdflatex cannot print,
    compiled together: no error, no line wider than its column, and the wrapped table's columns fill the line."""
    long_id = "sha256-" + "0123456789abcdef" * 8  # 135 characters, no break point
    small = pd.DataFrame(
        {
            "run": [ROBERTA, BOW, long_id],
            "source": ["https://example.org/" + "a" * 120, "local", "Þórr's 查 (χ)"],
            "accuracy": [0.81234, 0.5, 0.25],
            "n": [2386, 2386, 12],
        }
    )
    with session(store_copy) as con:
        where = explore.Slice("nope", (("split", ("main",)),), ROBERTA, BOW)
        wide = explore.slice_frame(con, where, limit=None).dropna(axis=1, how="all")
        report.pin(con, "table", "NOPE main", "dataset nope · n=2,386", report.table_json(wide), actor=LOCAL)
        report.pin(con, "table", "Runs", "dataset nope · n=3", report.table_json(small), actor=LOCAL)
        # a short table (a float) laid out at a smaller font: LaTeX sets a float's font back to \normalsize
        words = pd.DataFrame({f"c{i}": ["mmmmmmm"] * 3 for i in range(6)})
        report.pin(con, "table", "Wide words", "n=3", report.table_json(words), actor=LOCAL)
        tex = report.export_latex(report.items(con))
    assert wide.shape == (2_386, 15) and wide["input"].str.len().max() == 710
    log = compiled(tex, tmp_path)
    overfull = re.findall(r"Overfull \\hbox \(([\d.]+pt) too wide\)", log)
    assert not overfull and "\n! " not in log, overfull[:5]
    pages = int(re.search(r"Output written on tables\.pdf \((\d+) pages", log)[1])
    assert pages <= 800  # issue 64, item 7: columns sized by their content (1,343 pages when shared by the square root)
    assert "[U+00DE]órr's [U+67E5] ([U+03C7])" in tex  # what pdflatex cannot print by default is named, not an error
    first = tex.split("\\end{longtable}")[0]
    fractions = [float(f) for f in re.findall(r"p\{\\dimexpr ([0-9.]+)\\linewidth-2\\tabcolsep\\relax\}", first)]
    assert len(fractions) == 15 and 0.999 <= sum(fractions) <= 1.0  # each column's width plus 2\tabcolsep
    widest = dict(zip(wide.columns, fractions))
    assert max(widest, key=widest.get) == "input" and widest["input"] > 0.15  # the most room (12% before)
