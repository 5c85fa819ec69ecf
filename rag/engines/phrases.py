"""Phrase-level rules of contextualize_question: names, courtesy prefixes, fragments.

The slot an ellipsis replaces in the previous question (:mod:`rag.engines.slots`) is found by grammar
(prepositions, years, possessives, capitalised names), never by a list of topics.
"""

from __future__ import annotations

import re

from rag.text import DISCOURSE_WORDS, MONTHS, QUESTION_WORDS, STOPWORDS, lower_lead_ins

_COURTESY = re.compile(
    r"^\s*(?:(?:fair enough|makes sense|good to know|all right|noted|wonderful|"
    r"thanks(?: a lot| so much)?|thank you(?: so much| very much)?|thx|great|ok(?:ay)?|cool|nice|"
    r"perfect|awesome|got it|i see|sure|alright|interesting|understood|excellent|good|hello|hi|hey|"
    r"(?:a\s+)?(?:different|new|another|other)\s+(?:topic|subject|question|part\s+of\s+(?:the|this)\s+[\w-]+)|"
    r"unrelated(?:\s+question)?|on\s+another\s+note|moving\s+on(?!\s+to\b)|by\s+the\s+way|btw|separately|"
    r"(?:switching|changing)\s+(?:topics?|the\s+subject|gears))\b"
    r"[\s,.!;:-]*)+"
    r"(?:(?:and|also|now|so|then)\b[\s,]*)?", re.I)
"""A courtesy prefix ("Thanks!", "OK, different topic.", "Unrelated:", "Different part of the business:"),
with the "and" that may join it to the question."""
_ELLIPSIS = re.compile(r"^(?:and|but|also|so)?\s*(?:what|how)\s+about\s+(.+)$|^(?:and|but|also|so)\s+(.+)$"
                       r"|^(?:and\s+)?how\s+(?:well\s+)?(?:does|did|do)\s+(.+?)\s+(?:do|perform|fare|score)\s+there$",
                       re.I)
""""And in 2023?", "How about GEICO?", "And what about its revenue?", "How does BART do there?": the fragment
after the lead (the name, for "how does X do there")."""
_CLAUSE_START = re.compile(
    r"^(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could|has|have|had|"
    r"will|would|should|list|name|describe|explain|tell|give)\b"
    r"|^(?:by|in|to|for|from|at|on|with|under|since|until|after|before|during)\s+(?:what|which|whom|how)\b"
    r".*\b(?:is|are|was|were|do|does|did|has|have|had|will|would|can|could|should)\b", re.I)
"""A fragment that starts like a question is a whole question, not an ellipsis ("by how much has that cut
its emissions" too: a preposition, a question word, then a verb)."""
_WHOLE_CLAUSE = re.compile(r"^\S.*\s(?:is|are|was|were|has|have|had|do|does|did)\s.*"
                           r"\b(?:when|where|which|what|who|how\s+(?:many|much|long|old))\s*$", re.I)
"""A fragment with its own verb that ends on its question word: "And Buffett has been CEO since when"."""
_PREPOSITIONS = ("in", "for", "of", "at", "on", "during", "from", "to", "by", "with", "under", "over",
                 "after", "before", "since", "between", "among", "per")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_POSSESSIVE = re.compile(r"['’]s?$")
_NAME = re.compile(r"[\"“]([^\"”]{2,80})[\"”]"
                   r"|\b((?:[A-Z][\w'’.&+-]*|[A-Z0-9]{2,}[\w'’.&+-]*)"
                   r"(?:\s+(?:(?:in|of|on|for|and|the|to|de|van|von|&)\s+){0,2}[A-Z0-9][\w'’.&+-]*)*)")
_NOUN_END = re.compile(r"^(?:[\w'’-]+\s+){0,4}?[\w'’-]+(?=\s+(?:" + "|".join(_PREPOSITIONS) +
                       r"|do|does|did|is|are|was|were|have|has|had)\b|$)", re.I)


_INNER_POSSESSIVE = re.compile(r"(?:(?<=\w['’]s)|(?<=s['’]))\s+(?=[A-Z]\.(?:[A-Z]\.?)+|[A-Z]{2,}\b|"
                               r"[A-Z][a-z]+(?:ean|ian|ese|ish|an)\b)")
"""A possessive inside a capitalised span, before an acronym or an adjective of place ("NetJets' European
operations", "BHE's U.S. utilities"): the name ends there. "See's Candy" stays one name."""


def _bare(name: str) -> str:
    """``name`` without a possessive ending (Berkshire's -> Berkshire)."""
    return _POSSESSIVE.sub("", name.strip()) if re.search(r"['’]s?$", name) and len(name) > 2 else name


