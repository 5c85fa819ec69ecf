"""The offline engine: deterministic, explainable information retrieval, no network and no model.

Every judgment explains itself in terms of the words it matched:

- grading is IDF-weighted query-term coverage (the lexical core of BM25-style relevance) inside
  a proximity window (the terms must occur close together, not scattered over the chunk), and
  a chunk must hold the question's constraints: its numbers and years, named entities and
  quoted phrases;
- rewriting is pseudo-relevance feedback (Rocchio 1971; RM3, Lavrenko & Croft 2001) from the
  retrieved chunks, steered by the terms the grader found missing;
- generation is extractive and query-focused: the few sentences and table rows that hold the
  question's constraints and most of its terms, each cited with ``[n]``, boilerplate dropped;
- the grounding check tests each answer sentence against the chunks it cites (and says when a
  sentence is a verbatim quote);
- the answer check fails when the answer misses a constraint of the question or the kind of
  answer asked for (a date for "when", a figure for "how many/much", a name for "who").
"""


from __future__ import annotations

from rag.engines.checks import SUPPORTED_AT, USEFUL_AT, CheckingMixin
from rag.engines.cited import EXTRACTIVE_LABEL, KEY_PASSAGES
from rag.engines.contextualize import ContextualizeMixin, topics
from rag.engines.decomposition import (
    LONG_QUESTION_TERMS,
    MAX_BRIDGES,
    MAX_SUB_QUESTIONS,
    DecompositionMixin,
    _bridge_signal,
)
from rag.engines.extraction import (
    BRIDGE_FOLLOW,
    MAX_ANSWER_SENTENCES,
    STRONG_SENTENCE_AT,
)
from rag.engines.grading import (
    CONSTRAINT_WINDOW,
    HIGH_AT,
    HOP_PREDICATE_AT,
    PARTIAL_RELEVANT_AT,
    PROXIMITY_WINDOW,
    RELEVANT_AT,
    SHORT_QUESTION_TERMS,
    relevance_threshold,
)
from rag.engines.lexical import DEMONYMS, QUESTION_STEMS, Constraint, constraints, entities
from rag.engines.rewriting import RewritingMixin
from rag.engines.router import RouterMixin
from rag.engines.typed import TypedMixin
from rag.store.bm25 import LexicalStats

__all__ = [
    "BRIDGE_FOLLOW", "CONSTRAINT_WINDOW", "DEMONYMS", "EXTRACTIVE_LABEL", "HIGH_AT", "HOP_PREDICATE_AT",
    "KEY_PASSAGES", "LONG_QUESTION_TERMS", "MAX_ANSWER_SENTENCES", "MAX_BRIDGES", "MAX_SUB_QUESTIONS",
    "PARTIAL_RELEVANT_AT", "PROXIMITY_WINDOW", "QUESTION_STEMS", "RELEVANT_AT", "SHORT_QUESTION_TERMS",
    "STRONG_SENTENCE_AT", "SUPPORTED_AT", "USEFUL_AT", "Constraint", "LocalEngine", "_bridge_signal",
    "constraints", "entities", "relevance_threshold", "topics",
]


class LocalEngine(DecompositionMixin, RewritingMixin, TypedMixin, CheckingMixin, ContextualizeMixin,
                  RouterMixin):
    """Offline judgments over corpus statistics ``stats`` (document frequencies of the KB).

    Each node's judgment lives in its own module: grading (grade_documents), rewriting
    (rewrite_query), extraction (generate), checks (check_grounding, grade_answer) and
    decomposition (decompose_query), contextualization (contextualize_question) and routing
    (route_question, reply_directly), over the shared lexical core.
    """

    name = "local"
    models: dict[str, str] = {}

    def __init__(self, stats: LexicalStats) -> None:
        """Build the engine over ``stats``, the lexical statistics of the knowledge base."""
        super().__init__(stats)
