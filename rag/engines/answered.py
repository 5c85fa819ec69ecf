"""References to what the previous answer named, or to the one person the latest questions name.

Part of the offline contextualize_question (:mod:`rag.engines.contextualize`): "Who is the company's
CFO?" answered "Marc D. Hamburg …", then "How old is he?" asks about Marc D. Hamburg; "How old is Ajit
Jain?" then "Since what year has he held his position?" asks about Ajit Jain.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.answer_spans import holds
from rag.answer_types import expected_type, main_clause, persons
from rag.engines.checks import CheckingMixin
from rag.engines.coreference import refers_inside
from rag.engines.lexical import LexicalCore
from rag.engines.phrases import _possessive, topics
from rag.models import Turn
from rag.text import terms

_ASKS_FIRM = re.compile(r"^(?:which|what)\s+(?:[\w'’-]+\s+){0,4}?(?:company|companies|subsidiary|"
                        r"subsidiaries|business|firm|organi[sz]ation|insurer|operator|railroad|utility)\b",
                        re.I)
"""A question asking which company: "it" in the next turn is the company the answer named."""
_FIRM_REF = re.compile(r"\b(?:[Ii]t['’]s|[Ii]ts|[Ii]t|(?:[Tt]he|[Tt]his|[Tt]hat)\s+(?:company|firm|business|"
                       r"subsidiary))\b")
"""The references that may mean the company a previous answer named (not "the paper", "the dataset")."""
_PERSON_REF = re.compile(r"\b(?:[Hh]e|[Ss]he|[Hh]im|[Hh]is|[Hh]er)\b")
"""A reference to a person: resolved only to a person the previous turn's answer named."""
_DOCUMENT_NOUNS = frozenset({"paper", "article", "model", "method", "approach", "work", "system", "framework",
                             "technique", "study", "benchmark", "dataset", "retriever", "report", "filing",
                             "models", "methods", "papers", "approaches", "systems"})
"""Nouns that keep the name they refer to as a modifier: "that paper" -> "the Self-RAG paper"."""

def _answer_lead(answer: str) -> str:
    """The lead passage of an answer, as the answer check reads it (:meth:`CheckingMixin.claims`).

    Its first claim, after any caveat line; "" for an abstention (:data:`rag.graph.endings.NO_ANSWER`
    cites nothing).
    """
    body = "\n".join(line for line in answer.splitlines() if not line.lower().startswith("caveat:"))
    claims = CheckingMixin.claims(body)
    return claims[0][0] if claims and claims[0][1] else ""


def _replacement(ref: str, name: str, named: str, plural: str) -> str:
    """What the lower-case reference ``ref`` becomes.

    ``name`` (or ``named``, with its article) in the form the sentence needs, or ``plural`` for "they" and
    "them".
    """
    if ref in ("it's", "it’s"):
        return f"{name} is"
    if ref in ("its", "their", "theirs", "his", "hers", "her"):
        return _possessive(name)
    if ref == "it":
        return named
    if ref in ("they", "them"):
        return plural
    if ref == "the authors":
        return f"the authors of {named}"
    if ref.split()[-1] in _DOCUMENT_NOUNS:
        if name.startswith("the ") and re.search(r"\s(?:paper|survey|benchmark|study)$", name):
            return name  # already "the X paper", "the X benchmark": the work itself
        return f"{name} {ref.split()[-1]}" if name.startswith("the ") else f"the {name} {ref.split()[-1]}"
    return named  # "the company", "the firm", "these companies"


class AnsweredMixin(LexicalCore):
    """Resolving "he", "it" and "the company" to a name the previous turn gave (in its answer or question)."""

    def _answered(self, turn: Turn) -> tuple[str, str] | None:
        """(the name ``turn``'s answer gave, "person" or "organisation") when it asked who or which, or None.

        "Who is the company's CFO?" answered "Marc D. Hamburg …": a "he" in the next turn is Marc D.
        Hamburg; "Which subsidiary operates the largest pipeline?" answered "Northern Natural …": an "it" is
        that subsidiary. The name is the span of the asked type in the answer's lead (as the answer check
        reads it).
        """
        asked = turn.understood()
        kind = expected_type(asked)
        lead = _answer_lead(turn.answer)
        if kind not in ("person", "organisation") or not lead or (
                kind == "organisation" and not _ASKS_FIRM.match(asked)):
            return None  # "which model", "which university": an "it" after them is rarely the answer
        span = holds(lead, kind, asked, self.common_word, self.predicate(asked))
        given = {t for name in topics(asked) for t in terms(name)}
        if not span or len(span.split()) > 6 or span.lower() in asked.lower() or set(terms(span)) & given:
            return None  # "Berkshire Hathaway Inc" after "Which company audits Berkshire's statements?"
        return span, kind

    def _to_named(self, asked: str, history: Sequence[Turn]
                  ) -> tuple[str, tuple[str, str] | None, int | None] | None:
        """``asked`` resolved to the person or company the previous answer named, or None.

        Else to the one person the latest questions name (:meth:`_person_asked`); None when neither applies.
        """
        answered = self._answered(history[-1])
        if answered is not None:
            persons_ = [r for r in _PERSON_REF.finditer(asked) if not refers_inside(asked, r.start())]
            singular = [r for r in _FIRM_REF.finditer(asked) if not refers_inside(asked, r.start())]
            if (answered[1] == "person" and persons_) or (answered[1] == "organisation" and singular):
                return self._to_answer(asked, answered, len(history))
        if any(self._person_ref_outside(asked, r.start()) for r in _PERSON_REF.finditer(asked)) and \
                (person := self._person_asked(history)) is not None:
            return self._to_answer(asked, (person[0], "person"), person[1])
        return None

    def _person_ref_outside(self, asked: str, at: int) -> bool:
        """Whether the "he"/"his" at ``at`` of ``asked`` means someone outside it.

        Not when a person named before it is its antecedent ("Giuseppe Arimondi lost his life") or the
        question asks who ("Who was known by his stage name …": the person asked for).
        """
        return not (refers_inside(asked, at) or re.match(r"\s*who\b", asked, re.I)
                    or persons(asked[:at], "", self.common_word))

    def _person_asked(self, history: Sequence[Turn]) -> tuple[str, int] | None:
        """(the one person the latest of the last two questions names, its 1-based turn), or None.

        "How old is Ajit Jain?" then "Since what year has he held his position?": "he" is Ajit Jain.
        """
        for n in range(len(history), max(0, len(history) - 2), -1):
            text = history[n - 1].understood()
            if expected_type(text) == "person" or re.match(r"(?:who|whom)\b", main_clause(text), re.I):
                return None  # "Who should replace Warren Buffett?" then "How old is he?": he is the answer
            found = [p for p in persons(text, "", self.common_word) if 2 <= len(p.split()) <= 3]
            if found:
                return (found[0], n) if len(set(found)) == 1 else None
        return None

    @staticmethod
    def _to_answer(asked: str, answered: tuple[str, str], turn: int
                   ) -> tuple[str, tuple[str, str] | None, int | None]:
        """``asked`` with its references replaced by the name the previous turn's answer gave.

        "it", "its", "the company" for a company; "he", "his", "she", "her" for a person.
        """
        name, kind = answered
        first: list[str] = []

        def swap(m: re.Match) -> str:
            if refers_inside(asked, m.start()) or first:  # "has he held his position": "his" is then his
                return m.group(0)
            first.append(m.group(0))
            return _replacement(m.group(0).lower(), name, name, name)

        text = (_PERSON_REF if kind == "person" else _FIRM_REF).sub(swap, asked)
        return text, ((name, first[0]) if first else None), (turn if first else None)
