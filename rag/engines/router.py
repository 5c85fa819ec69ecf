"""route_question offline: where to look and how to retrieve, by rule (adaptive routing without an LLM).

The rules read the question and the knowledge base's term statistics: a greeting or a question about the
chat needs no retrieval; a question whose constraints the knowledge base's vocabulary lacks goes to the
web; a keyword-like question (an error name, a code, an identifier, a quoted phrase, a number) is best
served by BM25; a conceptual one by hybrid retrieval when the embeddings are semantic.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rag.engines.base import Answer, RouteQuery
from rag.engines.decomposition import multi_hop
from rag.engines.lexical import LexicalCore, _pct, _quote, without_set_aside
from rag.text import STOPWORDS

_CHAT_TEXT = ("hello hi hey hiya howdy greetings yo thanks thank thx cheers bye goodbye ok okay cool great "
              "nice good morning afternoon evening day night please there you doing how are what's up sup "
              "again much lot")
_CHAT_WORDS = frozenset(_CHAT_TEXT.split())
_ABOUT_THE_CHAT = re.compile(
    r"^\W*(?:who\s+are\s+you|what\s+(?:can|do)\s+you\s+do|what\s+are\s+you|how\s+do(?:es)?\s+"
    r"(?:you|this\s+(?:chat|app|tool|assistant))\s+work|what\s+is\s+this\s+(?:chat|app|tool))\b",
    re.IGNORECASE)
_KEYWORD_SIGNS: tuple[tuple[str, re.Pattern], ...] = (
    ("an error name", re.compile(r"\b[A-Za-z_][\w.]*(?:Error|Exception|Warning|Fault)\b|\bTraceback\b")),
    ("a code", re.compile(r"\b0x[0-9a-fA-F]+\b|\b[A-Z]{2,}[-_]?\d[\w-]*\b|\b[A-Z]\d{2,}\b")),
    ("an identifier", re.compile(r"\b[a-z][a-z0-9]*_[\w]+\b|\b[a-z]+[A-Z][A-Za-z0-9]+\b|\b\w+\(\)|"
                                 r"\b\w+\.\w+\.\w+\b|(?<!\w)--?[a-z][\w-]+|"
                                 r"\b[\w-]+\.(?:py|js|json|yaml|toml|cfg|txt|md|pdf)\b")),
    ("a quoted phrase", re.compile(r"[\"“`][^\"”`]{3,}[\"”`]")),
    ("a number", re.compile(r"\b\d[\d.,]*\b")),
)
_CONCEPTUAL = re.compile(
    r"^\W*(?:how(?!\s+(?:many|much|long|old|often|far|big|large|tall)\b)|why|explain|describe|compare|"
    r"what\s+(?:is|are)\s+the\s+(?:difference|idea|intuition|purpose|role|advantage|benefit|relationship)|"
    r"what\s+does\b.*\bmean|in\s+what\s+way)\b",
    re.IGNORECASE)
OUT_OF_SCOPE_AT = 0.5
"""A question goes to the web when the terms the knowledge base never uses carry at least this share of
its IDF weight (its constraints are not in the knowledge base's vocabulary)."""


def keyword_signs(question: str) -> list[str]:
    """What makes ``question`` keyword-like, e.g. ``["an error name 'RuntimeError'"]`` (empty: none)."""
    found = []
    for name, pattern in _KEYWORD_SIGNS:
        m = pattern.search(question)
        if m and not (name == "a code" and m.group(0).isupper() and len(m.group(0)) < 3):
            found.append(f"{name} '{m.group(0).strip()}'")
    return found


def _hops(question: str) -> str:
    """``multi`` for a comparison of named things or a question with a bridge signal, else ``one``."""
    return "multi" if multi_hop(question) else "one"


def is_small_talk(question: str) -> bool:
    """True for a greeting, thanks or a goodbye: every word is a chat word or a stop word.

    A figure or year makes a turn a question ("And in 2023?"), and so does any word that is not chat
    ("Thanks! How large …").
    """
    tokens = re.findall(r"[a-z0-9']+", question.lower())
    if any(t[0].isdigit() for t in tokens):
        return False
    return not tokens or all(t in _CHAT_WORDS or t in STOPWORDS for t in tokens)


class RouterMixin(LexicalCore):
    """route_question and reply_directly by rule, over the knowledge base's term statistics."""

    def missing_terms(self, question: str) -> tuple[list[str], float]:
        """(words of the question the knowledge base never uses, by IDF; their share of its IDF weight).

        The names a question sets aside ("Besides Stanford and UC Berkeley, …") are not counted.
        """
        weights = self.weighted_terms(without_set_aside(question))
        total = sum(w for _, w in weights.values())
        missing = [(w, idf) for s, (w, idf) in weights.items() if not self.stats.df.get(s)]
        share = sum(idf for _, idf in missing) / total if total > 0 else 0.0
        return [w for w, _ in sorted(missing, key=lambda m: -m[1])], share

    def route(self, question: str, *, sources: Sequence[str] = (), web_available: bool = False,
              semantic: bool = False, default_mode: str = "bm25", lacking: Sequence[str] = ()) -> RouteQuery:
        """Route by rule.

        No retrieval for a greeting or a question about the chat itself. The web when a name the
        question is about (``lacking``: names whose words no passage holds together) or the words that
        carry at least OUT_OF_SCOPE_AT of the question's IDF weight are not in the knowledge base.
        Otherwise the knowledge base: ``bm25`` for a keyword-like question, ``hybrid`` for a conceptual
        one when the embeddings are ``semantic``, else ``default`` (``default_mode``).
        """
        if is_small_talk(question):
            return RouteQuery(hops=_hops(question), datasource="none", retrieval_mode="default", reasoning=(
                "A greeting or small talk: it asks nothing the documents could answer, so no "
                "retrieval is needed."))
        if _ABOUT_THE_CHAT.search(question):
            return RouteQuery(hops=_hops(question), datasource="none", retrieval_mode="default", reasoning=(
                "A question about this chat itself, not about the documents: no retrieval needed."))
        if self.stats.n_docs == 0:
            return RouteQuery(hops=_hops(question), datasource="web", retrieval_mode="default", reasoning=(
                "The knowledge base is empty, so only the web could answer."))
        missing, share = self.missing_terms(question)
        if lacking:
            return RouteQuery(hops=_hops(question), datasource="web", retrieval_mode="default", reasoning=(
                f"No passage of the knowledge base mentions {_quote(list(lacking), 3)} (its words never "
                f"occur together there): the question asks about something the documents do not cover."))
        if missing and share >= OUT_OF_SCOPE_AT:
            return RouteQuery(hops=_hops(question), datasource="web", retrieval_mode="default", reasoning=(
                f"The knowledge base never uses {_quote(missing)}, which "
                f"{'carry' if len(missing) > 1 else 'carries'} {_pct(share)} of the question's weight: "
                f"its documents are unlikely to answer it."))
        return self._kb_route(question, missing, semantic, default_mode)

    @staticmethod
    def _kb_route(question: str, missing: list[str], semantic: bool, default_mode: str) -> RouteQuery:
        covered = (" The knowledge base uses the question's key terms"
                   + (f" (all but {_quote(missing)})." if missing else "."))
        signs = keyword_signs(question)
        if signs:
            return RouteQuery(hops=_hops(question), datasource="kb", retrieval_mode="bm25", reasoning=(
                f"Keyword-like: it holds {', '.join(signs[:3])}, which exact term matching (BM25) finds "
                f"better than embeddings.{covered}"))
        if _CONCEPTUAL.search(question):
            if semantic:
                return RouteQuery(hops=_hops(question), datasource="kb", retrieval_mode="hybrid", reasoning=(
                    f"A conceptual question: semantic embeddings can match its meaning, fused with BM25 "
                    f"(hybrid).{covered}"))
            return RouteQuery(hops=_hops(question), datasource="kb", retrieval_mode="default", reasoning=(
                f"A conceptual question, but the embeddings are the offline lexical ones, so the "
                f"configured default ({default_mode}) is used.{covered}"))
        return RouteQuery(hops=_hops(question), datasource="kb", retrieval_mode="default", reasoning=(
            f"Neither keyword-like nor clearly conceptual: the configured default "
            f"({default_mode}).{covered}"))

    def reply(self, question: str, on_token: Callable[[str], None] | None = None) -> Answer:
        """A plain reply to a greeting, thanks or a question about the chat (no evidence, no citation)."""
        low = question.lower()
        if re.search(r"\b(thanks?|thank you|thx|cheers)\b", low):
            text = "You're welcome. Ask me anything about the documents in this knowledge base."
        elif re.search(r"\b(bye|goodbye)\b", low):
            text = "Goodbye."
        else:
            text = ("Hello! I answer questions from the documents in this knowledge base and cite the "
                    "pages I quote. Ask me about them.")
        if on_token is not None:
            on_token(text)
        return Answer(text=text, citations=[])
