"""Filling an ellipsis that asks for another measure of the same owner ("And its depreciation that year?").

Used by :mod:`rag.engines.contextualize` before the slots of :mod:`rag.engines.slots`.
"""

from __future__ import annotations

import re

from rag.engines.phrases import _AUX, _PREPOSITIONS, _YEAR
from rag.engines.slots import _year_slot
from rag.quantities import QUANTITY_WORDS
from rag.text import QUESTION_WORDS, STOPWORDS

_PREPS = "|".join(_PREPOSITIONS)

_MEASURE_FRAGMENT = re.compile(
    r"(?:(?:its|their|the)\s+)?(?P<np>(?:(?!(?:for|of|on|from|in|during|that)\s)[a-z][\w-]*\s+){0,3}[a-z][\w-]*)"
    r"(?P<pp>\s+(?:for|of|on|from)\s+(?:the\s+)?[a-z][\w-]*(?:\s+[a-z][\w-]*)?)?"
    r"(?P<when>\s+that\s+year|\s+(?:in|for|during)\s+(?:19|20)\d\d)?")
"""A fragment that asks for another measure of the same owner: "its depreciation and amortization that
year", "the case liabilities for property", "their operating expenses in 2023"."""
_NP_WORD = re.compile(r"[a-z][\w-]*|[A-Z]{2,}|and")
"""A word of a measure's noun phrase: a lower-case word, an acronym ("IBNR liabilities"), "and"."""


_NOT_IN_NP = STOPWORDS | QUESTION_WORDS | {"many", "much", "large"} | set(_AUX.split("|"))
"""Words before a measure that are no part of its noun phrase ("how large were the …")."""


def _quantity(word: str) -> bool:
    return word.lower() in QUANTITY_WORDS


def measure_slot(frag: str, prev: str) -> tuple[str, str] | None:
    """``prev`` with its measure replaced by the one the fragment ``frag`` asks for, or None.

    "And its depreciation and amortization that year?" after "… what capital expenditures does the segment
    data show for BNSF in 2024 …": the noun phrase that ends on a quantity word ("capital expenditures") is
    replaced, with the phrase after it of the fragment's preposition ("IBNR liabilities for casualty" by
    "case liabilities for property"); a year in the fragment replaces the previous question's. The owner
    stays, so "its" needs no antecedent. None when the fragment or ``prev`` names no measure, or the same one.
    """
    m = _MEASURE_FRAGMENT.fullmatch(frag.strip().rstrip("?.! "))
    if m is None or not any(_quantity(w) for w in m.group("np").split()) or \
            m.group("np").split()[0] in STOPWORDS | QUESTION_WORDS:
        return None
    words = list(re.finditer(r"[\w'’-]+", prev))
    at = next((i for i in range(len(words) - 1, -1, -1) if _quantity(words[i].group(0))
               and not words[i].group(0).endswith(("'s", "’s"))), None)
    if at is None:
        return None
    first = at
    while first > 0 and at - first < 3 and _NP_WORD.fullmatch(words[first - 1].group(0)) and \
            words[first - 1].group(0).lower() not in _NOT_IN_NP:
        first -= 1
    start, end = words[first].start(), words[at].end()
    if m.group("pp"):
        prep = m.group("pp").split()[0]
        after = re.match(rf"\s+{prep}\s+(?:the\s+)?[\w-]+(?:\s+(?!(?:{_PREPS})\b)[a-z][\w-]*)?", prev[end:])
        end += after.end() if after else 0
    new = m.group("np") + (m.group("pp") or "")
    if prev[start:end].lower() == new.lower():
        return None
    out = prev[:start] + new + prev[end:]
    when = (m.group("when") or "").strip()
    if _YEAR.search(when) and (year := _year_slot(when, out, None)) is not None:
        out = year[0]
    return out, f"“{prev[start:end]}” by “{new}”"
