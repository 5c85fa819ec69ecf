"""Acronyms: the one a "what does X stand for" question asks about, and the words that spell it out."""

from __future__ import annotations

import re
from functools import lru_cache


def acronym_of(question: str) -> str | None:
    """The acronym a "what does X stand for" question asks about (its capitalised word), or None."""
    for w in re.findall(r"\b[A-Za-z][A-Za-z0-9-]*\b", question):
        letters = w.replace("-", "")
        capitals = len(letters) >= 2 and sum(ch.isupper() for ch in letters) >= max(2, len(letters) - 2)
        if (capitals or any(len(p) >= 2 and p.isupper() for p in w.split("-")[1:])) \
                and w.lower() not in ("what", "does"):
            return w  # "DPR", "REALM", "Self-RAG"
    m = re.search(r"\b(?:does|do|did)\s+(?:the\s+)?([A-Za-z][\w-]*)\s+(?:stands?|stood)\s+for\b", question)
    return m.group(1) if m else None  # "What does ip stand for?"


_SKIPPABLE = frozenset({"of", "for", "and", "the", "to", "in", "on", "with", "a", "an"})
"""Words an acronym's expansion may hold without giving it a letter ("Retrieval Augmented Generation
Assessment" spells RAGAS, "Language Model for Dialogue" keeps "for")."""


def _prefix_ends(pieces: list[str], target: str, at: int) -> set[int]:
    """Positions in ``target`` reachable from ``at`` when each hyphen piece gives a prefix of its letters.

    The first piece gives at least one letter ("REtrieval-Augmented" gives "rea" to "realm").
    """
    ends = {at}
    for k, piece in enumerate(pieces):
        ends = {pos + n for pos in ends for n in range(1 if k == 0 else 0, len(piece) + 1)
                if piece[:n] == target[pos:pos + n]}
    return ends


def _spelled(tokens: list[str], i: int, target: str, at: int, depth: int = 0) -> int | None:
    """How many tokens from ``i`` spell ``target[at:]`` out, or None when they cannot."""
    if at == len(target):
        return 0
    if i >= len(tokens) or depth > len(target) + 4:
        return None
    pieces = [p.lower() for p in tokens[i].split("-") if p]
    for end in sorted(_prefix_ends(pieces, target, at)):  # initials first: "Inference-Time Intervention"
        rest = _spelled(tokens, i + 1, target, end, depth + 1) if end > at else None
        if rest is not None:
            return rest + 1
    if tokens[i].lower() in _SKIPPABLE and at > 0:
        rest = _spelled(tokens, i + 1, target, at, depth + 1)
        if rest is not None:
            return rest + 1
    return None


def expansion(text: str, acronym: str) -> str | None:
    """The words of ``text`` that spell out ``acronym``, or None.

    Each word gives the acronym a prefix of its letters (REtrieval-Augmented Language Model gives REALM;
    words such as "of", "for", "and" may give nothing); the span starts with a capital and has at least
    two words.
    """
    target = re.sub(r"[^A-Za-z0-9]", "", acronym).lower()
    if len(target) < 2:
        return None
    for m in re.finditer(rf"(?<![\w-]){re.escape(acronym)}[`'\"”’]?\s*\(([^()]{{3,80}})\)", text, re.I):
        inner = re.findall(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*", m.group(1))
        if len(inner) >= 2 and _spelled(inner, 0, target, 0) == len(inner):
            return m.group(1).strip()  # "`ip` (inner product)": the expansion follows, in any case
    for m in re.finditer(rf"\(\s*{re.escape(acronym)}\s*[),;]", text):
        # "hypothetical document embeddings (HyDE)": the words just before the acronym in parentheses
        # spell it, in any case; they end where the parenthesis starts
        before = re.findall(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*", text[max(0, m.start() - 160):m.start()])
        for i in range(max(0, len(before) - len(target) - 3), len(before)):
            if _spelled(before, i, target, 0) == len(before) - i and _pieces(before[i:]) >= 2:
                return " ".join(before[i:])
    tokens = re.findall(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*", text)
    for i, token in enumerate(tokens):
        if not token[:1].isupper() or token.lower().replace("-", "") == target \
                or token.lower().startswith(target):
            continue
        used = _spelled(tokens, i, target, 0)
        if used and _pieces(tokens[i:i + used]) >= 2:  # "Chain-of-Verification" spells CoVe by its pieces
            return " ".join(tokens[i:i + used])
    return None


def _pieces(tokens: list[str]) -> int:
    """Words and hyphen pieces in ``tokens`` ("Chain-of-Verification" has three)."""
    return sum(len([p for p in t.split("-") if p]) for t in tokens)


@lru_cache(maxsize=4096)
def spelled_out(text: str, name: str) -> bool:
    """Whether ``name`` (or the name it is the possessive of) is an acronym that ``text`` spells out.

    An acronym has two to eight letters, digits or hyphens, two capitals at least. The DPR paper's title
    "Dense Passage Retrieval for Open-Domain …" is about DPR, though it never writes "DPR". Cached: every
    chunk of a document asks about the same head, and one answer costs about 0.1 ms.
    """
    name = re.sub(r"['’]s?$", "", name)  # "BNSF's" is the acronym BNSF
    if not re.fullmatch(r"[A-Za-z0-9-]{2,8}", name) or sum(ch.isupper() for ch in name) < 2:
        return False
    return expansion(text, name) is not None
