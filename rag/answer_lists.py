"""Counted lists.

"What are its four query types?" asks for four items, and a passage answers it only when it lists them
("Inference, Comparison, Temporal and Null").
"""

from __future__ import annotations

import re

_COUNTED_Q = re.compile(r"^(?:what|which)\s+(?:are|were)\s+(?:the\s+|its\s+|their\s+|"
                        r"(?:the\s+)?[\w.-]+(?:\s+[\w.-]+){0,5}?['’]s\s+)?"
                        r"(two|three|four|five|six|seven|eight|nine|ten|[2-9])\s+[a-z]"
                        r"|^(?:which|what)\s+(two|three|four|five|six|seven|eight|nine|ten|[2-9])\s+[\w-]+\s+"
                        r"(?:do|does|did|are|were|have|has|had)\b", re.I)
"""A question that asks for a counted list: "What are the three quality aspects RAGAS measures?", "What are
the Lewis et al. RAG paper's two model variants?" (an owner of up to six words), "Which two LLMs did the
authors study?"."""
_COUNTS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_ITEM = r"[^\s,;:.()\[\]]+(?:\s+[^\s,;:.()\[\]]+){0,3}?"
"""One item of an enumeration: at most four words, no punctuation."""

def list_count(question: str) -> int | None:
    """How many items a counted-list question asks for ("What are its four query types?" -> 4), or None."""
    m = _COUNTED_Q.search(" ".join(question.split()))
    if m is None:
        return None
    word = (m.group(1) or m.group(2)).lower()
    return int(word) if word.isdigit() else _COUNTS[word]


def enumeration(text: str, n: int) -> str | None:
    """The span of ``text`` that lists at least ``n`` items, or None.

    Items separated by commas with "and"/"or" before the last ("Inference, Comparison, Temporal and Null"),
    or numbered "(1) … (2) …". Each item is at most four words, with no punctuation in it.
    """
    numbered = re.findall(r"\(\d\)|\(?\b[ivx]+\)|(?<![\w.])\d\)", text)
    if len(numbered) >= n:
        return text
    commas = "" if n <= 2 else rf"(?:{_ITEM},\s+){{{n - 2},}}"
    m = re.search(rf"{commas}{_ITEM},?\s+(?:and|or)\s+{_ITEM}(?=[.,;:)]|$)", text)
    return m.group(0).strip() if m else None
