"""The one rule for showing outside text in Markdown: text from a URL, a user, a file, a dataset or a model
is escaped here before any page, message or exported Markdown report shows it.

Escaping punctuation is not enough. Streamlit's Markdown (remark-gfm), GitHub and most Markdown viewers
also turn bare `http://…`, `www.…` and `name@host.tld` into links *after* backslash escapes are resolved,
so `http\\://x` is still linked. A WORD JOINER (U+2060, invisible, and no character of a URL or an e-mail
address) is put inside each such pattern, so no autolink can start there; only there, so an id such as
`nli-zero-shot@1` is copied from a page as it is (and what reads an id strips a joiner: backend.store.ids).
"""

from __future__ import annotations

import re

from backend.store.ids import JOINER

_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:&])")  # & too: "&#58;" would decode to ":"
# Where a GFM autolink literal could start, in the text before escaping: a scheme's "://", "www." (any case), and
# the "@" of an e-mail address, which GFM links only when a dotted domain follows it (remark-gfm's
# `([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)`); "@1" or "@v2" is left alone.
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=[wW]{3})(?=\.)|(?<=@)(?=[-\w]+(?:\.[-\w]+)+)")
_CODE = re.compile(r"(`[^`\n]+`)")


def plain(text) -> str:
    r"""Text shown as it is in Markdown: no link, image, emphasis, HTML or Streamlit directive can be
    planted through it, and no bare URL or address becomes a link.

    >>> plain("see ![x](http://a.b/p.png) *now*") == "see \\!\\[x\\]\\(http\\:\u2060//a\\.b/p\\.png\\) \\*now\\*"
    True
    >>> plain("WWW.a.b").startswith("WWW" + JOINER), "@" + JOINER in plain("me@a.b"), plain("nli-zero-shot@1")
    (True, True, 'nli\\-zero\\-shot@1')
    """
    return _MARKDOWN.sub(r"\\\1", _AUTOLINK.sub(JOINER, str(text)))


_PLAIN_OPTION = re.compile(r"[\w \-/.+=→']*")


def option(value) -> str:
    r"""A widget option that Streamlit shows as Markdown and also writes into the URL as shown (pills,
    segmented controls, radios bound to the URL): unchanged when it cannot be read as markup (letters,
    digits, spaces and _ - / . + = → ', no "www."), so ids and labels keep their URL values; else `plain`.

    >>> option("my-data_2"), option("N→E"), option("[x](http://a.b)") == plain("[x](http://a.b)")
    ('my-data_2', 'N→E', True)
    """
    text = str(value)
    return text if _PLAIN_OPTION.fullmatch(text) and "www." not in text.lower() else plain(text)


def message(text) -> str:
    r"""An error message (which may quote a URL's or a file's value) shown as text, with its `code` spans
    kept: nothing inside a code span is rendered as a link or an image.

    >>> print(message("no example '[x](a.b)': run `python -m backend ingest`"))
    no example '\[x\]\(a\.b\)'\: run `python -m backend ingest`
    """
    return "".join(part if _CODE.fullmatch(part) else plain(part) for part in _CODE.split(str(text)))


def table_cell(value):
    """A value for a Markdown pipe table: text escaped as `plain` (pipes included), numbers as they are."""
    return plain(value).replace("\n", " ") if isinstance(value, str) else value
