"""The one table of per-node views: how each node is placed, coloured and described.

Every view of a trace (the flow and its hover text, the replay, the timeline, the Trace page,
the HTML export) asks :data:`VIEWS` how to show a node, and :data:`rag.models.NODES` what the node is
(its detail type, whether it ends a run and how, whether it checks the answer, which model it prices
as), instead of coding either itself. A node without a row here still shows: grey, in an extra row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from rag.models import (
    ABSTAINED,
    ANSWERED,
    CAVEAT,
    CHECK_GROUNDING,
    CONTEXTUALIZE_QUESTION,
    DECOMPOSE_QUERY,
    FALLBACK,
    FINALIZE,
    FINALIZE_WITH_CAVEAT,
    GENERATE,
    GRADE_ANSWER,
    GRADE_DOCUMENTS,
    REPLY_DIRECTLY,
    RETRIEVE,
    REWRITE_QUERY,
    ROUTE_QUESTION,
    WEB_SEARCH,
    AnswerCheckDetail,
    ContextualizeDetail,
    DecomposeDetail,
    EndDetail,
    GenerateDetail,
    GradeDetail,
    GroundingDetail,
    NodeDetail,
    RetrieveDetail,
    RewriteDetail,
    RouteDetail,
    TraceEvent,
    WebSearchDetail,
    node,
    source_label,
)
from rag.text import clip
from rag.trace import formats

OK = "ok"
WEAK = "weak"
FAILED = "failed"
VISITED = "visited"
"""Visited, with no verdict of its own."""
NOT_VISITED = "not_visited"

STATUS_COLORS = {OK: "#2e9e5b", WEAK: "#f0b429", FAILED: "#d64545", VISITED: "#5b7db1",
                 NOT_VISITED: "#eef0f3"}
"""Status -> box fill: green passed, amber weak/retried/caveat, red failed/abstained, blue visited."""
STATUS_TEXT_COLORS = {OK: "#ffffff", WEAK: "#1f2937", FAILED: "#ffffff", VISITED: "#ffffff",
                      NOT_VISITED: "#8a93a3"}
STATUS_LABELS = {OK: "passed", WEAK: "weak / retried / caveat", FAILED: "failed / abstained",
                 NOT_VISITED: "not visited"}

def short(text: object, limit: int = 140) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters with an ellipsis."""
    return clip(text, limit)


@dataclass(frozen=True)
class NodeView:
    """How the views show one node. Functions take the node's typed detail (``rag.models.DETAIL_TYPES``)."""

    position: tuple[float, float]
    """Where the flow figure draws the node, in data units."""
    status: Callable[[NodeDetail, int], str] = field(default=lambda d, min_relevant: VISITED)
    """(detail, Options.min_relevant) -> OK, WEAK, FAILED or VISITED: the verdict of one visit."""
    lines: Callable[[NodeDetail], list[str]] = field(default=lambda d: [])
    """A compact plain-text account of the visit (counts, strategy, query), for hover text."""
    items: Callable[[NodeDetail], list[str]] = field(default=lambda d: [])
    """The visit's list of things in full (sub-questions, results, citations, claims), plain text."""


def _retrieve_lines(d: NodeDetail) -> list[str]:
    assert isinstance(d, RetrieveDetail)
    best = ", ".join(f"{c.label()} ({formats.score(c.score)})" for c in d.chunks[:3])
    return [f"query: {short(d.query)}",
            f"{formats.plural(len(d.chunks), 'chunk')} ({d.mode}, top_k {d.top_k}"
            f"{', cached' if d.cached else ''})"
            + (f"; best: {best}" if best else "")] + (
        [f"retrieval reused from a similar question: “{short(d.reused_from)}” (cosine "
         f"{formats.score(d.reuse_similarity)})"] if d.reused_from else [])


_WHERE = {"kb": "knowledge base", "web": "web", "none": "no retrieval"}


def _route_status(d: NodeDetail, min_relevant: int) -> str:
    return OK if isinstance(d, RouteDetail) and d.datasource == "kb" else VISITED


def _route_lines(d: NodeDetail) -> list[str]:
    assert isinstance(d, RouteDetail)
    out = [f"datasource: {_WHERE.get(d.datasource, d.datasource)}"
           + (f"; retrieval: {d.retrieval_mode}" if d.retrieval_mode else "")
           + ("; one-hop (no decomposition)" if d.hops == "one" else "")
           + ("; first hop prefetched" if d.prefetched else "")]
    if d.missing_terms:
        out.append("not in the knowledge base: " + short(", ".join(d.missing_terms), 100))
    return out + ([f"why: {short(d.reasoning)}"] if d.reasoning else [])


def _route_items(d: NodeDetail) -> list[str]:
    assert isinstance(d, RouteDetail)
    return [_WHERE.get(d.datasource, d.datasource) + (f" · {d.retrieval_mode}" if d.retrieval_mode else "")
            + f" · {d.reasoning}"]


