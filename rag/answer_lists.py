"""Counted lists.

"What are its four query types?" asks for four items, and a passage answers it only when it lists them
("Inference, Comparison, Temporal and Null").
"""

from __future__ import annotations

import re

_COUNTED_Q = re.compile(r"^(?:what|which)\s+(?:are|were)\s+(?:the\s+|its\s+|their\s+|"
                        r"(?:the\s+)?[\w.-]+(?:\s+[\w.-]+){0,5}?['’]s\s+)?"
                        r"(two|three|four|five|six|seven|eight|nine|ten|[2-9])\s+[a-z]"
                        r"|^(?:which|what)\s+(two|three|four|five|six|seven|eight|nine|ten|[2-9])\s+(?:[\w-]+\s+){1,4}?"
                        r"(?:do|does|did|are|were|have|has|had)\b", re.I)
"""A question that asks for a counted list: "What are the three quality aspects RAGAS measures?", "What are
the Lewis et al. RAG paper's two model variants?" (an owner of up to six words), "Which two LLMs did the
authors study?", "Which two big multinational rivals does the 10-K name?" (up to four words)."""
_COUNTS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_ITEM = (r"(?<![^\s,;:(\[])(?!(?i:including|such\s+as|like|namely|especially)\b)"
         r"[^\s,;:.()\[\]]+(?:\s+[^\s,;:.()\[\]]+){0,3}?")
"""One item of an enumeration: at most four words, no punctuation; "including X and Y" lists two, after a
comma that ends no item ("benefits of REALM, including interpretability and modularity")."""

_NAMED_ITEMS = re.compile(r"\b(?:two|three|four|five|six|seven|eight|nine|ten|[2-9])\s+(?:[\w-]+\s+){0,3}?"
                          r"(?:compan(?:y|ies)|firms|rivals|competitors|customers|suppliers|subsidiaries|brands|"
                          r"insurers|banks|benchmarks|datasets|models|baselines|universities|countries|states|"
                          r"cities|novels|books|films)\b", re.I)
"""A counted list of named things ("which two big multinational rivals", "which three Open-QA benchmarks"):
each item is a name."""


def list_count(question: str) -> int | None:
    """How many items a counted-list question asks for ("What are its four query types?" -> 4), or None."""
    m = _COUNTED_Q.search(" ".join(question.split()))
    if m is None:
        return None
    word = (m.group(1) or m.group(2)).lower()
    return int(word) if word.isdigit() else _COUNTS[word]


def enumeration(text: str, n: int, question: str = "") -> str | None:
    """The span of ``text`` that lists at least ``n`` items, or None.

    Items separated by commas with "and"/"or" before the last ("Inference, Comparison, Temporal and Null"),
    or numbered "(1) … (2) …". Each item is at most four words, with no punctuation in it; a name when
    ``question`` asks for named things (:data:`_NAMED_ITEMS`: "Sandvik and Kennametal", not "milling tools,
    … and tooling").
    """
    numbered = re.findall(r"\(\d\)|\(?\b[ivx]+\)|(?<![\w.])\d\)", text)
    if len(numbered) >= n:
        return text
    item = rf"(?=[A-Z0-9]){_ITEM}" if _NAMED_ITEMS.search(question) else _ITEM
    commas = "" if n <= 2 else rf"(?:{item},\s+){{{n - 2},}}"
    m = re.search(rf"{commas}{item},?\s+(?:and|or)\s+{item}(?=[.,;:)]|$)", text)
    return m.group(0).strip() if m else None
