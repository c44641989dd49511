r"""LaTeX tables that print inside the page: each column's width measured in points (Computer Modern's own
character widths, the font of the article class), the column separation (2\tabcolsep a column) counted, and the
largest layout taken at which the table fits \linewidth (345 pt in the article class; 550 pt on a landscape page).

A table whose cells all fit on one line keeps l and r columns. Otherwise every column becomes a paragraph column
(`p{}`, ragged right; numbers ragged left) whose width plus its 2\tabcolsep is a fraction of \linewidth, the
fractions summing to the line: a number keeps its width, a text column whose cells are long on average is at least
READABLE em wide (or its longest line, if shorter; where no layout allows that, its longest word up to WORD em), a
header asks for at most WORD em (it breaks where it must),
and the columns share what is left by their cells' mean width, as their content needs it (by the square root of the
longest line, a 2,386-row table's premises got 16% of the line and three short columns 8-9% each, and it ran to 948
landscape pages: issue 64, item 7). A word wider than its column (an id, a URL, a long token)
gets break points (\allowbreak) where it must break, so no cell is wider than its column.

Layouts, largest first: 10 pt, \small, \footnotesize and \scriptsize on a portrait page, then \footnotesize and
\scriptsize on a landscape one (pdflscape), the column separation shrinking with the font.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import pandas as pd

TEXT_WIDTH = 345.0  # pt: the article class's \textwidth at 10 pt (letter and A4 paper)
LANDSCAPE_WIDTH = 550.0  # pt: its \textheight on letter paper, the line of a landscape page (A4's is 598)
LONG_TABLE = 40  # rows past which the table is a longtable (it breaks across pages)
READABLE = 8.0  # em: the narrowest a wrapped text column is made (unless its longest line is narrower)
WORD = 6.0  # em: a wrapped text column is at least as wide as its longest word up to this width
MARGIN = 1.05  # every measured width is taken 5% wider: other fonts than Computer Modern, rounding
SAMPLE = 2_000  # cells a column's mean width is measured on
HEADER = 3.0  # em: a header wider than its column's cells breaks down to this (a True/False column under "adversarial")
BREAKS = re.compile(r"(?<=[_/\\\-.:,;=&?])")  # where a long word may break, with no hyphen: after _ / \ - . : , ; = & ?
PIECES = re.compile(r"(?<=[_/\\\-.:,;=&?])|\s+")  # what may not break inside: between those and white space

# Computer Modern Roman 10 pt (cmr10.tfm): each printable ASCII character's width in em; the escaped ones as
# LaTeX prints them (\_ \textless{} \textgreater{} \textbar{} \textbackslash{} ...) at most 0.778 em, an
# underscore 0.5 em. Anything else: 1 em.
CMR10 = (  # em, in the order of ASCII from the space to the tilde
    "0.333 0.278 0.5 0.833 0.5 0.833 0.778 0.278 0.389 0.389 0.5 0.778 0.278 0.333 0.278 0.5 0.5 0.5 0.5 "
    "0.5 0.5 0.5 0.5 0.5 0.5 0.5 0.278 0.278 0.778 0.778 0.778 0.472 0.778 0.75 0.708 0.722 0.764 0.681 "
    "0.653 0.785 0.75 0.361 0.514 0.778 0.625 0.917 0.75 0.778 0.681 0.778 0.736 0.556 0.722 0.75 0.75 "
    "1.028 0.75 0.75 0.611 0.278 0.5 0.278 0.5 0.278 0.278 0.5 0.556 0.444 0.556 0.444 0.306 0.5 0.556 "
    "0.278 0.306 0.528 0.278 0.833 0.556 0.5 0.556 0.528 0.392 0.394 0.389 0.556 0.528 0.722 0.528 0.528 "
    "0.444 0.5 1 0.5 0.5"
)
EM = dict(zip(map(chr, range(32, 127)), map(float, CMR10.split()), strict=True)) | {"_": 0.5, "|": 0.5}

ESCAPES = str.maketrans(
    {
        "\\": r"\textbackslash{}",
        "&": r"\&",
        "%": r"\%",
        "$": r"\$",
        "#": r"\#",
        "_": r"\_",
        "{": r"\{",
        "}": r"\}",
        "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}",
        "<": r"\textless{}",
        ">": r"\textgreater{}",
        "|": r"\textbar{}",
    }
)
SPACE = re.compile(r"\s+")
# What pdflatex prints with LaTeX's default set-up (UTF-8 input, OT1 fonts), found by compiling each character: ASCII,
# Latin-1 and Latin Extended-A but these, and this punctuation. Others (Greek, Vietnamese, CJK, ð, þ, «, ») stop it.
UNPRINTABLE = frozenset("«»ÐÞðþĄąĐđĘęĦħĮįĸĿŀŉŊŋŦŧŲųſ")
PRINTABLE = (
    frozenset(map(chr, range(32, 127)))
    | (frozenset(map(chr, range(0xA0, 0x180))) - UNPRINTABLE)
    | frozenset("‐‑‒–—―‖‘’“”†‡•…‰‱※‽⁄€™←↑→↓")
)


def printable(text: str) -> str:
    """The text with each character pdflatex cannot print by default written as its code point, [U+00F0]."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(ch if ch in PRINTABLE or ch.isspace() else f"[U+{ord(ch):04X}]" for ch in text)


