"""The one safe way to show a string from data in a Markdown-rendering element, and links.

Every string that comes from data (file names, titles, URLs, chunk text, answers, questions,
sub-questions, reasons, error texts) reaches a Markdown-rendering element (``st.markdown``,
``st.caption``, alerts, labels, progress text, pill options, ``st.table`` cells) only through
:func:`safe`. Links are made only by :func:`link`, for http(s) URLs, with ``st.link_button``.

The bottom of the pages' shared helpers: it imports none of them.
"""

from __future__ import annotations

import re
import string
from urllib.parse import urlsplit

import streamlit as st

WORD_JOINER = "\u2060"
"""Invisible; put before ``http:``/``www.``/``@`` so GFM does not turn a bare URL into a link."""
_PUNCTUATION = frozenset(string.punctuation)  # CommonMark: any ASCII punctuation may be escaped
_AUTOLINK = re.compile(r"(?i)(?:https?|ftp|mailto|xmpp)(?=:)|www(?=\.)|@")


def safe(text: object, *, multiline: bool = False) -> str:
    """``text``, a string from data.

    As Markdown that shows it exactly as written and that the browser cannot act on: no image, link, HTML,
    LaTeX, emoji code or Streamlit directive.

    Every ASCII punctuation character is backslash-escaped (so ``![x](url)``, ``<img>``,
    ``[a]: url``, ``$x$`` and ``:red[x]`` stay text), and an invisible word joiner goes before
    ``http:``, ``www.`` and ``@``, which GFM would otherwise autolink. Line breaks become hard
    breaks when ``multiline``, spaces otherwise (labels and captions are one line).
    """
    value = "" if text is None else str(text)
    value = _AUTOLINK.sub(lambda m: WORD_JOINER + m.group(0), value)
    value = "".join("\\" + ch if ch in _PUNCTUATION else ch for ch in value)
    lines = value.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "  \n".join(lines) if multiline else " ".join(lines)


def code(text: object) -> str:
    """``text`` as a Markdown code span (shown verbatim, in monospace).

    Fenced with more backticks than it holds, so data cannot close the span early.
    """
    value = " ".join(str(text).splitlines())
    fence = "`" * (max((len(m) for m in re.findall(r"`+", value)), default=0) + 1)
    return f"{fence} {value} {fence}"


def web_url(url: str) -> str | None:
    """``url`` when it is an absolute http(s) URL with a host and no space or control character.

    (the only kind :func:`link` opens), else None.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return None if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url) else url


def link(url: str, *, key: str | None = None) -> None:
    """A button that opens ``url`` in a new tab, labelled with its host; the URL itself shown as text.

    A URL that is not http(s) gets no link, only the text.
    """
    st.caption(safe(url))
    if target := web_url(url):
        st.link_button(f"Open {safe(urlsplit(target).hostname)}", target,
                       icon=":material/open_in_new:", key=key)

