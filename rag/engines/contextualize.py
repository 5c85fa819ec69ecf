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

from rag.answer_spans import PLURAL_ACRONYM
from rag.engines.answered import AnsweredMixin, _replacement
from rag.engines.base import StandaloneQuestion
from rag.engines.coreference import asked_phrase, refers_inside
from rag.engines.phrases import (
    _CLAUSE_START,
    _ELLIPSIS,
    _WHOLE_CLAUSE,
    _head_noun_refs,
    _is_fragment,
    _possessive,
    _same_year,
    fill_slot,
    owners,
    strip_courtesy,
    topics,
)
from rag.models import Turn

_SINGULAR_REF = re.compile(
    r"\b(?:(?:[Tt]he|[Tt]his|[Tt]hat|said)\s+(?:company|firm|business|group|corporation|paper|article|method|model|"
    r"approach|work|system|framework|technique|study|benchmark|dataset|retriever|report|filing)\b"
    r"|[Ii]t['’]s|[Ii]ts|[Ii]t)\b")
_FRAMING = re.compile(r"\b(?:in|from|of|according\s+to)\s+$")
"""The words before a paper that only says where to look: "… in the Lost in the Middle paper"."""
_IT_ONLY = re.compile(r"\b(?:[Ii]t|[Ii]ts)\b")
"""A bare "it"/"its", which a paper that only says where to look ("in the X paper") does not take."""
_PLURAL_REF = re.compile(
    r"\b(?:(?:[Tt]hese|[Tt]hose|[Tt]he)\s+(?:models|methods|papers|approaches|systems|companies|authors)\b"
    r"|[Tt]hey|[Tt]hem|[Tt]heir|[Tt]heirs)\b")
_PAPER = re.compile(r"\bthe\s+['‘\"“]?([A-Z][\w.-]*(?:\s+(?:[A-Z][\w.-]*|et\s+al\.|[a-z]{1,5}))*?)['’\"”]?"
                    r"\s+paper\b")
"""A paper named by its title or authors: "the Lewis et al. RAG paper", "the 'Lost in the Middle' paper"."""
_DOCUMENT_NP = re.compile(r"\bthe\s+(?:(?!(?:the|of|a|an)\b)[\w-]+\s+){1,4}?"
                          r"(?:paper|survey|benchmark|study)\b")
"""A work named by a noun phrase: "the hallucination mitigation survey", "the RAG survey"."""
_AUTHORS_OF = re.compile(r"\b([A-Z][\w.-]*(?:\s+[A-Z][\w.-]*)*)(?:['’]s)?\s+(?:authors|paper)\b|"
                         r"\bauthors\s+of\s+(?:the\s+)?([A-Z][\w.-]*(?:\s+[A-Z][\w.-]*)*)")
"""A paper named by what its authors or it are called: "the InstructRetro authors", "authors of DPR"."""
_HOW_MANY = re.compile(r"\bhow\s+(?:many|much)\s+((?:[a-z-]+\s+){0,2}?[a-z-]+s)\b", re.I)
_COMMON_QUESTION_AT = 3.0
"""A question with no name of its own whose every content word has a BM25 idf below this (a word in
more than about 5 % of the chunks, like "results" or "limitations") says nothing about what it is
about, so it is read as asking about the latest topic."""
_ANY_REF = re.compile(
    r"\b(?:he|she|him|her|his|hers|it|its|they|them|their|theirs|this|that|these|those|former|latter|same|"
    r"there|then|also|the (?:company|firm|paper|model|method|role|position|business|group|authors?))\b", re.I)


def _latest_paper(history: Sequence[Turn]) -> tuple[str, int] | None:
    """("the X paper", its 1-based turn) for the latest turn that names a paper as "the X paper", or None."""
    for n in range(len(history), 0, -1):
        text = history[n - 1].understood()
        paper = _PAPER.search(text)
        if paper:
            return f"the {paper.group(1)} paper", n
        named = _AUTHORS_OF.search(text)
        if named and (name := named.group(1) or named.group(2)) and name.lower() not in ("the", "which"):
            return f"the {name} paper", n  # "… one of the InstructRetro authors from?"
    return None


def self_contained(question: str, standalone: str) -> bool:
    """Whether ``question`` surely stands alone.

    The rules left it unchanged (``standalone``), it holds no word that could point back at all ("he",
    "that", "the company", "also"), and it is no ellipsis.
    """
    bare = question.strip()
    return (standalone == question and not _ANY_REF.search(bare) and not _ELLIPSIS.match(bare.rstrip("?.! "))
            and not _is_fragment(bare.rstrip("?.! ")))


_AGENT_VERB = re.compile(r"\s+(?:use|used|train|trained|propose|proposed|evaluate|evaluated|build|built|find|"
                         r"found|report|reported|introduce|introduced|prompt|prompted|compare|compared|test|"
                         r"tested|choose|chose|fine-tune|fine-tuned|run|ran|measure|measured|create|created|"
                         r"collect|collected|apply|applied|split|experiment|employ|employed)\b", re.I)
"""Verbs whose subject "they" is a paper's authors: "Which retriever do they use?"."""


