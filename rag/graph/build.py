"""build_graph(): the StateGraph wiring of the self-correcting RAG graph.

Each node is registered by its function (its name is never written twice); each routing node's
conditional edge reads the decision the node made (:func:`rag.graph.routing.read_route`), with
the targets listed once in :data:`rag.graph.routing.TARGETS`.
"""

from __future__ import annotations

from functools import lru_cache

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from rag.graph import checks, endings, nodes, route, routing
from rag.graph.context import RunContext
from rag.graph.state import GraphState, InputState
from rag.models import TERMINALS

NODE_FUNCTIONS = (nodes.contextualize_question, route.route_question, nodes.decompose_query, nodes.retrieve,
                  nodes.grade_documents, nodes.rewrite_query, nodes.web_search, nodes.generate,
                  checks.check_grounding, checks.grade_answer, endings.finalize, endings.finalize_with_caveat,
                  endings.fallback, route.reply_directly)
"""Every node function, registered under its own name (its row in rag.models.NODES says what it is)."""


def _builder() -> StateGraph[GraphState, RunContext, InputState, GraphState]:
    builder = StateGraph(GraphState, context_schema=RunContext, input_schema=InputState)
    for fn in NODE_FUNCTIONS:
        builder.add_node(fn)
    builder.add_conditional_edges(START, routing.read_route, list(routing.START_TARGETS))
    for source, target in routing.FIXED.items():
        builder.add_edge(source, target)
    for source, targets in routing.TARGETS.items():
        builder.add_conditional_edges(source, routing.read_route, list(targets))
    for terminal in TERMINALS:
        builder.add_edge(terminal, END)
    return builder


@lru_cache(maxsize=8)
def build_graph(checkpointer: BaseCheckpointSaver | None = None,
                ) -> CompiledStateGraph[GraphState, RunContext, InputState, GraphState]:
    """The compiled graph, built once per process and checkpointer on first call.

    (compiled graphs are stateless and safe to share). With a ``checkpointer``
    (:func:`rag.history.checkpoints.open_checkpointer`) a checkpoint is saved after every step, and every
    call passes ``config={"configurable": {"thread_id": ...}}``.

    Invoke with ``{"question": q, "history": turns, "route": routing.decide_start(options, turns)}``,
    ``context=RunContext(..., options=options)`` and
    ``config={"recursion_limit": options.recursion_limit()}``.
    """
    return _builder().compile(checkpointer=checkpointer)


def graph_edges() -> list[tuple[str, str]]:
    """(source, target) pairs of the compiled graph, from ``get_graph()``.

    START/END included as ``__start__``/``__end__``.
    """
    g = build_graph().get_graph()
    return [(e.source, e.target) for e in g.edges]