def _uncontracted(word: str) -> str:
    """``word`` in lower case without quotes around it or a contraction's ending ("What's" -> "what")."""
    return re.sub(r"['’](?:s|re|ve|ll|d)$", "", word.lower().strip("'’"))


def topics(text: str, *, possessives: bool = False) -> list[str]:
    """Names in ``text`` a follow-up may refer back to, in order, without possessive endings.

    Capitalised spans (joined over short lower-case words, as in "Lost in the Middle"), acronyms and quoted
    titles; question words and single stop words are not names, and neither is the first word of a
    question ("What", "Which"). With ``possessives`` only the names used in the possessive, a span
    such as "Vice Chairman of Berkshire's" giving "Berkshire".
    """
    found: dict[str, None] = {}
    for quoted, span in _NAME.findall(lower_lead_ins(text)):
        name = (quoted or span).strip(" .,-?")
        parts = name.split()
        while parts and _uncontracted(parts[0]) in STOPWORDS | QUESTION_WORDS | DISCOURSE_WORDS | MONTHS:
            parts = parts[1:]
        while parts and parts[-1].lower() in STOPWORDS and not (len(parts) > 1 and parts[-1].isupper()):
            parts = parts[:-1]
        joined = " ".join(parts)
        pieces = re.split(r"\s+(?:in|of|on|for|and|the|to)\s+", joined) if possessives and \
            re.search(r"\s(?:in|of|on|for|and|the|to)\s", joined) else [joined]
        # a possessive inside a span ends a name: "NetJets' European operations", "BHE's U.S. utilities"
        pieces = [p for piece in pieces for p in _INNER_POSSESSIVE.split(piece)]
        for piece in pieces:
            name = _bare(piece)
            if not name or (len(name.split()) == 1 and (name.lower() in STOPWORDS | QUESTION_WORDS
                                                        or len(name) < 3)):
                continue
            if possessives and not re.search(rf"{re.escape(name)}['’]s?(?:\s|$)", text):
                continue
            found.setdefault(name, None)
    return list(found)


def owners(text: str) -> list[str]:
    """The names ``text`` uses in the possessive ("Berkshire's insurance operations" -> "Berkshire")."""
    return topics(text, possessives=True)


def strip_courtesy(question: str, *, short: bool = False) -> tuple[str, str]:
    """(the question without a courtesy prefix, the prefix removed, "" when none).

    Only when a question of at least two words follows ("Thanks!" alone is left as it is), or one word
    with ``short`` (a follow-up: "Thank you! And Bosch?").
    """
    m = _COURTESY.match(question)
    if not m or not m.group(0).strip():
        return question, ""
    rest = question[m.end():].strip()
    if len(rest.split()) < (1 if short else 2) or not rest.strip(" ?.!"):
        return question, ""
    return rest[:1].upper() + rest[1:], m.group(0).strip()


_AUX = "is|are|was|were|do|does|did|has|have|had|can|could|will|would"
_WH_PP = re.compile(rf"(?:{'|'.join(_PREPOSITIONS)})\s+(?:which|what)\s+(?!(?:{_AUX})\b)[\w-]+"
                    rf"(?:\s+(?!(?:{_AUX})\b)[\w-]+)?", re.I)
"""A question word's phrase with no verb: "In which city", "For what purpose"."""


def _is_fragment(text: str) -> bool:
    """A turn that is only the changed slot of the previous question: "In 2023", "Bosch", "How many nurses".

    It starts with a preposition or is a short name or figure with no verb, or it is "how many/much"
    with a noun and no verb.
    """
    words = text.split()
    if not words or len(words) > 6:
        return False
    if re.match(r"^how\s+(?:many|much)\s+[\w-]+(?:\s+[\w-]+)?$", text, re.I) or _WH_PP.fullmatch(text):
        return True
    if _CLAUSE_START.match(text) or any(w.lower() in QUESTION_WORDS for w in words[1:3]):
        return False  # "In which state is it based?" is a question led by its preposition
    return words[0].lower() in _PREPOSITIONS or bool(_YEAR.fullmatch(text)) or \
        (len(words) <= 3 and bool(topics(text)) and " ".join(topics(text)).lower() == text.lower())


def _possessive(name: str) -> str:
    return name + ("’" if name.endswith("s") else "’s") if "’" in name else \
        name + ("'" if name.endswith("s") else "'s")


YEARS_ONLY = re.compile(r"(?:(?:19|20)\d\d|and|to|,|\s)+")
"""A "name" that is only years ("2018", "2022 and 2023"): a time, never a name that owns something, nor what
"it" or "they" means."""
