"""An answer's caveats, told apart from its text, one short reason each (for the pages to show one a line).

``finalize_with_caveat`` puts ``Caveat: <reason> and <reason>.`` before the answer, and a caveat may carry
an earlier one in parentheses (``… (caveat: …)``). A reader wants each reason once, on a line of its own.
"""

from __future__ import annotations

import re

SHORT = 90
"""The most characters a caveat line holds; a longer reason is cut at a word and ends with ``…``."""
_PREFIX = re.compile(r"(?i)^\s*caveats?\s*:\s*")
_NESTED = re.compile(r"(?i)\(\s*caveats?\s*:")
_JOINS = re.compile(r"\s*(?:;|\n|\band\b(?= (?:the|only|web|time|no|\d)))\s*")


def _unnest(text: str) -> list[str]:
    """``text`` and every ``(caveat: …)`` inside it, as separate strings (parentheses balanced)."""
    out, rest = [], text
    while m := _NESTED.search(rest):
        depth, end = 1, len(rest)
        for i in range(m.end(), len(rest)):
            depth += {"(": 1, ")": -1}.get(rest[i], 0)
            if depth == 0:
                end = i
                break
        out.extend(_unnest(rest[m.end():end]))
        rest = rest[:m.start()] + rest[end + 1:]
    return [rest, *out]


def _short(reason: str) -> str:
    if len(reason) <= SHORT:
        return reason
    cut = reason[:SHORT - 1].rsplit(" ", 1)[0].rstrip(",;: ")
    return cut + "…"


def split(answer: str | None) -> tuple[list[str], str]:
    """``(caveats, text)``: the caveat reasons that open ``answer``, and the answer without them.

    Each reason is one short line (at most :data:`SHORT` characters), with no ``Caveat:`` prefix and
    no trailing full stop; nested caveats are lifted out and repeated reasons said once. An answer
    that opens with no caveat comes back whole, with no reason.
    """
    text = answer or ""
    reasons: list[str] = []
    while _PREFIX.match(text):
        head, _, text = text.partition("\n\n")
        for part in _unnest(_PREFIX.sub("", head)):
            for reason in _JOINS.split(part):
                reason = " ".join(reason.split()).strip(" .,;")
                if reason and reason.lower() not in (r.lower() for r in reasons):
                    reasons.append(reason)
        text = text.lstrip("\n")
    return [_short(r) for r in reasons], text
