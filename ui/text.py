"""Showing text from a dataset, a file or a URL in Markdown as it is."""
from __future__ import annotations

import re

_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:])")


def plain(text) -> str:
    r"""Text from a dataset, a file or a URL, escaped so Markdown shows it as it is: no links, images,
    emphasis or directives can be planted through it.

    >>> print(plain("see ![x](http://a.b/p.png) *now*"))
    see \!\[x\]\(http\://a\.b/p\.png\) \*now\*
    """
    return _MARKDOWN.sub(r"\\\1", str(text))


_CODE = re.compile(r"(`[^`\n]+`)")


def message(text) -> str:
    r"""An error message (which may quote a URL's or a file's value) shown as text, but with its
    `code` spans kept: nothing inside a code span is rendered as a link or an image.

    >>> print(message("no example '[x](http://a.b)': run `python -m backend ingest`"))
    no example '\[x\]\(http\://a\.b\)'\: run `python -m backend ingest`
    """
    return "".join(part if _CODE.fullmatch(part) else plain(part) for part in _CODE.split(str(text)))