def _plural_focus(question: str, owner: str | None) -> str | None:
    """The plural noun phrase "they" or "them" means in a later turn, or None.

    What the question counts ("how many employees" -> "BNSF's employees"), or a plural it names in the
    possessive ("FLARE's authors", "the authors of FLARE").
    """
    m = re.search(r"\b([A-Z][\w.-]*(?:\s+[A-Z][\w.-]*)*['’]s?\s+authors)\b|\b(the\s+authors\s+of\s+"
                  r"(?:the\s+)?[A-Z][^?,]*?)(?=\s+(?:use|used|train|split|propose|evaluate|find|report|"
                  r"prompt|build|from)\b|[?,]|$)", question)
    if m:
        return m.group(1) or m.group(2)  # "they" after "… do Self-RAG's authors train on?"
    m = _HOW_MANY.search(question)
    if m and m.group(1).lower() not in ("years", "times"):
        noun = m.group(1)
        if noun[:1].isupper() or (owner and owner.lower() in noun.lower()):
            return f"the {noun}"
        return f"{_possessive(owner)} {noun}" if owner else f"the {noun}"
    m = re.search(r"\b([A-Z][\w-]*(?:\s+[A-Z][\w-]*)*['’]s?\s+(?:[a-z-]+\s+){0,2}?[a-z]+[^s'’\W]s)\b|"
                  r"\b(the\s+[a-z]+s\s+of\s+(?:the\s+)?"
                  r"[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*)", question)
    if m:
        return m.group(1) or m.group(2)
    if owner and re.search(r"\b(?:wrote|authors?|created|proposed|introduced)\b", question, re.I):
        return f"the authors of {owner}"  # "they" after "Who wrote In-Context RALM?"
    return None


def _contrasted(prev: str, earlier: Sequence[str]) -> str | None:
    """The name of ``prev`` (the previous question) that an elliptical follow-up replaces, or None.

    The name the previous question brought in (not asked about in ``earlier`` turns), the last of those in
    the sentence ("About Berkshire: where is Louis headquartered?" then "And Jazwares?": Louis); when every
    name was asked about before, its first possessor or name, as the conversation's subject.
    """
    names = list(dict.fromkeys(owners(prev) + topics(prev)))
    if not names:
        return None
    said = " ".join(earlier).lower()
    new = [n for n in names if n.lower() not in said and re.search(r"[^\W\d]", n)]  # a year is no name
    return max(new, key=lambda n: prev.find(n)) if new else names[0]


_OF_THAT = re.compile(r"\b(?:of|from)\s+(that|those|these|this)\b"
                      r"(?=\s+(?:was|were|is|are|did|do|does|had|has|have|will|would|could|can|[a-z]+ed)\b"
                      r"|\s*[?.!,]|$)", re.I)
"""A demonstrative standing for the thing the previous question asked about: "How much of that was accrued
in 2024?", "How many of those worked in insurance?" (not "of those plaintiffs")."""


def _part_of_previous(asked: str, before: str) -> tuple[str, tuple[str, str]] | None:
    """``asked`` with "of that"/"of those" replaced by the phrase ``before`` asked about, with its owner.

    "How much of that was accrued in 2024 alone?" after "What cumulative wildfire losses had PacifiCorp
    recorded …?" is "How much of PacifiCorp's cumulative wildfire losses was accrued in 2024 alone?".
    Returns (text, (phrase, demonstrative)), or None when ``asked`` has no such demonstrative or ``before``
    asks about no phrase.
    """
    m = _OF_THAT.search(asked)
    head = asked_phrase(before) if m else ""
    if m is None or not head or refers_inside(asked, m.start(1)):
        return None
    owner = next((t for t in topics(before) if re.search(r"[^\W\d]", t)), None)
    phrase = f"{_possessive(owner)} {head}" if owner and owner.lower() not in head.lower() else f"the {head}"
    return asked[:m.start(1)] + phrase + asked[m.end(1):], (phrase, m.group(1))


