"""Passages that are never an answer: boilerplate, table lines glued together, lines cut out of sentences."""

from __future__ import annotations

import re

_BOILERPLATE = re.compile(
    r"^(?:in the following|in the next section|in (?:the )?future work|in this section|"
    r"the rest of this paper|this paper is organi[sz]ed|see (?:section|appendix|table|figure|fig)|"
    r"(?:figure|fig\.|table|algorithm|listing)\s*[a-z]?\d+\s*[:.|]|acknowledg|"
    r"(?:section|appendix)\s+[a-z]?\d|published as a (?:conference|workshop|journal) paper|preprint\b|"
    r"under review\b)", re.IGNORECASE)
_REFERENCE = re.compile(
    r"\b(?:arXiv|Proceedings|Proc\.|In Proc|pp\.|doi:|ISBN|Association for Computational|"
    r"Conference on|Workshop on|URL|https?://)", re.IGNORECASE)
_AUTHOR_LIST = re.compile(r"(?:[A-Z][a-z]+,\s+(?:[A-Z]\.\s*)+(?:,|and)\s*){2,}|"
                          r"(?:\b[A-Z][a-z]+\s+[A-Z][a-z]+,\s+){3,}")


_REFERENCE_START = re.compile(r"(?:[A-Z][\w'’-]+,\s+(?:[A-Z]\.\s*)+(?:,\s*(?:and\s+)?|and\s+)){2,}")
"""Two or more "Surname, I." at the start of a sentence: a reference list's author list."""


def _boilerplate(sentence: str) -> bool:
    """Headings' and captions' kind of text, signposts ("In the following…") and entries of a reference list.

    Text that never answers a question.
    """
    s = sentence.strip()
    if _BOILERPLATE.match(s) or re.search(r"(?:\.\s?){4,}", s):  # a heading, or a contents line's leader dots
        return True
    if len(s.split()) >= 3 and not re.search(r"[a-z\d]", s) and re.search(r"[A-Z]{2}", s):
        return True  # a title or heading in capitals: "RETRIEVAL MEETS LONG CONTEXT LARGE LANGUAGE"
    if _REFERENCE.search(s) and (re.search(r"\b(?:19|20)\d\d[a-z]?\b", s) or _AUTHOR_LIST.search(s)):
        return True
    if _REFERENCE_START.match(s):
        return True  # "Johnson, J., Douze, M., and Jégou, H. Billion-scale …": an entry of the references
    return bool(_AUTHOR_LIST.search(s)) and len(re.findall(r"\b(?:19|20)\d\d\b", s)) >= 1 \
        and s.count(",") >= 4


def _tabular(sentence: str) -> bool:
    """Table lines glued together: more than a fifth of the tokens are figures."""
    tokens = sentence.split()
    figure = re.compile(r"[$(]*-?\d[\d,.]*\)?%?")
    figures = sum(bool(figure.fullmatch(t)) for t in tokens)
    amount = re.compile(r"[$(]*-?\d{1,3}(?:,\d{3})+(?:\.\d+)?\)?|\(\d[\d,.]*\)")  # 383,115 (30)
    row_ends = sum(bool(amount.fullmatch(a)) and b[:1].isupper()
                   for a, b in zip(tokens, tokens[1:], strict=False))
    return len(tokens) >= 8 and (figures / len(tokens) > 0.3 or row_ends >= 2)


def _dangling(line: str) -> bool:
    """A line cut out of running text.

    It starts inside a sentence (a lower-case word) or stops inside one (on an article: "the", "a", "an").

    A table row or a signature line does neither; "of predicting factuality using …" and "… answering task,
    the" are the middle of a sentence a page wrapped.
    """
    first, last = line.split()[0], line.split()[-1]
    return bool(re.match(r"[(\[;,]*[a-z]", first)) or last.lower() in ("the", "a", "an")
