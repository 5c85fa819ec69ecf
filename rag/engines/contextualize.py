"""The offline contextualize_question: a follow-up becomes a standalone question, and only a follow-up.

Four cases, tried in this order (each rule is about the question's grammar, not about any one corpus):

1. a **courtesy prefix** ("Thanks!", "Great, and …") is stripped;
2. **ellipsis** ("And in 2023?", "How about GEICO?", "What about its revenue?") becomes the previous
   standalone question with that slot replaced: the phrase with the same preposition, the year, the
   subject's name, or the possessed noun phrase;
3. **references** ("it", "its", "they", "them", "the company", "that paper", "these models") are replaced
   by the noun phrase they refer to in the latest turn that has one, keeping the sentence grammatical
   ("its subsidiaries" -> "Berkshire's subsidiaries", "many of them" -> "many of BNSF's employees");
4. anything else is **self-contained** and passes unchanged: no name or year is carried over.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.engines.base import StandaloneQuestion
from rag.engines.lexical import LexicalCore
from rag.models import Turn
from rag.text import QUESTION_WORDS, STOPWORDS

_COURTESY = re.compile(
    r"^\s*(?:(?:thanks(?: a lot| so much)?|thank you(?: so much| very much)?|thx|great|ok(?:ay)?|cool|nice|"
    r"perfect|awesome|got it|i see|sure|alright|interesting|understood|excellent|good|hello|hi|hey)\b[\s,.!;:-]*)+"
    r"(?:(?:and|also|now|so|then)\b[\s,]*)?", re.I)
"""A courtesy prefix, with the "and" that may join it to the question."""
_ELLIPSIS = re.compile(r"^(?:and|but|also|so)?\s*(?:what|how)\s+about\s+(.+)$|^(?:and|but|also|so)\s+(.+)$",
                       re.I)
""""And in 2023?", "How about GEICO?", "And what about its revenue?": the fragment after the lead."""
_CLAUSE_START = re.compile(
    r"^(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could|has|have|had|"
    r"will|would|should|list|name|describe|explain|tell|give)\b", re.I)
"""A fragment that starts like a question is a whole question, not an ellipsis."""
_PREPOSITIONS = ("in", "for", "of", "at", "on", "during", "from", "to", "by", "with", "under", "over", "after",
                 "before", "since", "between", "among")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_POSSESSIVE = re.compile(r"['’]s?$")
_SINGULAR_REF = re.compile(
    r"\b(?:(?:[Tt]he|[Tt]his|[Tt]hat|said)\s+(?:company|firm|business|group|corporation|paper|article|method|model|"
    r"approach|work|system|framework|technique|study|benchmark|dataset|retriever|report|filing)\b"
    r"|[Ii]t['’]s|[Ii]ts|[Ii]t)\b")
_PLURAL_REF = re.compile(
    r"\b(?:(?:[Tt]hese|[Tt]hose|[Tt]he)\s+(?:models|methods|papers|approaches|systems|companies|authors)\b"
    r"|[Tt]hey|[Tt]hem|[Tt]heir|[Tt]heirs)\b")
_NAME = re.compile(r"[\"“]([^\"”]{2,80})[\"”]"
                   r"|\b((?:[A-Z][\w'’.&+-]*|[A-Z0-9]{2,}[\w'’.&+-]*)"
                   r"(?:\s+(?:(?:in|of|on|for|and|the|to|de|van|von|&)\s+){0,2}[A-Z0-9][\w'’.&+-]*)*)")
_HOW_MANY = re.compile(r"\bhow\s+(?:many|much)\s+((?:[a-z-]+\s+){0,2}?[a-z-]+s)\b", re.I)
_COMMON_QUESTION_AT = 3.0
"""A question with no name of its own whose every content word has a BM25 idf below this (a word in
more than about 5 % of the chunks, like "results" or "limitations") says nothing about what it is
about, so it is read as asking about the latest topic."""
_NOUN_END = re.compile(r"^(?:[\w'’-]+\s+){0,4}?[\w'’-]+(?=\s+(?:" + "|".join(_PREPOSITIONS) +
                       r"|do|does|did|is|are|was|were|have|has|had)\b|$)", re.I)


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
        while parts and parts[0].lower().strip("'’") in STOPWORDS | QUESTION_WORDS:
            parts = parts[1:]
        while parts and parts[-1].lower() in STOPWORDS:
            parts = parts[:-1]
        joined = " ".join(parts)
        pieces = re.split(r"\s+(?:in|of|on|for|and|the|to)\s+", joined) if possessives and \
            re.search(r"\s(?:in|of|on|for|and|the|to)\s", joined) else [joined]
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
    if re.match(r"^how\s+(?:many|much)\s+[\w-]+(?:\s+[\w-]+)?$", text, re.I):
        return True
    if _CLAUSE_START.match(text):
        return False
    return words[0].lower() in _PREPOSITIONS or bool(_YEAR.fullmatch(text)) or \
        (len(words) <= 3 and bool(topics(text)) and " ".join(topics(text)).lower() == text.lower())


def _possessive(name: str) -> str:
    return name + ("’" if name.endswith("s") else "’s") if "’" in name else \
        name + ("'" if name.endswith("s") else "'s")


def _refers_inside(question: str, at: int) -> bool:
    """Whether the back-reference at ``at`` points inside ``question`` itself.

    As in "What is the retriever of RAG and how is it trained?": a name comes before it and a new clause
    ("and", "but", "or", a comma) starts between that name and the reference; or "they" after a plural
    noun of the question's own.
    """
    before = question[:at]
    if re.match(r"(?:they|them|their|theirs)\b", question[at:], re.I) and re.search(
            r"\b[a-z]{3,}s\b.*\b(?:when|if|because|while|as|that|which|who|whether|so)\s+$", before):
        return True  # "How do language models behave when they …": a plural noun of its own
    joins = [m.start() for m in re.finditer(r"\s(?:and|but|or)\s|[,;:]", before, re.I)]
    return bool(joins) and bool(topics(before[:joins[-1]]))


def _plural_focus(question: str, owner: str | None) -> str | None:
    """The plural noun phrase "they" or "them" means in a later turn, or None.

    What the question counts ("how many employees" -> "BNSF's employees"), or a plural it names in the
    possessive ("FLARE's authors", "the authors of FLARE").
    """
    m = _HOW_MANY.search(question)
    if m and m.group(1).lower() not in ("years", "times"):
        noun = m.group(1)
        if noun[:1].isupper() or (owner and owner.lower() in noun.lower()):
            return f"the {noun}"
        return f"{_possessive(owner)} {noun}" if owner else f"the {noun}"
    m = re.search(r"\b([A-Z][\w-]*(?:\s+[A-Z][\w-]*)*['’]s?\s+[a-z]+s)\b|\b(the\s+[a-z]+s\s+of\s+(?:the\s+)?"
                  r"[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*)", question)
    if m:
        return m.group(1) or m.group(2)
    if owner and re.search(r"\b(?:wrote|authors?|created|proposed|introduced)\b", question, re.I):
        return f"the authors of {owner}"  # "they" after "Who wrote In-Context RALM?"
    return None


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


class ContextualizeMixin(LexicalCore):
    """The offline engine's contextualize_question judgment."""

    def _antecedent(self, history: Sequence[Turn], question: str) -> tuple[str | None, int | None]:
        """(the main name of the latest earlier turn that has names ``question`` lacks, its 1-based turn).

        Of that turn's names, the one most earlier turns mention, then a possessor, then not a corpus word.
        """
        asked = [history[k].understood().lower() for k in range(len(history))]
        for n in range(len(history), 0, -1):
            text = history[n - 1].understood()
            names = list(dict.fromkeys(t for t in owners(text) + topics(text) if t.lower() not in question.lower()))
            if names:
                # the conversation's topic: the name most turns ask about, then the possessor, then a name
                # rather than a word the corpus uses everywhere ("LLM", "Wikipedia"), then the first one
                return max(names, key=lambda t: (sum(t.lower() in a for a in asked), t in owners(text),
                                                 not all(self.common_word(w) for w in t.split()),
                                                 -names.index(t))), n
        return None, None

    def _vague(self, question: str) -> bool:
        """No name and only common content words: the question leaves its topic implied."""
        weights = self.weighted_terms(question)
        return bool(weights) and not topics(question) and \
            all(w < _COMMON_QUESTION_AT for _, w in weights.values())

    def contextualize(self, question: str, history: Sequence[Turn]) -> StandaloneQuestion:
        """``question`` as a standalone question, given the thread's earlier turns (oldest first).

        A courtesy prefix is stripped; an ellipsis is filled in from the previous question; references are
        resolved to the latest name (or counted noun phrase) they can mean; a self-contained question is
        returned unchanged. The reasoning says what was done and from which 1-based turn.
        """
        asked, courtesy = strip_courtesy(question, short=bool(history))
        done = [f"dropped the courtesy “{courtesy}”"] if courtesy else []
        previous = history[-1].understood() if history else ""
        bare = asked.strip().rstrip("?.! ")
        m = _ELLIPSIS.match(bare)
        fragment = (m.group(1) or m.group(2) or "").strip() if m else (bare if _is_fragment(bare) else "")
        if fragment and previous:
            if _CLAUSE_START.match(fragment):
                asked = fragment[:1].upper() + fragment[1:] + "?"  # "And how is it trained?"
                done.append("dropped the leading conjunction")
            elif fragment:
                return self._fill_ellipsis(fragment, previous, len(history), history, done)
        standalone, carried, turn = self._resolve(asked, history)
        standalone = standalone[:1].upper() + standalone[1:]
        if carried:
            done.append(f"resolved “{carried[1]}” to “{carried[0]}” from turn {turn}")
        elif history and self._vague(asked) and not _SINGULAR_REF.search(asked):
            name, turn = self._antecedent(history, asked)
            if name:
                standalone = f"{asked.rstrip(' ?.!')} of {name}?"
                carried = (name, "")
                done.append(f"names no topic of its own, so it asks about “{name}” from turn {turn}")
        if not done:
            return StandaloneQuestion(question=question, reasoning=(
                "Stands alone: it refers to no earlier turn"
                + (f" and names its own topic ({', '.join(topics(question)[:3])})." if topics(question)
                   else ".")))
        return StandaloneQuestion(question=standalone, reasoning="; ".join(done)[:1].upper()
                                  + "; ".join(done)[1:] + ".").with_carry(
            [carried[0]] if carried else [], turn if carried else None)

    def _resolve(self, asked: str, history: Sequence[Turn]
                 ) -> tuple[str, tuple[str, str] | None, int | None]:
        """Replace the references of ``asked``; returns (text, (name, reference) or None, turn or None)."""
        refs = [r for r in list(_SINGULAR_REF.finditer(asked)) + list(_PLURAL_REF.finditer(asked))
                if not _refers_inside(asked, r.start())]
        if history:
            asked = _head_noun_refs(asked, history[-1].understood())
            asked = _same_year(asked, history[-1].understood())
        if not refs or not history:
            return asked, None, None
        name, turn = self._antecedent(history, asked)
        if name is None or turn is None:
            return asked, None, None
        before = history[turn - 1].understood()
        plural = _plural_focus(before, name) or name
        named = f"the {name}" if re.search(rf"\bthe\s+{re.escape(name)}\b(?!['’]|\s+[a-z])", before) else name

        def swap(m: re.Match) -> str:
            word = m.group(0)
            low = word.lower()
            if _refers_inside(asked, m.start()):
                return word
            if low in ("it's", "it’s"):
                return f"{name} is"
            if low == "its":
                return _possessive(name)
            if low == "it":
                return named
            if low in ("their", "theirs"):
                return _possessive(name)
            if low in ("they", "them"):
                return plural
            if low == "the authors":
                return f"the authors of {named}"
            if low.split()[-1] in ("paper", "article", "model", "method", "approach", "work", "system",
                                   "framework", "technique", "study", "benchmark", "dataset", "retriever",
                                   "report", "filing", "models", "methods", "papers", "approaches", "systems"):
                return f"the {name} {low.split()[-1]}"
            return named  # "the company", "the firm", "these companies"

        text = _PLURAL_REF.sub(swap, _SINGULAR_REF.sub(swap, asked))
        text = _same_year(text, before)
        said = refs[0].group(0)
        meant = plural if _PLURAL_REF.fullmatch(said) and said.lower() in ("they", "them") else name
        return text, (meant, said), turn

    def _fill_ellipsis(self, fragment: str, previous: str, turn: int, history: Sequence[Turn],
                       done: list[str]) -> StandaloneQuestion:
        """The previous question with the slot ``fragment`` names replaced (see the module docstring)."""
        prev = previous.strip().rstrip("?.! ")
        owner = (owners(prev) + topics(prev) or [None])[0]
        resolved, _, _ = self._resolve(fragment, history)
        frag = resolved.strip().rstrip("?.! ")
        words = frag.split()
        first = words[0].lower() if words else ""
        out = None
        how = ""
        if _YEAR.fullmatch(frag) or (first in _PREPOSITIONS and len(words) == 2 and _YEAR.fullmatch(words[1])):
            year = _YEAR.search(frag)
            assert year is not None
            if _YEAR.search(prev):
                out = _YEAR.sub(year.group(0), prev, count=1) if len(_YEAR.findall(prev)) == 1 else \
                    re.sub(r"\b(?:19|20)\d\d\b(?!.*\b(?:19|20)\d\d\b)", year.group(0), prev)
            else:
                out = f"{prev} in {year.group(0)}"
            how = f"the year by {year.group(0)}"
        elif (many := re.match(r"^how\s+(?:many|much)\s+(.+)$", frag, re.I)) and \
                (slot := re.search(r"\bhow\s+(?:many|much)\s+(.+?)(?=\s+(?:do|does|did|is|are|was|were|have|"
                                   r"has|had|will|can)\b)", prev, re.I)):
            out = prev[:slot.start(1)] + many.group(1) + prev[slot.end(1):]  # "And how many nurses?"
            how = f"“{slot.group(1)}” by “{many.group(1)}”"
        elif first in _PREPOSITIONS and len(words) > 1:
            # the previous question's phrase with the same preposition (and the same kind of word after
            # it: a year for a year, a name for a name), up to the next preposition
            spans = list(re.finditer(rf"\b{first}\s+", prev, re.I))
            kind = _word_kind(words[1] if words[1].lower() != "the" or len(words) < 3 else words[2])
            alike = [sp for sp in spans if _word_kind(_next_word(prev, sp.end())) == kind]
            spans = alike or spans
            if spans:
                start = spans[-1].start()
                nxt = re.search(r"\s(?:" + "|".join(_PREPOSITIONS) + r")\s|,", prev[spans[-1].end():])
                inner = re.search(r"\s(?:" + "|".join(_PREPOSITIONS) + r")\s", " ".join(words[1:]))
                # a fragment with a phrase of its own ("for datasets that rely on the open web") takes
                # the rest of the previous question's clause
                end = spans[-1].end() + nxt.start() if nxt and not inner else len(prev)
                out = prev[:start] + frag + prev[end:]
                how = f"the phrase “{prev[start:end]}” by “{frag}”"
            elif owner and topics(frag):
                out = self._swap_name(prev, owner, _bare(topics(frag)[0]))
                how = f"“{owner}” by “{topics(frag)[0]}”"
        elif topics(frag) and owner and " ".join(words).lower() == " ".join(topics(frag)[0].split()).lower():
            out = self._swap_name(prev, owner, topics(frag)[0])  # "How about GEICO?"
            how = f"“{owner}” by “{topics(frag)[0]}”"
        elif owner and (named := re.match(r"([A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*)['’]s\s", frag)) and \
                named.group(1) != owner and (m_own := re.search(rf"{re.escape(owner)}['’]s?\s", prev)):
            # "What about Lubrizol's revenues in 2024?" after "What were Precision Castparts' revenues …"
            out = prev[:m_own.start()] + frag
            how = f"“{owner}” by “{named.group(1)}”"
        elif owner and re.match(rf"{re.escape(owner)}['’]s\s", frag):
            # "Berkshire's revenue" after "What were Berkshire's net earnings in 2024?"
            noun = frag.split(None, 1)[1]
            m = re.search(rf"{re.escape(owner)}['’]s\s+", prev)
            if m:
                tail = _NOUN_END.match(prev[m.end():])
                if tail:
                    out = prev[:m.end()] + noun + prev[m.end() + tail.end():]
                    how = f"“{tail.group(0)}” by “{noun}”"
        if out is None:  # a noun phrase the previous question has no slot for
            subject = f" of {owner}" if owner and owner.lower() not in frag.lower() else ""
            out = f"What about {frag}{subject}"
            how = f"asked about “{frag}”" + (f" of “{owner}”" if subject else "")
        standalone = out[:1].upper() + out[1:] + "?"
        done.append(f"filled the ellipsis from turn {turn} (“{previous}”), replacing {how}"
                    if not how.startswith("asked") else f"read the ellipsis against turn {turn}: {how}")
        text = "; ".join(done)
        return StandaloneQuestion(question=standalone, reasoning=text[:1].upper() + text[1:] + ".").with_carry(
            [owner] if owner else [], turn)

    @staticmethod
    def _swap_name(prev: str, old: str, new: str) -> str:
        """``prev`` with the name ``old`` (and its possessive) replaced by ``new``."""
        return re.sub(rf"\b{re.escape(old)}(?=['’]s\b|\b)", new, prev, count=1)
