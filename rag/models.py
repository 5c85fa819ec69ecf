"""The graph's node table and the record of a run.

The node names and :data:`NODES` (what each node is, the one table every reader of a trace asks), Decision
(where a run goes next and why), TraceEvent, Run and Comparison. The records these hold (Chunk, Verdict,
Citation, Turn, the node details) are defined in :mod:`rag.records` and importable from here.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, SerializeAsAny, model_validator

from rag.config import DEFAULT_COLLECTION, Options
from rag.records import (
    PREVIEW_CHARS,
    AnswerCheckDetail,
    Chunk,
    ChunkView,
    Citation,
    CitationRef,
    ContextualizeDetail,
    DecomposeDetail,
    EndDetail,
    GenerateDetail,
    GradedChunk,
    GradeDetail,
    GroundingDetail,
    NodeDetail,
    RetrieveDetail,
    RewriteDetail,
    RouteDetail,
    SubQueryHits,
    Turn,
    Verdict,
    WebSearchDetail,
    source_label,
)

__all__ = [
    "ABSTAINED", "ANSWERED", "ANSWERED_ENDS", "CAVEAT", "CHECK_GROUNDING", "CONTEXTUALIZE_QUESTION",
    "DECOMPOSE_QUERY", "DETAIL_TYPES", "FALLBACK", "FINALIZE", "FINALIZE_WITH_CAVEAT", "GENERATE",
    "GRADE_ANSWER", "GRADE_DOCUMENTS", "NODES", "NODE_ORDER", "PREVIEW_CHARS", "REPLY_DIRECTLY", "RETRIEVE",
    "REWRITE_QUERY", "ROUTE_QUESTION", "TERMINALS", "WEB_SEARCH", "AnswerCheckDetail", "Check", "Chunk",
    "ChunkView", "Citation", "CitationRef", "Comparison", "ContextualizeDetail", "Decision",
    "DecomposeDetail", "EndDetail", "GenerateDetail", "GradeDetail", "GradedChunk", "GroundingDetail",
    "Node", "NodeDetail", "RetrieveDetail", "RewriteDetail", "RouteDetail", "Run", "SubQueryHits",
    "TraceEvent", "Turn", "Verdict", "WebSearchDetail", "node", "source_label",
]

CONTEXTUALIZE_QUESTION = "contextualize_question"
ROUTE_QUESTION = "route_question"
REPLY_DIRECTLY = "reply_directly"
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

ANSWERED = "answered"
CAVEAT = "caveat"
ABSTAINED = "abstained"
"""The stop kinds an ending node gives a run (:attr:`Node.ending`)."""


@dataclass(frozen=True)
class Check:
    """What an answer check tests: the flag of its detail that says it passed, and the words for each."""

    flag: str
    """The boolean field of the node's detail (``grounded``, ``useful``)."""
    passed: str
    failed: str


@dataclass(frozen=True)
class Node:
    """What one node of the graph is: the facts every reader of a trace takes from :data:`NODES`.

    How the views draw and describe it (place, colour from its verdict, hover lines) is in
    :data:`rag.trace.views.VIEWS`; a node missing there still shows.
    """

    detail: type[NodeDetail]
    """The type of its TraceEvent.detail."""
    role: Literal["grader", "generator"] = "generator"
    """Which of ``Run.models`` its LLM calls use (pricing)."""
    ending: str | None = None
    """For a node that ends a run, the stop kind it gives the run (ANSWERED, CAVEAT, ABSTAINED); else None."""
    commits_answer: bool = False
    """It ends the run with the answer generate wrote (the answer eval and bench score)."""
    check: Check | None = None
    """For an answer check (Self-RAG's IsSup, IsUse), what it tests; None for other nodes."""
    retrieval: bool = False
    """It searches the knowledge base: what runs before its first visit prepares the question."""
    new_round: bool = False
    """A visit sends the run back to retrieve: the steps after it are the next retrieval attempt."""


NODES: dict[str, Node] = {
    CONTEXTUALIZE_QUESTION: Node(ContextualizeDetail),
    ROUTE_QUESTION: Node(RouteDetail, role="grader"),
    DECOMPOSE_QUERY: Node(DecomposeDetail),
    RETRIEVE: Node(RetrieveDetail, retrieval=True),
    GRADE_DOCUMENTS: Node(GradeDetail, role="grader"),
    REWRITE_QUERY: Node(RewriteDetail, new_round=True),
    WEB_SEARCH: Node(WebSearchDetail),
    GENERATE: Node(GenerateDetail),
    CHECK_GROUNDING: Node(GroundingDetail, check=Check("grounded", "grounded", "not grounded")),
    GRADE_ANSWER: Node(AnswerCheckDetail, role="grader", check=Check("useful", "useful", "not useful")),
    FINALIZE: Node(EndDetail, ending=ANSWERED, commits_answer=True),
    FINALIZE_WITH_CAVEAT: Node(EndDetail, ending=CAVEAT, commits_answer=True),
    FALLBACK: Node(EndDetail, ending=ABSTAINED),
    REPLY_DIRECTLY: Node(EndDetail, ending=ANSWERED),
}
"""Node name -> what the node is, in the order a run meets them first. Adding a node to the graph
(``rag/graph/``) means adding its row here."""

