"""The records a run's nodes exchange and keep.

Evidence (Chunk, Verdict, Citation and their trace views), a thread's earlier turns (Turn), and each node's
typed detail (NodeDetail and its subclasses). All are importable from :mod:`rag.models` too.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


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
    ocr: bool = False
    """True when the chunk's page was read by OCR (its text may hold recognition errors)."""
    head: str = ""
    """The opening words of its document (a paper's title and authors, a filing's registrant), for a
    chunk of a knowledge base past its document's first; empty otherwise. What the chunk is about when its
    own text leaves it implied (:func:`rag.graph.evidence.with_heads`)."""
    section: str = ""
    """The heading of the section the chunk opens in, from the chunks before it ("GEICO" for a chunk in the
    middle of a 10-K's GEICO section); empty when none is found. Like ``head``, what the chunk is about when
    its own text leaves it implied (:func:`rag.graph.evidence.with_sections`)."""

    def label(self) -> str:
        """Human label: ``file.pdf p.3`` or the URL."""
        return source_label(self.source, self.page, self.origin)


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
    fallback: str | None = None
    """Set when the engine could not judge and a fallback judgment was used, with why."""


PREVIEW_CHARS = 240
"""How much of a chunk's text a trace keeps (ChunkView.preview), in characters."""


class ChunkView(BaseModel):
    """A chunk as the trace keeps it: where it is from, its score, and a preview of its text."""

    model_config = ConfigDict(extra="ignore")

    id: str = ""
    source: str = ""
    page: int = 0
    """1-based; 0 for web results."""
    origin: Literal["kb", "web"] = "kb"
    score: float = 0.0
    preview: str = ""
    """The first PREVIEW_CHARS characters of the chunk's text."""

    @classmethod
    def of(cls, chunk: Chunk) -> ChunkView:
        """The view of ``chunk``."""
        return cls(id=chunk.id, source=chunk.source, page=chunk.page, origin=chunk.origin,
                   score=chunk.score, preview=chunk.text[:PREVIEW_CHARS])

    def label(self) -> str:
        """``file.pdf p.3``, or the URL of a web result."""
        return source_label(self.source, self.page, self.origin)


class GradedChunk(ChunkView):
    """A chunk with its relevance verdict, as grade_documents records it."""

    query: str = ""
    """The query or sub-question that retrieved the chunk."""
    graded_against: str = ""
    """The question the chunk was judged against (the sub-question for a decomposed question)."""
    relevant: bool = False
    grade: str = ""
    """``high``, ``medium`` or ``low``."""
    reasoning: str = ""
    cached: bool = False
    fallback: str | None = None
    """Why a fallback judgment was used, or None."""


class SubQueryHits(BaseModel):
    """The chunk ids one sub-question retrieved."""

    query: str
    chunks: list[str] = Field(default_factory=list)


class CitationRef(BaseModel):
    """A ``[n]`` marker of a generated answer and the chunk it cites (``page`` 1-based, 0 for web)."""

    n: int
    chunk_id: str
    source: str = ""
    page: int = 0
    ocr: bool = False
    """True when the cited chunk's page was read by OCR."""


class NodeDetail(BaseModel):
    """What a node records beyond its summary; each node has its own subclass (:data:`DETAIL_TYPES`)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, serialize_by_alias=True)

    fallbacks: list[str] = Field(default_factory=list)
    """Engine fallbacks taken in this step (an LLM error, a parse failure), with why."""


class Turn(BaseModel):
    """One earlier turn of a thread, as contextualize_question and the generator see it."""

    question: str
    """What the user typed."""
    answer: str = ""
    standalone_question: str = ""
    """The question as the run understood it (empty: same as ``question``)."""

    def understood(self) -> str:
        """The standalone question, or the question when there is none."""
        return self.standalone_question or self.question


class ContextualizeDetail(NodeDetail):
    """contextualize_question: the follow-up as typed, and the standalone question downstream uses."""

    original_question: str = ""
    standalone_question: str = ""
    changed: bool = False
    carried: list[str] = Field(default_factory=list)
    """Terms carried over from earlier turns (offline engine)."""
    from_turn: int | None = None
    """1-based number of the earlier turn they came from."""
    turns_seen: int = 0
    """How many earlier turns the engine was given."""
    reasoning: str = ""


class RouteDetail(NodeDetail):
    """route_question: where to look, how to retrieve, and why in plain words."""

    datasource: str = "kb"
    """``kb`` (the knowledge base), ``web`` or ``none`` (no retrieval: a greeting or a question
    about the chat itself)."""
    retrieval_mode: str = ""
    """The retrieval mode chosen for the knowledge base (``bm25``, ``dense``, ``hybrid``)."""
    hops: str = ""
    """``one`` when the router finds a one-hop question (decomposition is skipped), else empty."""
    reasoning: str = ""
    missing_terms: list[str] = Field(default_factory=list)
    """Question words the knowledge base never uses (from its term statistics)."""
    prefetched: bool = False
    """True when the first hop was retrieved and graded during routing (overlapped)."""


class DecomposeDetail(NodeDetail):
    """decompose_query: the plan for a multi-hop or comparison question."""

    kind: str = "single"
    """``single``, ``bridge`` or ``comparison``."""
    sub_questions: list[str] = Field(default_factory=list)
    reasoning: str = ""
    first_hop: list[ChunkView] = Field(default_factory=list)
    """The chunks a first retrieval for the whole question returned."""
    overlapped: bool = False
    """True when the plan was made in the same round as the first hop's grading."""


