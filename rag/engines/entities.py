"""Names in text: capitalised spans and quoted titles, found by a light rule-based entity finder."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from rag.text import DISCOURSE_WORDS, QUESTION_WORDS, STOPWORDS, lower_lead_ins, terms

_ENTITY = re.compile(
    r"(?:[\"“]([^\"”]{2,80})[\"”])"  # a quoted title
    r"|\b([A-Z][\w'’.&-]*(?:\s+(?:(?:of|de|van|von|la|le|du|da|del)\s+(?:the\s+)?)?"
    r"[A-Z0-9][\w'’.&-]*)*)")

_COMPOUND_TAIL = re.compile(
    r"-(?:based|labell?ed|related|driven|style|like|level|sized?|only|specific|free|augmented|generated|"
    r"annotated|trained|tuned|focused|oriented|centric|powered|enabled|owned|linked|weighted|dependent|"
    r"aware|guided|backed|listed|denominated|heavy|intensive|wide)$")
"""The adjective a hyphen joins to a name ("LIFO-based inventories", "GPT-4-labelled examples"): the name is
what comes before it."""


def entities(text: str) -> list[str]:
    """Capitalised spans and quoted titles in ``text``.

    (a light, rule-based entity finder), in order of appearance, without duplicates; single stop words ("The",
    "In") are dropped, and a possessive between two names splits them ("Berkshire's Occidental").
    """
    found: dict[str, None] = {}
    for quoted, span in _ENTITY.findall(lower_lead_ins(text)):
        name = (quoted or span).strip(" .,'’-")
        if span:  # a sentence-initial "Were", "Which" or "The" is no part of a name
            parts = name.split()
            while len(parts) > 1 and parts[0].lower() in STOPWORDS | QUESTION_WORDS | DISCOURSE_WORDS:
                parts = parts[1:]
            name = " ".join(parts)
        dropped = STOPWORDS | QUESTION_WORDS | DISCOURSE_WORDS
        # "Berkshire's Occidental preferred stock": the owner and what it owns are two names
        # "NetJets' European operations": a plural-looking name's bare apostrophe is a possessive too
        for part in (re.split(r"['’]s\s+(?=[A-Z])|(?<=s)['’]\s+(?=[A-Z])", name) if span else [name]):
            part = _COMPOUND_TAIL.sub("", part.strip(" .,'’-"))
            if not part or (len(part.split()) == 1 and (part.lower() in dropped or len(part) < 3)):
                continue
            found.setdefault(part, None)
    return list(found)


FILING_NAME = re.compile(r"\b(?:10-[KQ]|8-K|annual\s+report|filing|proxy\s+statement)$", re.I)
"""A name that is a filing ("Berkshire Hathaway's 2024 10-K"): where the answer is, not a name that a
passage must hold."""
FILER = re.compile(r"([A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*)['’]s?\s+(?:fiscal\s+)?(?:(?:19|20)\d\d\s+)?"
                   r"(?:Form\s+)?(?:10-[KQ]|8-K|annual\s+report|filing|proxy\s+statement)\b")
"""A filing and whose it is (group 1): "Berkshire Hathaway" in "Berkshire Hathaway's 2024 Form 10-K"."""
_FRAME_LEAD = re.compile(r"^(?:(?:In|From|Per|On|By|For|Within|According\s+to)\s+)+")


def _filings(text: str) -> Iterator[tuple[str, str]]:
    """(filer, the filing as named from the filer on) for each filing ``text`` names (:data:`FILER`).

    Without a leading "In" or "According to": ("Berkshire Hathaway", "Berkshire Hathaway's 2024 10-K").
    """
    for m in FILER.finditer(text):
        if filer := _FRAME_LEAD.sub("", m.group(1)):
            yield filer, m.group(0)[m.group(0).index(filer):]


def filers(text: str) -> list[str]:
    """Whose filings ``text`` names, in order, once each, without a leading "In" or "According to"."""
    return list(dict.fromkeys(filer for filer, _ in _filings(text)))


@lru_cache(maxsize=1024)
def filing_frames(question: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """(filer, frame terms) for each filing ``question`` names as where to look (:data:`FILER`).

    "According to Berkshire Hathaway's 2024 10-K, …" gives ("Berkshire Hathaway", the index terms of
    "According Berkshire Hathaway's 2024 10-K"): words that say where the answer is, which a chunk of that
    filing holds through its document's head, not in its text. Remembered per question: grading and
    extraction ask it for every chunk.
    """
    out = []
    for filer, name in _filings(question):
        lead = "according" if re.search(rf"\baccording\s+to\s+(?:the\s+)?{re.escape(name)}", question,
                                        re.I) else ""
        # its year stays a word of the question when the question says it again ("at year-end 2024")
        out.append((filer, frozenset(
            t for t in terms(f"{lead} {name}") if not re.fullmatch(r"(?:19|20)\d\d", t)
            or len(re.findall(rf"\b{t}\b", question)) == 1)))
    return tuple(out)
