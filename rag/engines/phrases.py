"""Phrase-level rules of contextualize_question: names, courtesy prefixes, fragments, ellipsis slots.

The slot an ellipsis replaces in the previous question is found by grammar (prepositions, years,
possessives, capitalised names), never by a list of topics.
"""

from __future__ import annotations

import re

from rag.text import DISCOURSE_WORDS, MONTHS, QUESTION_WORDS, STOPWORDS

_COURTESY = re.compile(
    r"^\s*(?:(?:fair enough|makes sense|good to know|all right|noted|wonderful|"
    r"thanks(?: a lot| so much)?|thank you(?: so much| very much)?|thx|great|ok(?:ay)?|cool|nice|"
    r"perfect|awesome|got it|i see|sure|alright|interesting|understood|excellent|good|hello|hi|hey)\b"
    r"[\s,.!;:-]*)+"
    r"(?:(?:and|also|now|so|then)\b[\s,]*)?", re.I)
"""A courtesy prefix, with the "and" that may join it to the question."""
_ELLIPSIS = re.compile(r"^(?:and|but|also|so)?\s*(?:what|how)\s+about\s+(.+)$|^(?:and|but|also|so)\s+(.+)$",
                       re.I)
""""And in 2023?", "How about GEICO?", "And what about its revenue?": the fragment after the lead."""
_CLAUSE_START = re.compile(
    r"^(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could|has|have|had|"
    r"will|would|should|list|name|describe|explain|tell|give)\b", re.I)
"""A fragment that starts like a question is a whole question, not an ellipsis."""
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


def topics(text: str, *, possessives: bool = False) -> list[str]:
    """Names in ``text`` a follow-up may refer back to, in order, without possessive endings.

    Capitalised spans (joined over short lower-case words, as in "Lost in the Middle"), acronyms and quoted
    titles; question words and single stop words are not names, and neither is the first word of a
    question ("What", "Which"). With ``possessives`` only the names used in the possessive, a span
    such as "Vice Chairman of Berkshire's" giving "Berkshire".
    """
    found: dict[str, None] = {}
    for quoted, span in _NAME.findall(text):
        name = (quoted or span).strip(" .,-?")
        parts = name.split()
        while parts and parts[0].lower().strip("'’") in STOPWORDS | QUESTION_WORDS | DISCOURSE_WORDS | MONTHS:
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


def _same_year(text: str, before: str) -> str:
    """"that year" / "the same year" read as the year of ``before`` ("in 2024"), when it names one."""
    year = _YEAR.search(before)
    if not year:
        return text
    return re.sub(r"\b(?:in\s+)?(?:that|the same)\s+year\b", f"in {year.group(0)}", text)


def _head_noun_refs(text: str, before: str) -> str:
    """"the hospital" after "Mount Sinai Hospital": a definite noun that heads an earlier name means it."""
    for name in topics(before):
        head = name.split()[-1]
        if len(name.split()) > 1 and head[:1].isupper() and head.isalpha():
            text = re.sub(rf"\bthe\s+{head.lower()}(?=['’]s\b|\b)", name, text)
    return text


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


def _word_kind(word: str) -> str:
    """``year``, ``name`` (capitalised) or ``word``: what kind of slot a phrase fills."""
    if _YEAR.fullmatch(word.strip(",.?")):
        return "year"
    return "name" if word[:1].isupper() else "word"


def _next_word(text: str, at: int) -> str:
    """The word of ``text`` at ``at``, skipping an article."""
    words = text[at:].split()
    if words and words[0].lower() == "the" and len(words) > 1:
        return words[1]
    return words[0] if words else ""



def fill_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    """(``prev`` with the slot the fragment ``frag`` names replaced, how, in words), or None.

    ``prev`` is the previous question without its final "?"; None when it has no such slot.

    Tried in order: a year ("2023", "in 2023"), a counted noun ("how many nurses"), the phrase with the
    same preposition and the same kind of word or the same head ("in Paris" for "in Berlin", "per Class B
    share" for "per average equivalent Class A share"), the subject's name ("GEICO"), a noun phrase of the
    same owner with the same head ("its fair value" for "the carrying value of Berkshire's investment"),
    another possessor ("Lubrizol's revenues in 2024"), the possessed noun ("Berkshire's revenue"), a noun
    phrase with the same head noun ("the manufacturing businesses" for "service businesses").
    """
    for slot in (_wh_slot, _year_slot, _count_slot, _phrase_slot, _sibling_slot, _name_slot, _owned_head_slot,
                 _possessor_slot, _possessed_slot, _head_slot, _subject_slot):
        found = slot(frag, prev, owner)
        if found is not None:
            return found
    return None


