"""Outside text that must never become a link or an image: the payloads, and how GitHub-flavoured Markdown would
link them."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

PORT = 9  # "discard": nothing listens there (test_hostile_browser checks)
HOST = f"127.0.0.1:{PORT}"
NAME = "plab-payload.test"  # for the payloads that cannot carry a port (www., e-mail)
PAYLOADS = {
    "markdown link": f"[Session expired - click here](http://{HOST}/link)",
    "markdown image": f"![x](http://{HOST}/image.png)",
    "bare URL": f"http://{HOST}/bare",
    "www URL": f"www.{NAME}/www",
    "angle autolink": f"<http://{HOST}/angle>",
    "e-mail": f"someone@{NAME}",
    "raw a": f'<a href="http://{HOST}/a">a</a>',
    "raw img": f'<img src="http://{HOST}/img.png">',
    "raw script": f'<script src="http://{HOST}/script.js"></script>',
}
PAYLOAD = " ".join(PAYLOADS.values())
RATER = f"www.{NAME}"  # rater ids allow letters, digits and . _ - @: both autolinkable shapes
MAIL_RATER = f"rater@{NAME}"


def autolinkable(markdown: str) -> list[str]:
    """The payloads' URL and address shapes left in Markdown once its backslash escapes are resolved: remark-gfm
    (Streamlit's renderer) links bare URLs, www. and e-mail addresses after resolving escapes, so escaping
    their punctuation does not stop it (markdown-it-py, below, splits the text there and misses this)."""
    resolved = re.sub(r"\\([^\w\s])", r"\1", markdown)
    return re.findall(rf"https?://{re.escape(HOST)}|www\.{re.escape(NAME)}|@{re.escape(NAME)}", resolved, re.I)


# Markdown rendered as GitHub does: tables, strikethrough, raw HTML, and bare URLs, www. and e-mail linked
GFM = MarkdownIt("gfm-like", {"linkify": True, "html": True})
GFM.linkify.tlds(["test"], True)  # the payloads' own name
