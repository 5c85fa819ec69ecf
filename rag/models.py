"""The records every part of Retrace shares: Chunk, Citation, Verdict, TraceEvent, Run, Comparison,
and the graph's node names."""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal, Optional

from pydantic import BaseModel, Field

from rag.config import Options

DECOMPOSE_QUERY = "decompose_query"
RETRIEVE = "retrieve"
GRADE_DOCUMENTS = "grade_documents"
REWRITE_QUERY = "rewrite_query"
WEB_SEARCH = "web_search"
GENERATE = "generate"
CHECK_GROUNDING = "check_grounding"
GRADE_ANSWER = "grade_answer"
FINALIZE = "finalize"
FINALIZE_WITH_CAVEAT = "finalize_with_caveat"
FALLBACK = "fallback"

NODE_ORDER = (DECOMPOSE_QUERY, RETRIEVE, GRADE_DOCUMENTS, REWRITE_QUERY, WEB_SEARCH, GENERATE, CHECK_GROUNDING,
              GRADE_ANSWER, FINALIZE, FINALIZE_WITH_CAVEAT, FALLBACK)
"""Every node, in the order a run meets them first."""
TERMINALS = (FINALIZE, FINALIZE_WITH_CAVEAT, FALLBACK)
"""The nodes that end a run."""


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


class Run(BaseModel):
    """Everything about one run of the graph. Durations in ms; ``created_at`` is UNIX seconds."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    question: str
    options: Options
    engine: str
    models: dict[str, str] = Field(default_factory=dict)
    knowledge_base: str = "default"
    answer: str = ""
    citations: list[Citation] = Field(default_factory=list)
    path: list[str] = Field(default_factory=list)
    """Node names in the order they ran."""
    events: list[TraceEvent] = Field(default_factory=list)
    stop_reason: str = ""
    """Why the run ended, in plain words."""
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    duration_ms: float = 0.0
    created_at: float = Field(default_factory=time.time)
    error: Optional[str] = None
    """Set when the run was stopped by an error; the answer then says so."""
    error_node: Optional[str] = None
    """The node that raised the error (the route target of the last event)."""

    @property
    def rewrites(self) -> int:
        return sum(1 for e in self.events if e.node == "rewrite_query")

    def cli_json(self) -> dict:
        """The shape ``python -m rag ask --json`` prints."""
        return {"run_id": self.id, "answer": self.answer,
                "citations": [{"n": c.n, "source": c.source, "page": c.page,
                               "chunk_id": c.chunk_id, "origin": c.origin} for c in self.citations],
                "path": self.path, "events": [e.model_dump() for e in self.events],
                "stop_reason": self.stop_reason, "llm_calls": self.llm_calls,
                "engine": self.engine, "duration_ms": self.duration_ms}


class Comparison(BaseModel):
    """One question answered by several pipelines. ``labels[i]`` names ``runs[i]``
    (``Naive RAG``, ``Full``, ``Custom: grading, rewriting``); ``created_at`` is UNIX seconds."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    question: str
    created_at: float = Field(default_factory=time.time)
    labels: list[str] = Field(default_factory=list)
    runs: list[Run] = Field(default_factory=list)
