"""Filling an ellipsis: the slot of the previous question that a fragment names, replaced by it.

"And in 2023?", "And BNSF's?", "And the ORQA baseline?" (:func:`fill_slot`, used by
:mod:`rag.engines.contextualize`).
"""

from __future__ import annotations

import re

from rag.engines.item_slots import for_name_slot, item_subject_slot, listed_slot
from rag.engines.phrases import _AUX, _NOUN_END, _PREPOSITIONS, _WH_PP, _YEAR, YEARS_ONLY, _bare, topics
from rag.text import QUESTION_WORDS, STOPWORDS


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

    Tried in order: a year ("2023", "in 2023"), a counted noun ("how many nurses"), a model's size ("the 7B
    version" for "Self-RAG 13B"), the phrase with the
    same preposition and the same kind of word or the same head ("in Paris" for "in Berlin", "per Class B
    share" for "per average equivalent Class A share"), the subject's name ("GEICO"), a noun phrase of the
    same owner with the same head ("its fair value" for "the carrying value of Berkshire's investment"),
    another possessor ("Lubrizol's revenues in 2024"), the possessed noun ("Berkshire's revenue"), a noun
    phrase with the same head noun ("the manufacturing businesses" for "service businesses"); a name and a
    phrase together ("GraphRetriever on NaturalQuestions" for "T5 (large)" and "on WebQuestions"); last, a
    line item, a listed pair, or the name a question ends on (:mod:`rag.engines.item_slots`).
    """
    for slot in (_wh_slot, _year_slot, _count_slot, _size_slot, _phrase_slot, _name_and_phrase_slot,
                 _sibling_slot, _name_slot, _owned_head_slot, _possessor_slot, _bare_possessor_slot,
                 _possessed_slot, _head_slot, _subject_slot, listed_slot, item_subject_slot, for_name_slot):
        found = slot(frag, prev, owner)
        if found is not None:
            return found
    return None


_LEADING_WH = re.compile(rf"^(?:(?:{'|'.join(_PREPOSITIONS)})\s+(?:which|what)\s+[\w-]+|where|when)"
                         rf"(?=\s+(?:{_AUX})\b)", re.I)


def _wh_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    """"In which city" after "At which conference was X published": "In which city was X published"."""
    m = _LEADING_WH.match(prev)
    if not _WH_PP.fullmatch(frag) or m is None:
        return None
    return frag[:1].upper() + frag[1:] + prev[m.end():], f"“{m.group(0)}” with “{frag}”"


_YEAR_BEFORE = re.compile(r"^(?:(?:in|for|during|and)\s+)*(?:the\s+)?(?:(?:year|one)\s+before|"
                          r"(?:previous|prior|preceding)\s+year|a\s+year\s+(?:earlier|before)|year\s+earlier)$",
                          re.I)
"""An ellipsis that asks about the year before the previous question's ("And the year before?")."""


def _year_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    years = _YEAR.findall(prev)
    if _YEAR_BEFORE.match(frag.strip()) and years:
        frag = str(int(years[-1]) - 1)  # "And the year before?" after "… in 2024": 2023
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


_OPPOSITE = {"with": "without", "without": "with", "before": "after", "after": "before"}
"""Prepositions whose phrases fill each other's slot ("And with retrieval?" after "… without retrieval?")."""


def _phrase_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    words = frag.split()
    first = words[0].lower() if words else ""
    if first not in _PREPOSITIONS or len(words) < 2:
        return None
    spans = list(re.finditer(rf"\b{first}\s+", prev, re.I)) or \
        list(re.finditer(rf"\b{_OPPOSITE.get(first, first)}\s+", prev, re.I))  # "with …" for "without …"
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


_NAME_AND_PHRASE = re.compile(rf"([A-Z][\w.-]*(?:\s+[A-Z\d][\w.-]*){{0,2}}(?:\s+\([\w\s.-]+\))?)\s+"
                              rf"((?:{'|'.join(_PREPOSITIONS)})\s+\S.*)")
"""A fragment naming two slots: a name, then a phrase ("GraphRetriever on NaturalQuestions")."""


def _name_and_phrase_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    """Two slots at once: the phrase with the same preposition, then the subject (or the named owner).

    "How about GraphRetriever on NaturalQuestions?" after "… what exact match does T5 (large) get on
    WebQuestions".
    """
    m = _NAME_AND_PHRASE.fullmatch(frag.strip())
    if m is None or m.group(1) in prev:
        return None
    first = m.group(2).split()[0].lower()
    if not re.search(rf"\b{first}\s+", prev, re.I):
        return None
    phrased = _phrase_slot(m.group(2), prev, owner)
    if phrased is None or phrased[0] == prev:
        return None
    named = _subject_slot(m.group(1), phrased[0], owner) or _name_slot(m.group(1), phrased[0], owner)
    if named is None:
        return None
    return named[0], f"{named[1]} and {phrased[1]}"


_SIZE_FRAGMENT = re.compile(r"(?:the\s+)?(\d+(?:\.\d+)?[BMK])(?:[\s-]+(?:version|model|variant|one))?", re.I)
"""A model named by its size alone: "the 7B version", "the 13B model", "7B"."""


def _size_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    """"the 7B version" after "… does Self-RAG 13B achieve": the same model at that size ("Self-RAG 7B")."""
    m = _SIZE_FRAGMENT.fullmatch(frag.strip())
    old = re.search(r"\b([A-Z][\w.-]*(?:\s+[A-Z][\w.-]*){0,2})[\s-](\d+(?:\.\d+)?[BMK])\b", prev)
    if m is None or old is None or old.group(2).upper() == m.group(1).upper():
        return None
    new = prev[:old.start(2)] + m.group(1).upper() + prev[old.end(2):]
    return new, f"“{old.group(0)}” by “{prev[old.start():old.start(2)]}{m.group(1).upper()}”"


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
    tail = _NOUN_END.match(prev[at.end():])
    if tail and not re.search(rf"\s(?:{'|'.join(_PREPOSITIONS)})\s", f" {noun} "):
        # "And BNSF's revenues?" after "What were Berkshire's net earnings in 2024?": the year stays
        end = at.end() + _noun_end(prev, at.start(), tail.group(0))
        return prev[:at.start()] + frag.strip() + prev[end:], f"“{prev[at.start():end]}” by “{frag.strip()}”"
    # "What about Lubrizol's revenues in 2024?" after "What were Precision Castparts' revenues …"
    return prev[:at.start()] + frag, f"“{owner}” by “{named.group(1)}”"


_POSSESSOR_NP = re.compile(r"\b(?:the\s+(?:[a-z][\w-]*\s+){0,3}[a-z][\w-]*|"
                           r"[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*)['’]s\b(?!\s+(?:(?:19|20)\d\d\s+)?(?:Form\s+)?(?:10-[KQ]|annual\s+report|filing)\b)")
"""A possessor in a question ("the insurance segment's", "BNSF's"), not a filer ("Berkshire's 2024 10-K")."""


def _bare_possessor_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    """"BNSF's" alone after "… what were the insurance segment's identifiable assets …": the possessor."""
    if not re.fullmatch(r"[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*['’]s", frag.strip()):
        return None
    found = list(_POSSESSOR_NP.finditer(prev))
    if not found:
        return None
    old = found[-1]
    return prev[:old.start()] + frag.strip() + prev[old.end():], f"“{old.group(0)}” by “{frag.strip()}”"


def _possessed_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    if not owner or (own := re.match(rf"{re.escape(owner)}['’]s\s+", frag)) is None:
        return None
    # "Berkshire's revenue" after "What were Berkshire's net earnings in 2024?" (a name of any length)
    noun = frag[own.end():]
    at = re.search(rf"{re.escape(owner)}['’]s\s+", prev)
    tail = _NOUN_END.match(prev[at.end():]) if at else None
    if not at or not tail:
        return None
    end = _noun_end(prev, at.start(), tail.group(0))
    return prev[:at.end()] + noun + prev[at.end() + end:], f"“{prev[at.end():at.end() + end]}” by “{noun}”"


def _noun_end(prev: str, owner_at: int, tail: str) -> int:
    """The length of the possessed noun phrase ``tail`` of the possessor at ``owner_at`` in ``prev``.

    After "do", "does" or "did" the last word is the verb: "did TTI's revenues decline in 2024".
    """
    if re.search(r"\b(?:do|does|did)\s+$", prev[:owner_at]) and " " in tail:
        return tail.rindex(" ")
    return len(tail)


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
_ELLIPSIS_NP = re.compile(r"(?:the\s+(?:[\w.-]+\s+){0,4}[\w.-]+|"
                          r"[A-Z][\w.+-]*(?:\s+[\w.+-]+){0,2}(?:\s+\([\w\s.-]+\))?)"
                          r"(?:\s+[a-z]+ed\s+(?:on|with|in|by|for|from)\s+(?:[\w.+-]+\s+){0,3}[\w.+-]+)?")
"""What a fragment names in place of a subject: "the ORQA baseline", "T5 (large)", "the 7B model",
"BM25+DPR trained on multiple datasets"."""


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


_MEASURING_SUBJECT = re.compile(r"^(.*?\b(?:do|does|did)\s+)(.+?)"
                                r"(\s+(?:reach|get|score|achieve|obtain|attain|post|report|perform)\b.*)$")
"""A question split at the subject of a verb of measuring ("… does the state of the art reach")."""


def subject_slot(frag: str, prev: str) -> tuple[str, str] | None:
    """``prev`` with the subject of its "do" and verb replaced by ``frag``, whatever ``frag`` is, or None.

    For "How does BART on its own do there?": the fragment is the subject by the question's own form.
    """
    m = _MEASURING_SUBJECT.match(prev) or _DO_SUBJECT.match(prev)
    if m is None or m.group(2).lower() == frag.strip().lower() or m.group(2).lower() in STOPWORDS:
        return None
    return m.group(1) + frag.strip() + m.group(3), f"“{m.group(2)}” by “{frag.strip()}”"


_CAP = r"[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*"
_NAME_LIST = re.compile(rf"{_CAP}(?:\s*,\s*{_CAP})*,?\s+(?:and|or)\s+{_CAP}")


def _swap_name(prev: str, old: str, new: str) -> str:
    """``prev`` with the name ``old`` (and its possessive) replaced by ``new``.

    A list of names it is one of ("PacifiCorp, MidAmerican Energy and NV Energy") is replaced whole.
    """
    at = re.search(rf"\b{re.escape(old)}(?=['’]s\b|\b)", prev)
    if at is None:
        return prev
    for names in _NAME_LIST.finditer(prev):
        if names.start() <= at.start() and at.end() <= names.end():
            return prev[:names.start()] + new + prev[names.end():]
    return prev[:at.start()] + new + prev[at.end():]