def escape(text: str) -> str:
    """Text as LaTeX prints it literally: its special characters escaped, `--` kept two hyphens (not an en dash),
    every run of white space one space (a blank line would end the cell's paragraph), a character pdflatex cannot
    print as its code point (`printable`)."""
    return SPACE.sub(" ", printable(text).translate(ESCAPES)).replace("--", "-{}-").replace("--", "-{}-")


@dataclass(frozen=True)
class Layout:
    size: str  # the font size command ('' for the document's 10 pt)
    points: float  # that font's size
    wider: float  # how much wider its characters are, per point, than cmr10's (cmr9, cmr8, cmr7 are drawn wider)
    sep: float  # \tabcolsep, pt
    landscape: bool

    @property
    def line(self) -> float:
        return LANDSCAPE_WIDTH if self.landscape else TEXT_WIDTH

    def width(self, text: str) -> float:
        """The text's width in pt at this layout's font, with MARGIN."""
        return ems(text) * self.points * self.wider * MARGIN


LAYOUTS = (
    Layout("", 10, 1.0, 6, False),
    Layout("\\small", 9, 1.029, 5, False),
    Layout("\\footnotesize", 8, 1.063, 4, False),
    Layout("\\scriptsize", 7, 1.164, 3, False),
    Layout("\\footnotesize", 8, 1.063, 4, True),
    Layout("\\scriptsize", 7, 1.164, 2, True),
)


@dataclass(frozen=True)
class Fit:
    """A table's layout: its column format, the font and separation, and each wrapped column's text width in pt
    (empty when every column stays on one line); `fits` is False only when even the smallest layout is too narrow
    for the table's numbers and headers (it then overflows the line)."""

    spec: str
    layout: Layout
    widths: dict[str, float]
    fits: bool = True


def cells(frame: pd.DataFrame, numeric) -> pd.DataFrame:
    """Every cell as the table prints it, before escaping: numbers to 3 decimals, missing values as an en dash."""
    shown = {}
    for column in frame.columns:
        values = frame[column]
        if column in numeric:
            text = values.map(lambda v: f"{v:.3f}" if isinstance(v, float) else str(v))
        else:
            text = values.map(lambda v: printable(str(v)))
        shown[column] = text.where(values.notna(), "–")  # an en dash: missing
    return pd.DataFrame(shown, index=frame.index, columns=frame.columns)


def ems(text: str) -> float:
    """The text's width in em of cmr10 (EM), white space runs as one space."""
    return sum(EM.get(ch, 1.0) for ch in SPACE.sub(" ", text))