def _grade_status(d: NodeDetail, min_relevant: int) -> str:
    assert isinstance(d, GradeDetail)
    return OK if d.evidence >= min_relevant else WEAK if d.evidence > 0 else FAILED


def _grade_lines(d: NodeDetail) -> list[str]:
    assert isinstance(d, GradeDetail)
    grades = Counter(v.grade for v in d.verdicts)
    n_rel = sum(v.relevant for v in d.verdicts)
    out = [f"verdicts: {n_rel} relevant / {len(d.verdicts) - n_rel} not (high {grades['high']}, "
           f"medium {grades['medium']}, low {grades['low']}); evidence {d.evidence}"]
    if fallbacks := sum(1 for v in d.verdicts if v.fallback):
        out.append(formats.plural(fallbacks, "fallback judgment"))
    return out


def _rewrite_lines(d: NodeDetail) -> list[str]:
    assert isinstance(d, RewriteDetail)
    out = [f"strategy: {d.strategy}; rewrite {d.rewrite} of {d.budget}", f"query: {short(d.query)}"]
    if d.strategy == "switch_retriever":
        out.append(f"retrieval: {d.from_mode} -> {d.mode}")
    return out + ([f"why: {short(d.reasoning)}"] if d.reasoning else [])


def _web_status(d: NodeDetail, min_relevant: int) -> str:
    assert isinstance(d, WebSearchDetail)
    return FAILED if d.status.startswith("failed") else OK if d.results else WEAK


def _web_lines(d: NodeDetail) -> list[str]:
    assert isinstance(d, WebSearchDetail)
    return [f"status: {d.status}; {len(d.results)} results"]


def _generate_status(d: NodeDetail, min_relevant: int) -> str:
    assert isinstance(d, GenerateDetail)
    return FAILED if not d.citations else WEAK if d.weak_evidence else OK


def _generate_lines(d: NodeDetail) -> list[str]:
    assert isinstance(d, GenerateDetail)
    return [f"{len(d.citations)} citations from {len(d.evidence)} chunks of evidence"
            + ("; weak evidence" if d.weak_evidence else "")]


def _grounding_lines(d: NodeDetail) -> list[str]:
    assert isinstance(d, GroundingDetail)
    out = [f"grounded: {d.grounded}; confidence {formats.score(d.confidence)}; "
           f"{formats.plural(len(d.ungrounded_claims), 'ungrounded claim')}"]
    return out + ([f"e.g. {short(d.ungrounded_claims[0], 100)}"] if d.ungrounded_claims else [])


def _answer_lines(d: NodeDetail) -> list[str]:
    assert isinstance(d, AnswerCheckDetail)
    return ([f"useful: {d.useful}" + ("; ran alongside check_grounding" if d.concurrent else "")]
            + ([f"why: {short(d.reasoning)}"] if d.reasoning else []))


def _caveat_lines(d: NodeDetail) -> list[str]:
    assert isinstance(d, EndDetail)
    return [short(d.caveat)] if d.caveat else []


def _contextualize_lines(d: NodeDetail) -> list[str]:
    assert isinstance(d, ContextualizeDetail)
    out = [f"asked: {short(d.original_question)}",
           f"understood as: {short(d.standalone_question)}" if d.changed else "stands alone: unchanged"]
    if d.carried:
        out.append(f"carried from turn {d.from_turn}: {short(', '.join(d.carried), 80)}")
    return out + ([f"why: {short(d.reasoning)}"] if d.reasoning else [])


def _standalone(d: NodeDetail) -> list[str]:
    assert isinstance(d, ContextualizeDetail)
    return [f"asked: “{d.original_question}”", f"understood as: “{d.standalone_question}”"]


def _sub_questions(d: NodeDetail) -> list[str]:
    assert isinstance(d, DecomposeDetail)
    return [f"sub-question: {q}" for q in d.sub_questions]


def _new_query(d: NodeDetail) -> list[str]:
    assert isinstance(d, RewriteDetail)
    if d.strategy == "switch_retriever":
        return [f"switch_retriever · {d.from_mode} -> {d.mode}, same query: “{d.query}”"]
    return [f"{d.strategy} · new query: “{d.query}”"]


def _results(d: NodeDetail) -> list[str]:
    assert isinstance(d, WebSearchDetail)
    return [r.source for r in d.results]


def _citations(d: NodeDetail) -> list[str]:
    assert isinstance(d, GenerateDetail)
    return [f"[{c.n}] {source_label(c.source, c.page, ocr=c.ocr)}" for c in d.citations]


def _claims(d: NodeDetail) -> list[str]:
    assert isinstance(d, GroundingDetail)
    return [f"ungrounded: {c}" for c in d.ungrounded_claims]


