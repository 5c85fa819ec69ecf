"""build_graph(): the StateGraph wiring of the self-correcting RAG graph, and node-name constants."""

from __future__ import annotations

from functools import lru_cache

from langgraph.graph import END, START, StateGraph

from rag.graph import nodes, routing
from rag.graph.nodes import RunContext
from rag.graph.state import GraphState

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


def _builder() -> StateGraph:
    builder = StateGraph(GraphState, context_schema=RunContext)
    for fn in (nodes.decompose_query, nodes.retrieve, nodes.grade_documents, nodes.rewrite_query, nodes.web_search,
               nodes.generate, nodes.check_grounding, nodes.grade_answer, nodes.finalize,
               nodes.finalize_with_caveat, nodes.fallback):
        builder.add_node(fn)
    builder.add_conditional_edges(START, routing.route_start)
    builder.add_edge(DECOMPOSE_QUERY, RETRIEVE)
    builder.add_conditional_edges(RETRIEVE, routing.route_after_retrieve)
    builder.add_conditional_edges(GRADE_DOCUMENTS, routing.route_after_grading)
    builder.add_edge(REWRITE_QUERY, RETRIEVE)
    builder.add_conditional_edges(WEB_SEARCH, routing.route_after_web_search)
    builder.add_conditional_edges(GENERATE, routing.route_after_generate)
    builder.add_conditional_edges(CHECK_GROUNDING, routing.route_after_grounding)
    builder.add_conditional_edges(GRADE_ANSWER, routing.route_after_answer_check)
    for terminal in TERMINALS:
        builder.add_edge(terminal, END)
    return builder


@lru_cache(maxsize=1)
def build_graph():
    """The compiled graph (built once per process, on first call; compiled graphs are
    stateless and safe to share). Invoke with ``context=RunContext(...)`` and
    ``config={"recursion_limit": options.recursion_limit()}``."""
    return _builder().compile()


def graph_edges() -> list[tuple[str, str]]:
    """(source, target) pairs of the compiled graph, from ``get_graph()``; START/END included
    as ``__start__``/``__end__``."""
    g = build_graph().get_graph()
    return [(e.source, e.target) for e in g.edges]