def typical(texts: pd.Series) -> float:
    """The texts' mean width in em (over at most SAMPLE of them, drawn evenly)."""
    if texts.empty:
        return 0.0
    step = max(len(texts) // SAMPLE, 1)
    return float(texts.iloc[::step].map(ems).mean())


def longest(texts: pd.Series) -> float:
    """The widest of the texts in em, measured among the 20 longest by characters."""
    if texts.empty:
        return 0.0
    return max(map(ems, texts[texts.str.len().nlargest(20).index]))


def fit(frame: pd.DataFrame, numeric) -> Fit:
    r"""The first of LAYOUTS at which the table fits \linewidth: on one line (l, r) if it can, else wrapped with
    every text column at least READABLE em wide; failing that, the first at which it fits with the text columns
    only as wide as their header's longest piece and their longest word (up to WORD em)."""
    shown = cells(frame, numeric)
    heads = {c: printable(str(c)) for c in frame.columns}
    cell = {c: longest(shown[c]) for c in frame.columns}  # em
    mean = {c: max(typical(shown[c]), 0.5) for c in frame.columns}  # em: what the column's cells need, on average
    head = {c: ems(heads[c]) for c in frame.columns}
    piece = {c: max(map(ems, PIECES.split(heads[c]))) for c in frame.columns}
    word = {c: longest(shown[c].str.split(PIECES).explode()) for c in frame.columns if c not in numeric}
    for readable in (READABLE, 0.0):
        for layout in LAYOUTS:
            scale = layout.points * layout.wider * MARGIN  # pt an em of cmr10 takes at this layout's font
            natural = {c: max(head[c], cell[c]) * scale for c in frame.columns}
            # a header breaks where it must (`breakable`): it asks for no more than its cells' width (at least HEADER
            # em, at most WORD em); READABLE is for columns whose cells are long on average, not for a short column
            # under a long header
            heading = {c: min(piece[c], WORD, max(cell[c], HEADER)) * scale for c in frame.columns}
            least = {
                c: max(heading[c], cell[c] * scale)
                if c in numeric
                else min(
                    natural[c],
                    max(heading[c], min(word[c], WORD) * scale, readable * layout.points * (mean[c] > READABLE)),
                )
                for c in frame.columns
            }
            room = layout.line - 2 * layout.sep * len(frame.columns)
            if sum(natural.values()) <= room:
                spec = "".join("r" if c in numeric else "l" for c in frame.columns)
                return Fit(spec, layout, {})
            if sum(least.values()) <= room:
                return wrapped(frame, numeric, layout, least, natural, room, mean)
    return wrapped(frame, numeric, layout, least, natural, room, mean, fits=False)


def wrapped(
    frame, numeric, layout: Layout, least: dict, natural: dict, room: float, mean: dict, fits: bool = True
) -> Fit:
    r"""Every column a p{} column: each at least `least`, at most `natural`, the columns sharing the room by their
    cells' `mean` width (water filling); widths written as fractions of \linewidth."""

    def share(level: float) -> dict[str, float]:
        return {c: min(natural[c], max(least[c], level * mean[c])) for c in frame.columns}

    low, high = 0.0, max(natural[c] / mean[c] for c in frame.columns) + 1
    for _ in range(60):  # bisection: the level at which the columns fill the room
        middle = (low + high) / 2
        low, high = (middle, high) if sum(share(middle).values()) < room else (low, middle)
    widths = share(low) if fits else least
    columns = []
    for column in frame.columns:  # 5 decimals, rounded down: at most 0.006 pt narrower than planned (MARGIN covers it)
        fraction = math.floor((widths[column] + 2 * layout.sep) / layout.line * 100_000) / 100_000
        align = "\\raggedleft" if column in numeric else "\\raggedright"
        columns.append(f">{{{align}\\arraybackslash}}p{{\\dimexpr {fraction:.5f}\\linewidth-2\\tabcolsep\\relax}}")
    return Fit("".join(columns), layout, widths, fits)


def breakable(text: str, width: float, layout: Layout) -> str:
    r"""The text escaped, each word wider than `width` pt given break points (\allowbreak) so that no piece between
    them is wider: after an underscore, slash or punctuation where it can, else between any two characters."""
    words = []
    for word in SPACE.sub(" ", text).split(" "):
        if len(word) * 1.028 * layout.points * layout.wider * MARGIN <= width or layout.width(word) <= width:
            words.append(escape(word))
            continue
        lines, line = [], ""
        for part in (piece for natural in BREAKS.split(word) for piece in cut(natural, width, layout)):
            if line and layout.width(line + part) > width:
                lines.append(line)
                line = ""
            line += part
        words.append("\\allowbreak{}".join(escape(piece) for piece in [*lines, line]))
    return " ".join(words)


def cut(word: str, width: float, layout: Layout) -> list[str]:
    """The word in pieces no wider than `width` pt (one character each at the least)."""
    pieces, piece = [], ""
    for ch in word:
        if piece and layout.width(piece + ch) > width:
            pieces.append(piece)
            piece = ""
        piece += ch
    return [*pieces, piece]


def packages(long: bool, layout: Layout, wrap: bool) -> list[str]:
    """The packages a table needs."""
    return ["booktabs", *(["longtable"] if long else []), *(["array"] if wrap else [])] + (
        ["pdflscape"] if layout.landscape else []
    )


def table(frame: pd.DataFrame, caption: str, label: str) -> tuple[str, list[str]]:
    r"""The table as LaTeX (booktabs rules, the caption and label; a longtable over LONG_TABLE rows) laid out by
    `fit`, and the packages it needs. `caption` is plain text (escaped here)."""
    numeric = list(frame.select_dtypes("number").columns)
    layout_fit = fit(frame, numeric)
    layout, widths = layout_fit.layout, layout_fit.widths
    shown = cells(frame, numeric)
    if widths:
        body = pd.DataFrame(
            {c: shown[c].map(lambda t, w=widths[c]: breakable(t, w, layout)) for c in frame.columns},
            index=frame.index,
        )
        body.columns = [breakable(printable(str(c)), widths[c], layout) for c in frame.columns]
    else:
        body = shown.map(escape)
        body.columns = [escape(str(c)) for c in frame.columns]
    long = len(frame) > LONG_TABLE
    tex = body.style.hide(axis="index").to_latex(
        hrules=True,
        caption=escape(caption),
        position_float=None if long else "centering",
        label=label,
        environment="longtable" if long else "table",
        column_format=layout_fit.spec,
    )
    setting = layout.size + (f"\\setlength{{\\tabcolsep}}{{{layout.sep:g}pt}}" if layout.sep != 6 else "")
    if setting and not long:  # inside the float: LaTeX sets every float's font back to \normalsize
        tex = tex.replace("\\begin{table}\n", f"\\begin{{table}}\n{setting}\n", 1)
    elif setting:
        tex = f"\\begingroup{setting}\n{tex}\\endgroup\n"
    if layout.landscape:
        tex = f"\\begin{{landscape}}\n{tex}\\end{{landscape}}\n"
    if not layout_fit.fits:
        tex = (
            f"% Wider than a landscape page even at \\scriptsize: {len(frame.columns)} columns; "
            "drop some columns or split the table.\n" + tex
        )
    return tex, packages(long, layout, bool(widths))