_UNKNOWN = Node(NodeDetail)


def node(name: str) -> Node:
    """The row of ``name`` in :data:`NODES` (a plain step for a node the table does not know)."""
    return NODES.get(name, _UNKNOWN)


NODE_ORDER = tuple(NODES)
"""Every node, in the order a run meets them first."""
TERMINALS = tuple(n for n, x in NODES.items() if x.ending)
"""The nodes that end a run."""
ANSWERED_ENDS = tuple(n for n, x in NODES.items() if x.commits_answer)
"""The nodes that end a run with the answer generate wrote (finalize, finalize_with_caveat)."""
DETAIL_TYPES: dict[str, type[NodeDetail]] = {n: x.detail for n, x in NODES.items()}
"""Node name -> the type of its TraceEvent.detail."""


@dataclass(frozen=True)
class Decision:
    """Where the run goes next (a node name) and why, in plain words.

    The one record of a route: a decider returns it, the graph state carries it (``route``) and the node's
    TraceEvent keeps it; it is written out as ``{"to": ..., "why": ...}``.
    """

    to: str
    why: str


class TraceEvent(BaseModel):
    """What one node did: appended by every node, and streamed live (custom stream mode).

    ``step`` is 1-based over the run; ``attempt`` is the nth visit to this node (1-based);
    ``started_at`` is a UNIX time in seconds; ``duration_ms`` is wall time in milliseconds.
    ``detail`` is the node's own record (:data:`DETAIL_TYPES`); a run saved before details were
    typed (a plain dict) is migrated when it is read.
    """

    step: int
    node: str
    attempt: int
    started_at: float
    duration_ms: float
    summary: str
    detail: SerializeAsAny[NodeDetail] = Field(default_factory=NodeDetail)
    route: Decision | None = None
    """Where the run went next and why (the node's decider); None for terminal nodes."""
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @model_validator(mode="before")
    @classmethod
    def _typed_detail(cls, data: Any) -> Any:
        if isinstance(data, dict) and not isinstance(data.get("detail"), NodeDetail):
            kind = DETAIL_TYPES.get(str(data.get("node")), NodeDetail)
            data = {**data, "detail": kind.model_validate(data.get("detail") or {})}
        return data



class Run(BaseModel):
    """Everything about one run of the graph. Durations in ms; ``created_at`` is UNIX seconds."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    question: str
    """What the user typed."""
    standalone_question: str = ""
    """The question every node after contextualize_question used (the follow-up rewritten with
    the thread's history); empty when the run had no history or history was off."""
    options: Options
    engine: str
    models: dict[str, str] = Field(default_factory=dict)
    knowledge_base: str = DEFAULT_COLLECTION
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
    error: str | None = None
    """Set when the run was stopped by an error; the answer then says so."""
    error_node: str | None = None
    """The node that raised the error (the route target of the last event)."""
    thread_id: str = ""
    """The LangGraph thread its checkpoints are in (a conversation's id, else the run's own); empty when
    no checkpoint was saved (such a run cannot be re-run from a step)."""
    parent_run_id: str | None = None
    """For a re-run from a step (:func:`rag.rerun.rerun_from`): the run it was forked from."""
    from_node: str | None = None
    """For a re-run: the node it re-ran from (step ``reused_steps + 1``)."""
    reused_steps: int = 0
    """For a re-run: how many of its first events were reused from the parent run, not executed again
    (their calls and tokens are not in this run's totals)."""

    @property
    def rewrites(self) -> int:
        """How many times rewrite_query ran."""
        return sum(1 for e in self.events if e.node == "rewrite_query")

    def cli_json(self) -> dict:
        """The shape ``python -m rag ask --json`` prints."""
        return {"run_id": self.id, "answer": self.answer,
                "citations": [{"n": c.n, "source": c.source, "page": c.page,
                               "chunk_id": c.chunk_id, "origin": c.origin} for c in self.citations],
                "path": self.path, "events": [e.model_dump() for e in self.events],
                "stop_reason": self.stop_reason, "llm_calls": self.llm_calls,
                "engine": self.engine, "duration_ms": self.duration_ms,
                "standalone_question": self.standalone_question or self.question,
                **({"parent_run_id": self.parent_run_id, "from_node": self.from_node,
                    "reused_steps": self.reused_steps} if self.parent_run_id else {})}


class Comparison(BaseModel):
    """One question answered by several pipelines.

    ``labels[i]`` names ``runs[i]`` (``Naive RAG``, ``Full``, ``Custom: grading, rewriting``); ``created_at``
    is UNIX seconds.
    """

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    question: str
    created_at: float = Field(default_factory=time.time)
    labels: list[str] = Field(default_factory=list)
    runs: list[Run] = Field(default_factory=list)
