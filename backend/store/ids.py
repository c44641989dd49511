"""Ids and search text as a person pastes them back: a copy from a page may bring along the invisible WORD JOINER
(U+2060) that the Markdown rule puts inside a URL or an e-mail address (backend.analysis.markdown) so that it is not
turned into a link, and the spaces around a selection. Every place that reads an id a person typed (the command
line, a URL, the notebook API, a search box) reads it through `pasted`."""

from __future__ import annotations

import re

JOINER = "\u2060"
RATER_ID = re.compile(r"[A-Za-z0-9._@+-]+")  # what a rating's rater id may hold: a name, an e-mail, a link's person
MAX_RATER_ID = 254  # an e-mail's longest


def pasted(text):
    """The text without word joiners and surrounding whitespace; None stays None.

    >>> pasted(" me@\u2060lab.org "), pasted(None)
    ('me@lab.org', None)
    """
    return None if text is None else str(text).replace(JOINER, "").strip()
