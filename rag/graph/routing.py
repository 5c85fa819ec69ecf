"""Routers: pure functions from state to the next node name (rewrite, then web, then abstain).

Each ``decide_*`` returns a Decision (next node and why, in plain words); each ``route_*`` is
the graph's conditional edge and returns only the name. They read counters and never mutate
state. The routing table follows DESIGN.md (CRAG routing, Yan et al. 2024; Self-RAG checks,
Asai et al. 2023).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from rag.config import Options
from rag.graph.state import GraphState


class Decision(NamedTuple):
    to: str
    why: str


def _opts(state: GraphState) -> Options:
    return state.get("options") or Options()


def _finish(state: GraphState, why: str) -> Decision:
    if state.get("weak_evidence"):
        o = _opts(state)
        n = len(state.get("documents", []))
        return Decision("finalize_with_caveat",
                        f"{why}; evidence is weak ({n} relevant, {o.min_relevant} wanted)")
    return Decision("finalize", why)


def decide_start(state: GraphState) -> Decision:
    if _opts(state).decomposition:
        return Decision("decompose_query", "decomposition is on")
    return Decision("retrieve", "decomposition is off")


def decide_after_retrieve(state: GraphState) -> Decision:
    o = _opts(state)
    if o.grading:
        return Decision("grade_documents", "grading is on")
    if state.get("retrieved"):
        return Decision("generate", f"grading is off; {len(state['retrieved'])} chunks retrieved")
    return Decision("fallback", "grading is off and no chunk was retrieved")


def decide_after_grading(state: GraphState) -> Decision:
    o = _opts(state)
    relevant = len(state.get("documents", []))
    rewrites, webs = state.get("rewrites", 0), state.get("web_searches", 0)
    if relevant >= o.min_relevant:
        return Decision("generate", f"{relevant} relevant chunks (>= {o.min_relevant})")
    short = f"{relevant} relevant (< {o.min_relevant})"
    if not state.get("retrieved"):
        # Nothing came back at all: the index is empty, and no rewrite can change that.
        if o.web_fallback and webs == 0:
            return Decision("web_search", "the knowledge base returned no chunks; trying web search")
        return Decision("fallback", "the knowledge base returned no chunks")
    if o.rewriting and rewrites < o.max_rewrites:
        return Decision("rewrite_query", f"{short}; rewrite {rewrites + 1} of {o.max_rewrites}")
    if o.web_fallback and webs == 0:
        why = "rewrite budget spent" if o.rewriting else "rewriting is off"
        return Decision("web_search", f"{short}; {why}, trying web search")
    if relevant >= 1:
        return Decision("generate", f"{short}; no correction left, answering with a caveat")
    return Decision("fallback", "no relevant chunk and no correction left")


def decide_after_web_search(state: GraphState) -> Decision:
    if state.get("documents"):
        return Decision("generate", f"{len(state['documents'])} chunks of evidence")
    return Decision("fallback", "no evidence from the documents or the web")


def decide_after_generate(state: GraphState) -> Decision:
    o = _opts(state)
    if not state.get("citations"):
        return Decision("fallback", "the answer cites no evidence")
    if o.grounding_check:
        return Decision("check_grounding", "grounding check is on")
    if o.answer_check:
        return Decision("grade_answer", "answer check is on")
    return _finish(state, "no checks are on")


def decide_after_grounding(state: GraphState) -> Decision:
    o = _opts(state)
    if state.get("grounded"):
        if o.answer_check:
            return Decision("grade_answer", "grounded; answer check is on")
        return _finish(state, "every claim is grounded")
    n = len(state.get("ungrounded_claims", []))
    rewrites = state.get("rewrites", 0)
    if o.rewriting and rewrites < o.max_rewrites:
        return Decision("rewrite_query",
                        f"{n} ungrounded claim(s); rewrite {rewrites + 1} of {o.max_rewrites}")
    why = "rewrite budget spent" if o.rewriting else "rewriting is off"
    return Decision("finalize_with_caveat", f"{n} ungrounded claim(s); {why}")


def decide_after_answer_check(state: GraphState) -> Decision:
    o = _opts(state)
    if state.get("useful"):
        return _finish(state, "the answer addresses the question")
    if o.web_fallback and state.get("web_searches", 0) == 0:
        return Decision("web_search", "the answer does not address the question; trying web search")
    rewrites = state.get("rewrites", 0)
    if o.rewriting and rewrites < o.max_rewrites:
        return Decision("rewrite_query", f"the answer does not address the question; "
                                         f"rewrite {rewrites + 1} of {o.max_rewrites}")
    return Decision("finalize_with_caveat", "the answer does not address the question; "
                                            "no correction left")


def route_start(state: GraphState) -> Literal["decompose_query", "retrieve"]:
    return decide_start(state).to  # type: ignore[return-value]


def route_after_retrieve(state: GraphState) -> Literal["grade_documents", "generate", "fallback"]:
    return decide_after_retrieve(state).to  # type: ignore[return-value]


def route_after_grading(state: GraphState) -> Literal[
        "generate", "rewrite_query", "web_search", "fallback"]:
    return decide_after_grading(state).to  # type: ignore[return-value]


def route_after_web_search(state: GraphState) -> Literal["generate", "fallback"]:
    return decide_after_web_search(state).to  # type: ignore[return-value]


def route_after_generate(state: GraphState) -> Literal[
        "check_grounding", "grade_answer", "finalize", "finalize_with_caveat", "fallback"]:
    return decide_after_generate(state).to  # type: ignore[return-value]


def route_after_grounding(state: GraphState) -> Literal[
        "grade_answer", "rewrite_query", "finalize", "finalize_with_caveat"]:
    return decide_after_grounding(state).to  # type: ignore[return-value]


def route_after_answer_check(state: GraphState) -> Literal[
        "web_search", "rewrite_query", "finalize", "finalize_with_caveat"]:
    return decide_after_answer_check(state).to  # type: ignore[return-value]


DECIDERS = {
    "decompose_query": lambda state: Decision("retrieve", "retrieve each sub-question"
                                              if state.get("sub_queries") else "retrieve"),
    "retrieve": decide_after_retrieve,
    "grade_documents": decide_after_grading,
    "rewrite_query": lambda state: Decision("retrieve", "retrieve with the new query"),
    "web_search": decide_after_web_search,
    "generate": decide_after_generate,
    "check_grounding": decide_after_grounding,
    "grade_answer": decide_after_answer_check,
}
"""Node name -> its router's decision function (terminal nodes have none)."""
