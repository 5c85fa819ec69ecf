"""Short names a document defines for the names a question uses.

Filings and papers name a thing once in full and then by a short form: "Precision Castparts Corp. (“PCC”)"
and later "PCC's revenues were $10.4 billion"; "Dense Passage Retriever (DPR)". A passage that uses the short
form is about the name the question gives, so the offline judgments read the short form as that name: each
of its index terms is followed by the full name's terms (:func:`expand`).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from functools import cache

from rag.text import terms

_QUOTED = re.compile(
    r"((?:[A-Z][\w&.’'-]*,?\s+(?:(?:of|and|for|&|the)\s+)?){0,6}[A-Z][\w&.’'-]*)"
    r"\s*\((?:the\s+|collectively,?\s+|together,?\s+)?[“\"]([A-Z][\w&.-]{1,15})[”\"]")
"""A name followed by its short form in quotes: Berkshire Hathaway Energy Company (“BHE”)."""
_INITIALS = re.compile(r"((?:[A-Z][\w-]*\s+){1,5}[A-Z][\w-]*)\s+\(([A-Z][A-Za-z]{1,7})\)")
"""A capitalised name followed by its acronym in brackets: Dense Passage Retriever (DPR)."""
_LOWER_INITIALS = re.compile(r"((?:[a-z][\w-]*\s+){1,5}[a-z][\w-]*)\s*\((?:the\s+)?[“\"]?"
                             r"([A-Z][A-Za-z]{1,6})[”\"]?\)")
"""A common noun phrase followed by its acronym: accumulated benefit obligation (“ABO”), dense passage
retriever (DPR); the acronym spells the initials of the phrase's last words."""
_LEGAL = ("inc", "corp", "corporation", "company", "co", "llc", "lp", "ltd", "plc", "group")
"""Words of a legal form, left out of a full name ("Berkshire Hathaway Energy Company" -> its first three)."""

Aliases = Mapping[str, tuple[str, ...]]
"""The index term of a short form -> the index terms of the full name it stands for."""


@cache
def legal_terms() -> frozenset[str]:
    """The index terms of the words of a legal form (:data:`_LEGAL`: "Inc", "Corp", "Group", …)."""
    return frozenset(t for word in _LEGAL for t in terms(word))


def _initials_match(name: str, short: str) -> bool:
    letters = "".join(w[0] for w in name.split() if w[0].isupper())
    return short.upper() == letters.upper() or short.upper() == letters[-len(short):].upper()


def _spelled_tail(name: str, short: str) -> str:
    """The last words of ``name`` whose initials spell ``short`` (legal forms left out), else ``name``.

    A page header runs into the sentence below it: "Burlington Northern Santa Fe Burlington Northern Santa Fe,
    LLC (“BNSF”)" defines "BNSF" as the last four words.
    """
    words = name.replace(",", " ").split()
    for i in range(len(words) - 1, -1, -1):
        kept = [w for w in words[i:] if w.lower().strip(".") not in _LEGAL]
        if kept and "".join(w[0] for w in kept).upper() == short.upper():
            return " ".join(words[i:])
    return name


def _lower_definition(phrase: str, short: str) -> tuple[str, str] | None:
    """(the last words of ``phrase`` whose initials ``short`` spells, ``short``), or None.

    "the accumulated benefit obligation" and "ABO" give ("accumulated benefit obligation", "ABO"); a plural
    acronym spells the singular's initials ("OEMs").
    """
    letters = short[:-1] if short.endswith("s") and len(short) > 2 else short
    words = phrase.split()
    if not 2 <= len(letters) <= len(words):
        return None
    tail = words[-len(letters):]
    return (" ".join(tail), short) if "".join(w[0] for w in tail).upper() == letters.upper() else None


def definitions(texts: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Every short form ``texts`` define, as :data:`Aliases` (the first definition of each wins)."""
    out: dict[str, tuple[str, ...]] = {}
    for text in texts:
        found = [(_spelled_tail(m.group(1), m.group(2)), m.group(2)) for m in _QUOTED.finditer(text)]
        found += [(m.group(1), m.group(2)) for m in _INITIALS.finditer(text)
                  if _initials_match(m.group(1), m.group(2))]
        found += [pair for m in _LOWER_INITIALS.finditer(text)
                  if (pair := _lower_definition(m.group(1), m.group(2)))]
        for name, short in found:
            short_terms = terms(short)
            full = tuple(t for t in terms(name) if t not in legal_terms())
            if len(short_terms) == 1 and full and short_terms[0] not in full:
                out.setdefault(short_terms[0], full)
    return out


def for_question(aliases: Aliases, names: Sequence[tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """The short forms of the question's ``names`` (each given as its index terms).

    A definition counts when the question's name is all in its full name ("Precision Castparts" in
    "Precision Castparts Corp.").
    """
    return {short: full for short, full in aliases.items()
            if any(name and set(name) <= set(full) for name in names)}


def expand(seq: Sequence[str], aliases: Aliases) -> list[str]:
    """``seq`` (index terms in order) with each short form followed by its full name's terms.

    And each full name of two or more terms, written out whole, followed by its short form: a page headed
    "Burlington Northern Santa Fe" is about "BNSF" as much as one that writes "BNSF".
    """
    if not aliases:
        return list(seq)
    by_last: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for short, full in aliases.items():
        if len(full) > 1:
            by_last.setdefault(full[-1], []).append((short, full))
    out: list[str] = []
    for i, t in enumerate(seq):
        out.append(t)
        out.extend(aliases.get(t, ()))
        for short, whole in by_last.get(t, ()):
            if i + 1 >= len(whole) and tuple(seq[i + 1 - len(whole):i + 1]) == whole:
                out.append(short)
    return out


class AliasMemo:
    """The short forms found for each recent question.

    So the answer check reads the answer as grading and generation read its passages (at most ``size``
    questions, oldest dropped first).
    """

    def __init__(self, size: int = 256) -> None:
        """An empty memo of at most ``size`` questions."""
        self._data: OrderedDict[str, dict[str, tuple[str, ...]]] = OrderedDict()
        self._size = size

    def add(self, question: str, found: Mapping[str, tuple[str, ...]]) -> None:
        """Remember ``found`` for ``question`` (merged with what was found before)."""
        merged = {**self._data.pop(question, {}), **found}
        self._data[question] = merged
        while len(self._data) > self._size:
            self._data.popitem(last=False)

    def get(self, question: str) -> dict[str, tuple[str, ...]]:
        """The short forms remembered for ``question`` ({} when none)."""
        return dict(self._data.get(question, {}))