_AUX = "is|are|was|were|do|does|did|has|have|had|can|could|will|would"
_WH_PP = re.compile(rf"(?:{'|'.join(_PREPOSITIONS)})\s+(?:which|what)\s+(?!(?:{_AUX})\b)[\w-]+"
                    rf"(?:\s+(?!(?:{_AUX})\b)[\w-]+)?", re.I)
"""A question word's phrase with no verb: "In which city", "For what purpose"."""
_LEADING_WH = re.compile(rf"^(?:(?:{'|'.join(_PREPOSITIONS)})\s+(?:which|what)\s+[\w-]+|where|when)"
                         rf"(?=\s+(?:{_AUX})\b)", re.I)


def _wh_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    """"In which city" after "At which conference was X published": "In which city was X published"."""
    m = _LEADING_WH.match(prev)
    if not _WH_PP.fullmatch(frag) or m is None:
        return None
    return frag[:1].upper() + frag[1:] + prev[m.end():], f"“{m.group(0)}” with “{frag}”"


def _year_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    words = frag.split()
    if not (_YEAR.fullmatch(frag) or (len(words) == 2 and words[0].lower() in _PREPOSITIONS
                                      and _YEAR.fullmatch(words[1]))):
        return None
    year = _YEAR.search(frag)
    assert year is not None
    if len(_YEAR.findall(prev)) == 1:
        out = _YEAR.sub(year.group(0), prev, count=1)
    elif _YEAR.search(prev):
        out = re.sub(r"\b(?:19|20)\d\d\b(?!.*\b(?:19|20)\d\d\b)", year.group(0), prev)
    else:
        out = f"{prev} in {year.group(0)}"
    return out, f"the year by {year.group(0)}"


def _count_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    many = re.match(r"^how\s+(?:many|much)\s+(.+)$", frag, re.I)
    slot = re.search(r"\bhow\s+(?:many|much)\s+(.+?)(?=\s+(?:do|does|did|is|are|was|were|have|has|had|will|"
                     r"can)\b)", prev, re.I)
    if not many or not slot:
        return None
    return (prev[:slot.start(1)] + many.group(1) + prev[slot.end(1):],
            f"“{slot.group(1)}” by “{many.group(1)}”")


YEARS_ONLY = re.compile(r"(?:(?:19|20)\d\d|and|to|,|\s)+")
"""A "name" that is only years ("2018", "2022 and 2023"): a time, never a name that owns something, nor what
"it" or "they" means."""


def _phrase_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    words = frag.split()
    first = words[0].lower() if words else ""
    if first not in _PREPOSITIONS or len(words) < 2:
        return None
    spans = list(re.finditer(rf"\b{first}\s+", prev, re.I))
    kind = _word_kind(words[1] if words[1].lower() != "the" or len(words) < 3 else words[2])
    same = [sp for sp in spans if _word_kind(_next_word(prev, sp.end())) == kind] or \
        [sp for sp in spans if _phrase_head(prev, sp.end()) == words[-1].lower() and words[-1].islower()]
    names = [t for t in topics(frag) if not YEARS_ONLY.fullmatch(t)]  # "the 2018 index" names no owner
    if not same and kind == "name" and owner and names and owner in prev:
        # "And of Occidental?" after "What share of the outstanding Kraft Heinz stock did …": the name's slot
        return _swap_name(prev, owner, _bare(names[0])), f"“{owner}” by “{names[0]}”"
    spans = same or spans
    if not spans and (swapped := _same_head_phrase(words, prev)) is not None:
        return swapped
    if not spans:
        if owner and names:
            return _swap_name(prev, owner, _bare(names[0])), f"“{owner}” by “{names[0]}”"
        if not names:  # "And after compression?", "And at the end of 2023?": a modifier prev lacks
            return f"{prev} {frag}", f"nothing, adding “{frag}”"
        return None
    start = spans[-1].start()
    # a phrase ends at a preposition or a comma, not at the comma of a date ("at December 31, 2024, in …")
    nxt = re.search(r"\s(?:" + "|".join(_PREPOSITIONS) + r")\s|,(?!\s*(?:19|20)\d\d\b)",
                    prev[spans[-1].end():])
    inner = re.search(r"\s(?:" + "|".join(_PREPOSITIONS) + r")\s", " ".join(words[1:]))
    # a fragment with a phrase of its own ("for datasets that rely on the open web") takes the rest of
    # the previous question's clause
    end = spans[-1].end() + nxt.start() if nxt and not inner else len(prev)
    return prev[:start] + frag + prev[end:], f"the phrase “{prev[start:end]}” by “{frag}”"