class ContextualizeMixin(AnsweredMixin):
    """The offline engine's contextualize_question judgment."""

    def _antecedent(self, history: Sequence[Turn], question: str) -> tuple[str | None, int | None]:
        """(the main name of the latest earlier turn that has names ``question`` lacks, its 1-based turn).

        Of that turn's names, the one most earlier turns mention, then a possessor, then not a corpus word.
        """
        asked = [history[k].understood().lower() for k in range(len(history))]
        # agreement in number: "its" never means "PBOs" ("How much do its subsidiaries …")
        singular = bool(_SINGULAR_REF.search(question)) and not _PLURAL_REF.search(question)
        for n in range(len(history), 0, -1):
            text = history[n - 1].understood()
            head = asked_phrase(text)  # "Which API did …": the API is what was asked, not the topic
            names = list(dict.fromkeys(t for t in owners(text) + topics(text)
                                       if t.lower() not in question.lower() and t not in head
                                       and not (singular and PLURAL_ACRONYM.fullmatch(t))))
            paper = _PAPER.search(text)
            # "… of MPT-30B-Instruct in the Lost in the Middle paper": the paper only says where to look, and
            # "it" is the model
            others = self._besides_paper(names, paper) if paper and _IT_ONLY.search(question) and \
                not _PLURAL_REF.search(question) and _FRAMING.search(text, 0, paper.start()) else []
            where = bool(others)
            if where:
                names = others
            elif paper and paper.group(1).lower() not in question.lower():
                return f"the {paper.group(1)} paper", n  # the turn asked about a paper: it is the topic
            work = None if where else _DOCUMENT_NP.search(text)
            if work and work.group(0).lower() not in question.lower():
                return work.group(0), n  # "the hallucination mitigation survey", "the RAG survey": a work
            if names:
                # the conversation's topic: the name most turns ask about, then the possessor, then a name
                # rather than a word the corpus uses everywhere ("LLM", "Wikipedia"), then the first one
                best = max(names, key=lambda t: (sum(t.lower() in a for a in asked), t in owners(text),
                                                 not all(self.common_word(w) for w in t.split()),
                                                 -names.index(t)))
                if re.search(rf"\b{re.escape(best)}\s+et\s+al\.", text):
                    best += " et al."  # "Lewis et al.": the authors, whom "they" means
                return best, n
        return None, None

    def _besides_paper(self, names: list[str], paper: re.Match) -> list[str]:
        """``names`` without the paper's title (cut at "in the …" of it), leaving out corpus words."""
        cut = dict.fromkeys(re.split(r"\s+(?:in|of|from)\s+the\s+", t)[0] for t in names
                            if t.lower() not in paper.group(0).lower())
        return [t for t in cut if not paper.group(1).lower().startswith(t.lower())
                and not all(self.common_word(w) for w in t.split())]

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
            if _CLAUSE_START.match(fragment) or _WHOLE_CLAUSE.match(fragment):
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
                if not refers_inside(asked, r.start())]
        if history:
            asked = _head_noun_refs(asked, history[-1].understood())
            asked = _same_year(asked, history[-1].understood())
        if not history:
            return asked, None, None
        if (resolved := self._to_named(asked, history)) is not None:
            return resolved
        if (part := _part_of_previous(asked, history[-1].understood())) is not None:
            return part[0], part[1], len(history)
        if not refs:
            return asked, None, None
        name, turn = self._antecedent(history, asked)
        if any(re.fullmatch(r"(?:the|this|that)\s+paper", r.group(0), re.I) for r in refs):
            name, turn = _latest_paper(history) or (name, turn)  # "the paper" is a paper, not its author
        if name is None or turn is None:
            return asked, None, None
        before = history[turn - 1].understood()
        plural = _plural_focus(before, name) or name
        named = f"the {name}" if re.search(rf"\bthe\s+{re.escape(name)}\b(?!['’]|\s+[a-z])", before) else name

        authors = f"the authors of {named}" if name.endswith(" paper") else None

        def swap(m: re.Match) -> str:
            if refers_inside(asked, m.start()):
                return m.group(0)
            ref = m.group(0).lower()
            if ref == "they" and authors and "authors" not in plural and _AGENT_VERB.match(asked[m.end():]):
                return authors  # "Which dump do they use?" after a question about a paper
            return _replacement(ref, name, named, plural)

        text = _PLURAL_REF.sub(swap, _SINGULAR_REF.sub(swap, asked))
        text = _same_year(text, before)
        said = refs[0].group(0)
        meant = plural if _PLURAL_REF.fullmatch(said) and said.lower() in ("they", "them") else name
        if said.lower() == "they" and authors and authors in text and authors not in asked:
            meant = authors  # the reasoning names what "they" became
        return text, (meant, said), turn

    def _fill_ellipsis(self, fragment: str, previous: str, turn: int, history: Sequence[Turn],
                       done: list[str]) -> StandaloneQuestion:
        """The previous question with the slot ``fragment`` names replaced (see the module docstring)."""
        prev = previous.strip().rstrip("?.! ")
        owner = _contrasted(prev, [t.understood() for t in history[:-1]])
        resolved, _, _ = self._resolve(fragment, history)
        frag = re.sub(r"^back\s+(?=(?:in|during)\s)", "", resolved.strip().rstrip("?.! "), flags=re.I)
        out, how = fill_slot(frag, prev, owner) or (None, "")
        if out is None:  # a noun phrase the previous question has no slot for
            paper = _PAPER.search(prev)
            topic = f"the {paper.group(1)} paper" if paper else owner  # "the second model" of that paper
            subject = f" of {topic}" if topic and topic.lower() not in frag.lower() else ""
            out = f"What about {frag}{subject}"
            how = f"asked about “{frag}”" + (f" of “{topic}”" if subject else "")
        standalone = out[:1].upper() + out[1:] + "?"
        done.append(f"filled the ellipsis from turn {turn} (“{previous}”), replacing {how}"
                    if not how.startswith("asked") else f"read the ellipsis against turn {turn}: {how}")
        text = "; ".join(done)
        reasoning = text[:1].upper() + text[1:] + "."
        return StandaloneQuestion(question=standalone, reasoning=reasoning).with_carry(
            [owner] if owner else [], turn)