class RetrieveDetail(NodeDetail):
    """retrieve: the query, the mode, and what came back (best first)."""

    query: str = ""
    top_k: int = 0
    mode: str = "bm25"
    chunks: list[ChunkView] = Field(default_factory=list)
    sub_queries: list[SubQueryHits] = Field(default_factory=list)
    """Per sub-question hits, when the question was decomposed (retrieved in parallel)."""
    cached: bool = False
    """True when the chunks came from the retrieval cache (same question, KB revision, mode, top_k)."""
    repeated: bool = False
    """After a rewrite: the same chunks as an earlier retrieve of this run."""
    reused_from: str | None = None
    """The earlier question whose retrieval was reused (the semantic cache: close in meaning), or None."""
    reuse_similarity: float | None = None
    """Cosine similarity of that question's embedding to this query's, when reused."""


class GradeDetail(NodeDetail):
    """grade_documents: every verdict with its reason, and the evidence kept."""

    question: str = ""
    query: str = ""
    verdicts: list[GradedChunk] = Field(default_factory=list)
    relevant: int = 0
    """How many retrieved chunks were judged relevant."""
    evidence: int = 0
    """How many chunks the evidence holds after this visit (capped at top_k)."""


class RewriteDetail(NodeDetail):
    """rewrite_query: the new query, the strategy, and why."""

    from_query: str | None = Field(None, alias="from")
    query: str = ""
    strategy: str = ""
    reasoning: str = ""
    rewrite: int = 0
    """This rewrite's number, 1-based."""
    budget: int = 0
    """Options.max_rewrites."""
    ungrounded_claims: list[str] = Field(default_factory=list)
    mode: str = ""
    """The retrieval mode the next retrieve uses (changed by the ``switch_retriever`` strategy)."""
    from_mode: str = ""
    """The retrieval mode used before this correction."""


class WebSearchDetail(NodeDetail):
    """web_search: the query, the outcome (``3 web results``, ``skipped: …``, ``failed: …``), results."""

    query: str = ""
    status: str = ""
    results: list[ChunkView] = Field(default_factory=list)


class GenerateDetail(NodeDetail):
    """generate: the answer with its [n] markers, the evidence it saw, and its citations."""

    answer: str = ""
    evidence: list[ChunkView] = Field(default_factory=list)
    citations: list[CitationRef] = Field(default_factory=list)
    weak_evidence: bool = False
    speculative: bool = False
    """True when the answer was generated while grade_documents ran, from exactly this evidence."""


class GroundingDetail(NodeDetail):
    """check_grounding (Self-RAG IsSup): is every claim supported by the chunks it cites."""

    grounded: bool = False
    ungrounded_claims: list[str] = Field(default_factory=list)
    confidence: float = 0.0
    """In [0, 1]."""
    reasoning: str = ""


class AnswerCheckDetail(NodeDetail):
    """grade_answer (Self-RAG IsUse): does the answer address the question."""

    useful: bool = False
    reasoning: str = ""
    concurrent: bool = False
    """True when it ran in the same round as check_grounding (started together)."""


class EndDetail(NodeDetail):
    """finalize, finalize_with_caveat and fallback: why the run ended, in plain words."""

    stop_reason: str = ""
    caveat: str = ""
    """The caveat put before the answer (finalize_with_caveat only)."""
    out_of_time: bool = False
    """True when the run ended because its time budget was spent."""


def source_label(source: str, page: int, origin: str = "kb", *, ocr: bool = False) -> str:
    """How every view names a source: ``file.pdf p.3``, ``file.md`` (no page), or the URL.

    ``scan.pdf p.2 (OCR)`` when ``ocr`` (the page was read by OCR).
    """
    label = source if origin == "web" or not page else f"{source} p.{page}"
    return f"{label} (OCR)" if ocr and origin != "web" else label


class Citation(BaseModel):
    """Answer marker ``[n]`` -> the chunk it cites. ``n`` is 1-based; ``page`` 1-based (0 for web)."""

    n: int
    chunk_id: str
    source: str
    page: int
    origin: Literal["kb", "web"] = "kb"
    text: str = ""
    ocr: bool = False
    """True when the cited chunk's page was read by OCR."""

    def label(self) -> str:
        """``file.pdf p.3`` (``scan.pdf p.2 (OCR)`` for a page read by OCR), or the URL of a web result."""
        return source_label(self.source, self.page, self.origin, ocr=self.ocr)