def _same_head_phrase(words: list[str], prev: str) -> tuple[str, str] | None:
    """``prev`` with the modifier of the fragment's noun phrase (``words``) in its phrase of the same head.

    "with the 2018 index …" after "… using the 2016 index …" (a verb in ``prev``, not the preposition). None
    when ``prev`` has no "the <modifier> <head>" with that head and another modifier.
    """
    m = re.match(r"\w+\s+the\s+([\w-]+)\s+([a-z][\w-]*)$", " ".join(words[:4]))
    if m is None:
        return None
    mod, head = m.group(1), m.group(2)
    for at in re.finditer(rf"\bthe\s+([\w-]+)\s+{re.escape(head)}\b", prev):
        if at.group(1).lower() != mod.lower():
            return (prev[:at.start(1)] + mod + prev[at.end(1):],
                    f"“{at.group(0)}” by “the {mod} {head}”")
    return None


def _phrase_head(prev: str, at: int) -> str:
    """The last word of the phrase of ``prev`` from ``at`` to a preposition, a comma or the end.

    "share" for "average equivalent Class A share in 2024": "per Class B share" replaces that phrase.
    """
    rest = re.split(r",|\s(?:" + "|".join(_PREPOSITIONS) + r")\s", prev[at:], maxsplit=1)[0].split()
    return rest[-1].lower() if rest else ""


def _sibling_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    """"RAG-Token" after "… does RAG-Sequence get …": a name of the same family (first piece) is swapped."""
    m = re.fullmatch(r"([A-Z][\w.]*)([- ])([\w.-]+)", frag.strip())
    if not m:
        return None
    for other in re.finditer(rf"\b{re.escape(m.group(1))}{re.escape(m.group(2))}([\w.-]+)", prev):
        if other.group(1).lower() != m.group(3).lower():
            return prev[:other.start()] + frag.strip() + prev[other.end():], f"“{other.group(0)}” by “{frag}”"
    return None


def _name_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    names = topics(frag)
    if not (names and owner and frag.lower() == " ".join(names[0].split()).lower()):
        return None
    return _swap_name(prev, owner, names[0]), f"“{owner}” by “{names[0]}”"  # "How about GEICO?"


def _possessor_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    named = re.match(r"([A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*)['’]s\s", frag)
    if not owner or not named or named.group(1) == owner:
        return None
    at = re.search(rf"{re.escape(owner)}['’]s?\s", prev)
    if not at:
        return None
    noun = frag[named.end():].strip()
    if noun and prev[at.end():].lower().startswith(noun.lower()):
        # "And Kern River's system?" after "… does Northern Natural's system consist of": only the owner
        return _swap_name(prev, owner, named.group(1)), f"“{owner}” by “{named.group(1)}”"
    # "What about Lubrizol's revenues in 2024?" after "What were Precision Castparts' revenues …"
    return prev[:at.start()] + frag, f"“{owner}” by “{named.group(1)}”"


def _possessed_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    if not owner or (own := re.match(rf"{re.escape(owner)}['’]s\s+", frag)) is None:
        return None
    # "Berkshire's revenue" after "What were Berkshire's net earnings in 2024?" (a name of any length)
    noun = frag[own.end():]
    at = re.search(rf"{re.escape(owner)}['’]s\s+", prev)
    tail = _NOUN_END.match(prev[at.end():]) if at else None
    if not at or not tail:
        return None
    return prev[:at.end()] + noun + prev[at.end() + tail.end():], f"“{tail.group(0)}” by “{noun}”"


