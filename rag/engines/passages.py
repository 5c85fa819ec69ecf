"""Passages that are never an answer: boilerplate, table lines glued together, lines cut out of sentences."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.text import STOPWORDS

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


_SOURCE_REFS = re.compile(r"\s*\[\d+(?:\s*[,–-]\s*\d+)*\]")

_MARKDOWN = re.compile(r"^#{1,6}\s+|\*\*|__|`|\{%.*?%\}")


_FOOTNOTE_MARK = re.compile(r"(?:(?<=\s)|^)[\d†‡∗*§♢¶]{1,2}(?=[A-Z][a-z])")
"""A footnote mark a PDF glued to the name it marks: "1Google Research", "†University of Washington"."""


_AFFILIATION_MARK = re.compile(r"(\b[A-Z][a-z]+)\d{1,2}(?:[,∗†‡*§]\d?)*(?=[\s,]|$)")
"""Affiliation marks after an author's name: "Nelson F. Liu1∗ Kevin Lin2" (read only on an author line,
two or more names so marked, so that "Llama2" stays)."""


def _quotable(sentence: str) -> str:
    """A source sentence made fit to quote.

    Without the source's own ``[26]`` references (they would read as our citation markers), Markdown/Markdoc
    syntax, footnote marks glued to a name, and the affiliation marks of an author line.
    """
    return without_marks(_FOOTNOTE_MARK.sub("", _MARKDOWN.sub("", _SOURCE_REFS.sub("", sentence)))).strip()


def without_marks(text: str) -> str:
    """``text`` with the affiliation marks of an author line turned into commas.

    "Nelson F. Liu1∗ Kevin Lin2" -> "Nelson F. Liu, Kevin Lin": "Lin" then reads as the name it is. Unchanged
    unless two or more names are so marked ("Llama2" alone stays).
    """
    if len(_AFFILIATION_MARK.findall(text)) < 2:
        return text
    return _AFFILIATION_MARK.sub(r"\1,", text).rstrip(",")


def _labelled(lines: Sequence[str], pos: int) -> list[str]:
    """Line ``pos`` with the two or three caption lines under it, as a form prints a value above its label.

    A filing's cover page: "Delaware 47-0813844" above "State or other jurisdiction of", "incorporation or
    organization", "(I.R.S. Employer", "Identification No.)". Caption lines hold no digit, and one of them is
    parenthesised; the value line is short.
    """
    out = []
    for n in (2, 3, 4):
        under = lines[pos + 1:pos + 1 + n]
        if len(lines[pos]) > 60 or len(under) < n or any(re.search(r"\d", u) or len(u) > 60 for u in under):
            break
        if any(re.match(r"\(|.*\)$", u) for u in under):  # a caption is parenthesised: "(I.R.S. Employer"
            out.append(" ".join([lines[pos], *under]))
    return out


HEAD_WORDS = 16
"""Words the start of a sentence cut by a chunk's end must have to be quoted (with a trailing "…")."""


def cut_head(sentence: str) -> str:
    """The start of a sentence the chunk's end cut, quoted to its last whole clause word and "…".

    Trailing stop words and punctuation go ("… to retrieve the k − 1 Wikipedia chunks that" ends at
    "chunks"), so the quote never ends mid-phrase on "that" or "the".
    """
    toks = sentence.split()
    while toks and (toks[-1].lower().strip(",;:(") in STOPWORDS or not re.search(r"\w", toks[-1])):
        toks.pop()
    return " ".join(toks).rstrip(",;:(") + " …"
