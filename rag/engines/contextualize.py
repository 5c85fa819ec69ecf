"""The offline contextualize_question: a follow-up that refers back gets the earlier turn's topic."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.engines.base import StandaloneQuestion
from rag.engines.lexical import LexicalCore
from rag.models import Turn
from rag.text import QUESTION_WORDS, STOPWORDS

_BACK_REF = re.compile(
    r"\b(?:(?:that|this|the|these|those|said)\s+(?:paper|papers|article|method|methods|model|models|"
    r"approach|work|system|framework|technique|study|benchmark|dataset|retriever)\b"
    r"|it['’]s|its|it|they|them|their|theirs)\b", re.I)
"""Words by which a follow-up refers back to an earlier turn's topic ("it", "its", "they",
"that paper")."""
_POSSESSIVE_REF = {"its", "their", "theirs"}
_TOPIC = re.compile(
    r"(?:[\"“]([^\"”]{2,80})[\"”])"
    r"|\b([A-Z][\w'’.&+-]*(?:\s+(?:(?:in|of|on|for|and|the|to|de|van|von)\s+)*[A-Z0-9][\w'’.&+-]*)*)")
_CLAUSE_JOIN = re.compile(r"\s(?:and|but|or)\s|[,;:]", re.I)
MAX_CARRIED_TOPICS = 3
MAX_CARRIED_TERMS = 3


def topics(text: str) -> list[str]:
    """Names in ``text`` a follow-up may refer back to.

    Capitalised spans (joined over short lower-case words, as in "Lost in the Middle") and quoted titles, in
    order, without question words or single stop words.
    """
    found: dict[str, None] = {}
    for quoted, span in _TOPIC.findall(text):
        name = (quoted or span).strip(" .,'’-?")
        parts = name.split()
        while parts and parts[0].lower() in STOPWORDS | QUESTION_WORDS:
            parts = parts[1:]
        while parts and parts[-1].lower() in STOPWORDS:
            parts = parts[:-1]
        name = " ".join(parts)
        if not name or (len(parts) == 1 and (name.lower() in STOPWORDS | QUESTION_WORDS
                                             or len(name) < 3)):
            continue
        found.setdefault(name, None)
    return list(found)


def _refers_inside(question: str, at: int) -> bool:
    """Whether the back-reference at ``at`` points inside ``question`` itself.

    As in "What is the retriever of RAG and how is it trained?": a name comes before it and a new clause
    ("and", "but", "or", a comma) starts between that name and the reference.
    """
    before = question[:at]
    joins = [m.start() for m in _CLAUSE_JOIN.finditer(before)]
    return bool(joins) and bool(topics(before[:joins[-1]]))


class ContextualizeMixin(LexicalCore):
    """The offline engine's contextualize_question judgment."""

    def _turn_topic(self, turn: Turn) -> tuple[list[str], bool]:
        """(what a later turn may refer back to, whether they are names) for one turn.

        Its names, else its rarest key terms.
        """
        names = topics(turn.understood())
        if names:
            return names[:MAX_CARRIED_TOPICS], True
        weights = self.weighted_terms(turn.understood())
        best = sorted(weights.values(), key=lambda v: -v[1])[:MAX_CARRIED_TERMS]
        order = list(weights.values())
        return [w for w, _ in sorted(best, key=order.index)], False

    def contextualize(self, question: str, history: Sequence[Turn]) -> StandaloneQuestion:
        """Carry the topic of the latest earlier turn that has one.

        (its names, else its key terms) into a follow-up that refers back ("it", "its", "they", "that paper")
        or names no topic of its own; a follow-up that names its own topic and does not refer back is left as
        it is. The reasoning says what was carried over and from which turn (1-based).
        """
        refs = [m.group(0) for m in _BACK_REF.finditer(question) if not _refers_inside(question, m.start())]
        own = topics(question)
        if not refs and own:
            return StandaloneQuestion(question=question, reasoning=(
                f"Stands alone: names its own topic ({', '.join(own[:3])}) and does not refer back."))
        for n in range(len(history), 0, -1):
            carried, named = self._turn_topic(history[n - 1])
            carried = [c for c in carried if c.lower() not in question.lower()]
            if carried:
                break
        else:
            return StandaloneQuestion(question=question, reasoning=(
                "Left unchanged: no earlier turn names a topic to carry over."))
        topic = " and ".join(carried) if named else " ".join(carried)
        why = (f"refers back with “{refs[0]}”" if refs else "names no topic of its own")
        if refs and named:
            def swap(m: re.Match) -> str:
                word = m.group(0).lower()
                if word in ("it's", "it’s"):
                    return f"{topic} is"
                if word in _POSSESSIVE_REF:
                    return f"{topic}’s" if "’" in question else f"{topic}'s"
                if " " in word:  # "that paper" -> "the Self-RAG paper"
                    return f"the {topic} {m.group(0).split()[-1]}"
                return topic
            standalone = _BACK_REF.sub(swap, question)
        else:
            standalone = f"{question.rstrip(' ?.!')} ({topic})?"
        source = history[n - 1].understood()
        return StandaloneQuestion(question=standalone, reasoning=(
            f"Carried “{topic}” over from turn {n} (“{source}”): the follow-up {why}.")
        ).with_carry(carried, n)