def _head_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    # "the manufacturing businesses" after "How many people did Berkshire's service businesses employ …";
    # "the 2022 Wildfire" after "How many acres did the 2020 wildfires … burn" (the head in either number)
    # "the GPT Score baseline" after "… did the GPT Ranking baseline reach": named modifiers too, when the
    # head is a common noun
    m = re.fullmatch(r"(?:the\s+)?((?:(?:[a-z][\w-]*|(?:19|20)\d\d)\s+){1,2}|(?:[A-Z][\w-]*\s+){1,2})"
                     r"([A-Za-z][\w-]*)", frag.strip())
    if not m or (m.group(1)[:1].isupper() and not m.group(2).islower()):
        return None
    head = m.group(2)
    word = r"[A-Z][\w-]*" if m.group(1)[:1].isupper() else r"[a-z][\w-]*|(?:19|20)\d\d"
    for at in re.finditer(rf"((?:\b(?:{word})\s+){{1,2}})(?i:{re.escape(head)})(?:e?s)?\b", prev):
        mods = at.group(1).split()
        while mods and mods[0].lower() in STOPWORDS | QUESTION_WORDS | {"many", "much"}:
            mods = mods[1:]
        if mods and " ".join(mods) != m.group(1).strip():
            start = at.start(1) + at.group(1).index(mods[0])
            old = prev[start:at.end()]
            new = f"{m.group(1).strip()} {head}"
            return prev[:start] + new + prev[at.end():], f"“{old}” by “{new}”"
    return None


def _owned_head_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    """"its fair value" (or "Berkshire's fair value") after "What was the carrying value of Berkshire's …".

    The owner is the previous question's already: only the noun phrase with the same head noun is replaced.
    """
    m = re.fullmatch(r"(?:its|their|([A-Z][\w.&-]*(?:\s+[A-Z][\w.&-]*){0,3})['’]s?)\s+([a-z].*)",
                     frag.strip())
    if m is None or (m.group(1) is not None and m.group(1) not in prev):
        return None
    return _head_slot(m.group(2), prev, owner)


_SPLIT_AT_SUBJECT = re.compile(rf"^(.*?\b(?:{_AUX})\s+)([A-Z][\w.-]*(?:\s+[A-Z][\w.-]*)*)(\s+[a-z].*)$")
"""A question split at its named subject: (up to the auxiliary, the name, the rest from the verb)."""


_DO_SUBJECT = re.compile(
    r"^(.*?\b(?:do|does|did|can|could|will|would)\s+)((?:the\s+)?[\w().@/-]+(?:\s+[\w().@/-]+){0,4}?)"
    rf"(\s+[a-z][\w-]*(?:\s+(?:{'|'.join(_PREPOSITIONS)}|according|across|than|the|a|an|\d)\b.*)?)$")
"""A question split at the subject of "do" and a verb: the subject ends on the word before the last verb-like
word that ends the question or precedes a preposition, an article or a number ("… does the full REALM model
reach", "… does Self-RAG 13B reach on ARC-Challenge")."""
_ELLIPSIS_NP = re.compile(r"the\s+(?:[\w.-]+\s+){0,4}[\w.-]+|"
                          r"[A-Z][\w.-]*(?:\s+[\w.-]+){0,2}(?:\s+\([\w\s.-]+\))?")
"""What a fragment names in place of a subject: "the ORQA baseline", "T5 (large)", "the 7B model"."""


def _subject_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    """"the question decomposition baseline" after "What score does FLAREdirect achieve on X": the subject.

    The previous question's named subject, or else the subject of its "do" and verb ("And the ORQA baseline?"
    after "… what zero-shot retrieval Recall@5 does the full REALM model reach?").
    """
    np_ = frag.strip()
    lower_np = re.fullmatch(r"the\s+(?:[a-z][\w-]*\s+){0,4}[a-z][\w-]*", np_)
    if lower_np and (m := _SPLIT_AT_SUBJECT.match(prev)):
        return m.group(1) + np_ + m.group(3), f"“{m.group(2)}” by “{np_}”"
    if not _ELLIPSIS_NP.fullmatch(np_) or (m := _DO_SUBJECT.match(prev)) is None:
        return None
    if m.group(2).lower() == np_.lower() or m.group(2).lower() in STOPWORDS:
        return None
    return m.group(1) + np_ + m.group(3), f"“{m.group(2)}” by “{np_}”"


def _swap_name(prev: str, old: str, new: str) -> str:
    """``prev`` with the name ``old`` (and its possessive) replaced by ``new``."""
    return re.sub(rf"\b{re.escape(old)}(?=['’]s\b|\b)", new, prev, count=1)
