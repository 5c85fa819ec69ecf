"""InputState (what a caller passes) and GraphState (what one run carries from node to node)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired, TypedDict

from rag.graph.routing import Decision
from rag.models import Chunk, Citation, TraceEvent, Turn, Verdict


class InputState(TypedDict):
    """What a caller passes in.

    The question, the thread's earlier turns, and where the run starts (routing.decide_start).
    """

    question: str
    """The question every node works on. It starts as what the user typed;
    contextualize_question replaces it with the standalone question (the follow-up rewritten
    with the thread's history), so retrieval, grading, generation and the checks all use the
    standalone question. What the user typed stays in ``original_question``."""
    history: NotRequired[list[Turn]]
    """The thread's earlier turns, oldest first (empty or absent for a first question)."""
    route: Decision
    """The latest routing decision; each node that routes replaces it, and the edges read it."""


class GraphState(InputState, total=False):
    """Everything one run carries from node to node (the run's Options are in RunContext)."""

    original_question: str
    """What the user typed, set by contextualize_question (absent when it did not run)."""
    datasource: str
    """Where route_question decided to look: ``kb``, ``web`` or ``none``."""
    web_available: bool
    """Whether a web search client is configured (recorded by route_question for its decider)."""
    retrieval_mode: str
    """The retrieval mode chosen by route_question or a switch_retriever correction (unset:
    Options.retrieval)."""
    one_hop: bool
    """True when route_question found a one-hop question (decomposition is skipped)."""
    mode_switched: bool
    """True once a switch_retriever correction ran."""
    last_strategy: str
    """The strategy of the last rewrite_query (``switch_retriever``, ``expand_terms``, …)."""
    answer_grade: Any
    """grade_answer's verdict made in the same round as check_grounding
    (:class:`rag.graph.checks.ConcurrentCheck`)."""
    out_of_time: bool
    """True once the run's time budget was found spent."""
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
    ambiguous: list[Chunk]
    """Chunks graded not relevant but partly so (CRAG's "ambiguous", Yan et al. 2024: score medium),
    accumulated over attempts up to top_k: the evidence of last resort when no chunk is relevant."""
    ambiguous_evidence: bool
    """True when generate answered from :attr:`ambiguous` chunks (the answer then always has a caveat)."""
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
    grounded: bool | None
    """Latest grounding verdict; None until check_grounding runs."""
    ungrounded_claims: list[str]
    useful: bool | None
    """Latest answer-check verdict; None until grade_answer runs."""
    missing_type: str | None
    """The answer type the last answer lacked (grade_answer's ``missing_type``: person, number, …), else
    None; a rewrite then looks for it (strategy ``seek_answer_type``)."""
    seek_type: str | None
    """Set by a ``seek_answer_type`` rewrite: the next retrieve fetches SEEK_FACTOR × top_k chunks (and a
    document's front matter for a question about its authors), and the evidence may grow to twice top_k."""
    retrieved_sets: list[list[str]]
    """The chunk ids each retrieve returned, in order (a rewrite that brings back the same is seen)."""
    queries: list[str]
    """The queries retrieved with so far, oldest first, without repeats (the first is the question)."""
    grade_rounds: int
    """How many times grade_documents ran (its verdicts carry the round as ``attempt``)."""
    route_reasoning: str
    """route_question's reason, in plain words (reply_directly repeats it)."""
    missing_terms: list[str]
    """Names and words of the question the knowledge base never mentions (route_question)."""
    grounding_checks: list[int]
    """Each check_grounding's count of ungrounded claims, in order (0: grounded)."""
    answer_checks: list[bool]
    """Each grade_answer's verdict, in order (a rewrite clears ``useful``; these stay)."""
    answer_span: str | None
    """grade_answer's span of the kind of answer asked for, when it found one (a name, a figure, …)."""
    answer_kind: str | None
    """The answer type of ``answer_span``."""
    before_seek: tuple[str, list[Citation]] | None
    """The answer and citations a ``seek_answer_type`` correction set out to improve: when the answer it
    leads to still lacks the type, this one stands (a correction that fixed nothing replaces nothing)."""
    fresh_first: bool
    """True for the grading right after a ``seek_answer_type`` retrieve: the evidence may grow to twice top_k
    with its new relevant chunks."""
    sought_types: list[str]
    """The answer types a rewrite already looked for (each is looked for once)."""
    web_note: str
    """Why web search did or did not contribute (for the stop reason)."""
    repeated_retrieval: bool
    """True when the last retrieve, after a rewrite, returned the same chunks as an earlier one:
    rewriting again would not help."""
    answered_with: list[str]
    """Chunk ids of the evidence the last answer was generated from: the same evidence would
    give the same answer, so it is not generated again."""
    with_table_headers: bool
    """True when the last answer read chunks that open inside a table with the chunks before them (a
    correction for a question about a figure, :func:`rag.graph.evidence.with_table_headers`)."""
    final_answer: str
    stop_reason: str
    events: Annotated[list[TraceEvent], operator.add]
    """The trace: one event per node visit."""
