"""Names in text: capitalised spans and quoted titles, found by a light rule-based entity finder."""

from __future__ import annotations

import re

from rag.text import DISCOURSE_WORDS, QUESTION_WORDS, STOPWORDS

_ENTITY = re.compile(
    r"(?:[\"“]([^\"”]{2,80})[\"”])"  # a quoted title
    r"|\b([A-Z][\w'’.&-]*(?:\s+(?:(?:of|de|van|von|la|le|du|da|del)\s+(?:the\s+)?)?"
    r"[A-Z0-9][\w'’.&-]*)*)")


def entities(text: str) -> list[str]:
    """Capitalised spans and quoted titles in ``text``.

    (a light, rule-based entity finder), in order of appearance, without duplicates; single stop words ("The",
    "In") are dropped, and a possessive between two names splits them ("Berkshire's Occidental").
    """
    found: dict[str, None] = {}
    for quoted, span in _ENTITY.findall(text):
        name = (quoted or span).strip(" .,'’-")
        if span:  # a sentence-initial "Were", "Which" or "The" is no part of a name
            parts = name.split()
            while len(parts) > 1 and parts[0].lower() in STOPWORDS | QUESTION_WORDS | DISCOURSE_WORDS:
                parts = parts[1:]
            name = " ".join(parts)
        dropped = STOPWORDS | QUESTION_WORDS | DISCOURSE_WORDS
        # "Berkshire's Occidental preferred stock": the owner and what it owns are two names
        for part in (re.split(r"['’]s\s+(?=[A-Z])", name) if span else [name]):
            part = part.strip(" .,'’-")
            if not part or (len(part.split()) == 1 and (part.lower() in dropped or len(part) < 3)):
                continue
            found.setdefault(part, None)
    return list(found)
