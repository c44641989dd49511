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
