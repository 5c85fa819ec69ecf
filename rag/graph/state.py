"""InputState (what a caller passes) and GraphState (what one run carries from node to node)."""

from __future__ import annotations

import operator
from typing import Annotated, Optional, TypedDict

from rag.graph.routing import Decision
from rag.models import Chunk, Citation, TraceEvent, Verdict


class InputState(TypedDict):
    """What a caller passes in: the question, and where the run starts (routing.decide_start)."""

    question: str
    """The user's question, unchanged for the whole run."""
    route: Decision
    """The latest routing decision; each node that routes replaces it, and the edges read it."""


class GraphState(InputState, total=False):
    """Everything one run carries from node to node (the run's Options are in RunContext)."""

    query: str
    """The current retrieval query; rewrite_query replaces it."""
    sub_queries: list[str]
    """Sub-questions from decompose_query, each retrieved on its own; cleared by a rewrite."""
    retrieved: list[Chunk]
    """The chunks the last retrieve returned (top_k per query, deduplicated)."""
    query_of: dict[str, str]
    """Chunk id -> the (sub-)query that retrieved it; chunks are graded against it."""
    verdicts: Annotated[list[Verdict], operator.add]
    """Every relevance verdict of the run, in order."""
    documents: list[Chunk]
    """The evidence the generator will see: relevant chunks accumulated over attempts, plus web results."""
    weak_evidence: bool
    """True when generation goes ahead with fewer than min_relevant relevant chunks."""
    rewrites: int
    """How many times rewrite_query ran (raised only there)."""
    web_searches: int
    """How many times web_search ran (raised only there)."""
    generations: int
    """How many times generate ran (raised only there)."""
    answer: str
    """The latest generated answer, with [n] markers."""
    citations: list[Citation]
    grounded: Optional[bool]
    """Latest grounding verdict; None until check_grounding runs."""
    ungrounded_claims: list[str]
    useful: Optional[bool]
    """Latest answer-check verdict; None until grade_answer runs."""
    web_note: str
    """Why web search did or did not contribute (for the stop reason)."""
    repeated_retrieval: bool
    """True when the last retrieve, after a rewrite, returned the same chunks as an earlier one:
    rewriting again would not help."""
    answered_with: list[str]
    """Chunk ids of the evidence the last answer was generated from: the same evidence would
    give the same answer, so it is not generated again."""
    final_answer: str
    stop_reason: str
    events: Annotated[list[TraceEvent], operator.add]
    """The trace: one event per node visit."""
