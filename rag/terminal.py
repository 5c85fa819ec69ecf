"""Strings from data (file names, URLs, chunk text) made safe to print to a terminal or a result line."""

from __future__ import annotations

import re

_BIDI = "\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_BIDI}]")
_UNSAFE_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{_BIDI}]")


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def printable(text: object, *, keep_newlines: bool = False) -> str:
    r"""``text`` with its control characters escaped as Python does (``\x1b``, ``\n``, ``\u202e``).

    Terminal escape sequences (``ESC[31m`` colours the terminal, others move the cursor or retitle the
    window), line breaks that would split one result line in two, and bidirectional overrides that
    reorder what a name seems to say are all shown as text. ``keep_newlines`` keeps ``\n`` and ``\t``
    (a multi-line answer); everything else is the same. Any object is turned into ``str`` first.
    """
    return (_UNSAFE_BUT_LINES if keep_newlines else _UNSAFE).sub(_escape, str(text))