def _check_status(name: str) -> Callable[[NodeDetail, int], str]:
    """An answer check's verdict: passed when its detail's flag (``NODES[name].check.flag``) is set."""
    check = node(name).check
    assert check is not None, name
    return lambda d, min_relevant: OK if getattr(d, check.flag) else FAILED


ENDING_STATUS = {ANSWERED: OK, CAVEAT: WEAK, ABSTAINED: FAILED}
"""Stop kind of an ending node (``NODES[name].ending``) -> its colour."""


def _ending_status(name: str) -> Callable[[NodeDetail, int], str]:
    ending = node(name).ending
    assert ending is not None, name
    return _always(ENDING_STATUS[ending])


def _always(status: str) -> Callable[[NodeDetail, int], str]:
    return lambda d, min_relevant: status


# Hand-placed layout: the main line left to right at y=0, the corrections (rewrite_query,
# web_search) above, the other endings below. web_search sits over check_grounding and fallback
# under generate so that the web_search -> fallback edge crosses the main line between two boxes.
VIEWS: dict[str, NodeView] = {
    # contextualize_question: below START, left of fallback's row, so no edge crosses a box.
    CONTEXTUALIZE_QUESTION: NodeView((-2.25, -1.25), _always(OK), _contextualize_lines,
                                     _standalone),
    # route_question opens the main line, left of retrieve; reply_directly ends just below it.
    ROUTE_QUESTION: NodeView((-1.5, 0.0), _route_status, _route_lines, _route_items),
    REPLY_DIRECTLY: NodeView((-0.75, -1.25), _ending_status(REPLY_DIRECTLY)),
    DECOMPOSE_QUERY: NodeView((-0.75, 1.25), _always(OK), items=_sub_questions),
    RETRIEVE: NodeView((0.0, 0.0), lambda d, m: OK if isinstance(d, RetrieveDetail) and d.chunks else FAILED,
                       _retrieve_lines),
    GRADE_DOCUMENTS: NodeView((1.5, 0.0), _grade_status, _grade_lines),
    REWRITE_QUERY: NodeView((0.75, 1.25), _always(WEAK), _rewrite_lines, _new_query),
    WEB_SEARCH: NodeView((4.5, 1.25), _web_status, _web_lines, _results),
    GENERATE: NodeView((3.0, 0.0), _generate_status, _generate_lines, _citations),
    CHECK_GROUNDING: NodeView((4.5, 0.0), _check_status(CHECK_GROUNDING), _grounding_lines, _claims),
    GRADE_ANSWER: NodeView((6.0, 0.0), _check_status(GRADE_ANSWER), _answer_lines),
    FINALIZE: NodeView((7.5, 0.0), _ending_status(FINALIZE)),
    FINALIZE_WITH_CAVEAT: NodeView((6.75, -1.25), _ending_status(FINALIZE_WITH_CAVEAT), _caveat_lines),
    FALLBACK: NodeView((3.0, -1.25), _ending_status(FALLBACK)),
}
"""Node name -> its view. A node missing here still shows (grey, in an extra row)."""

EDGE_BENDS: dict[tuple[str, str], float] = {
    (RETRIEVE, GENERATE): -0.42,
    (GENERATE, GRADE_ANSWER): 0.42,
    (GENERATE, FINALIZE): 0.68,
}
"""Bends (the curve's greatest distance from the straight line, in data units, positive to the left of
the edge's direction) for edges of this layout that would otherwise run through another box; other
edges find their own bend (rag.trace.geometry)."""

_UNKNOWN = NodeView((0.0, 0.0))


def view(node: str) -> NodeView:
    """The view of ``node`` (a neutral one for a node the table does not know)."""
    return VIEWS.get(node, _UNKNOWN)


def event_status(event: TraceEvent, min_relevant: int = 2) -> str:
    """The verdict of one node visit: ``ok``, ``weak``, ``failed`` or ``visited`` (no verdict).

    ``min_relevant`` is the run's Options.min_relevant (grade_documents is ``ok`` when the
    evidence it left reaches it). Engine fallbacks make an otherwise ``ok`` visit ``weak``.
    """
    status = view(event.node).status(event.detail, min_relevant)
    return WEAK if status == OK and event.detail.fallbacks else status


def detail_lines(event: TraceEvent) -> list[str]:
    """The node's plain-text account of one visit, plus engine fallbacks and LLM usage."""
    out = list(view(event.node).lines(event.detail))
    if event.detail.fallbacks:
        out.append(f"engine fallback: {short(event.detail.fallbacks[0], 100)}")
    if event.llm_calls:
        out.append(f"{formats.plural(event.llm_calls, 'LLM call')}, {formats.count(event.prompt_tokens)}+"
                   f"{formats.plural(event.completion_tokens, 'token')}")
    return out
