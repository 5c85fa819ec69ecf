"""GraphState and the records it holds: Chunk, Verdict, TraceEvent."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, Optional, TypedDict

from pydantic import BaseModel, Field

from rag.config import Options


class Chunk(BaseModel):
    """A retrievable piece of evidence: a chunk of an indexed document, or a web result.

    ``page`` is 1-based (0 for web results); ``score`` is the retriever's similarity in [0, 1]
    (cosine for dense retrieval), higher is better.
    """

    id: str
    text: str
    source: str
    """File name for documents, URL for web results."""
    page: int = 0
    index: int = 0
    """0-based chunk index within its document."""
    doc_sha: str = ""
    score: float = 0.0
    origin: Literal["kb", "web"] = "kb"
    title: str = ""

    def label(self) -> str:
        """Human label: ``file.pdf p.3`` or the URL."""
        return self.source if self.origin == "web" else f"{self.source} p.{self.page}"


class Verdict(BaseModel):
    """A relevance verdict on one chunk for one query (the output of grade_documents)."""

    chunk_id: str
    source: str
    page: int
    query: str
    relevant: bool
    score: Literal["high", "medium", "low"]
    reasoning: str
    attempt: int = 1
    """Which grade_documents visit produced this verdict (1-based)."""
    fallback: Optional[str] = None
    """Set when the engine could not judge and a fallback judgment was used, with why."""


class TraceEvent(BaseModel):
    """What one node did: appended by every node, and streamed live (custom stream mode).

    ``step`` is 1-based over the run; ``attempt`` is the nth visit to this node (1-based);
    ``started_at`` is a UNIX time in seconds; ``duration_ms`` is wall time in milliseconds.
    """

    step: int
    node: str
    attempt: int
    started_at: float
    duration_ms: float
    summary: str
    detail: dict[str, Any] = Field(default_factory=dict)
    route: Optional[dict[str, str]] = None
    """``{"to": next node, "why": plain words}``; None for terminal nodes."""
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Citation(BaseModel):
    """Answer marker ``[n]`` -> the chunk it cites. ``n`` is 1-based; ``page`` 1-based (0 for web)."""

    n: int
    chunk_id: str
    source: str
    page: int
    origin: Literal["kb", "web"] = "kb"
    text: str = ""


class GraphState(TypedDict, total=False):
    """Everything one run carries from node to node."""

    question: str
    """The user's question, unchanged for the whole run."""
    options: Options
    """The per-run switches and budgets."""
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
    final_answer: str
    stop_reason: str
    events: Annotated[list[TraceEvent], operator.add]
    """The trace: one event per node visit."""
