"""The corrections rewrite_query makes besides a rewritten query: another retriever, or a search for the type.

``switch_retriever`` retries the same query with another retrieval mode (routing on, first correction);
``seek_answer_type`` searches again for the kind of answer the last answer lacked (CRAG's corrective
retrieval, Yan et al. 2024, aimed by the answer check's verdict as in Self-RAG, Asai et al. 2023).
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from rag.answer_types import describe, search_query
from rag.engines.base import RelevanceGrade
from rag.graph import routing
from rag.graph.context import RunContext
from rag.graph.events import Clock, record
from rag.graph.state import GraphState
from rag.models import Chunk, RewriteDetail

SEEK_FACTOR = 8
"""A ``seek_answer_type`` correction retrieves this many times top_k chunks (at most SEEK_MAX): the next
candidates for the type the answer lacked. Chosen on the odd-numbered retrace-dev sets (13 to 25, 341 turns
with gold answers; Full answer_hit 0.736 at 2, 0.742 at 4, 0.745 at 8), reported on the even-numbered ones."""
SEEK_MAX = 100
"""The most chunks a ``seek_answer_type`` retrieve fetches, whatever top_k."""


def seek_width(top_k: int) -> int:
    """How many chunks the retrieve after a ``seek_answer_type`` correction fetches.

    SEEK_FACTOR × top_k, at most SEEK_MAX (never fewer than top_k, which is at most 50).
    """
    return min(SEEK_FACTOR * top_k, SEEK_MAX)


def seek_order(engine, question: str, fresh: list[Chunk], graded: dict[str, RelevanceGrade]) -> list[Chunk]:
    """The new relevant chunks after a ``seek_answer_type`` or scoped retrieve, best candidates first.

    First those that alone hold a passage of the kind of answer asked for (``engine.holds_answer``: a results
    table's cell that names the question's row and column, a sentence with the figure near the question's
    words), then those graded "high"; otherwise in retrieval order. The evidence keeps the first ones up to
    its cap (twice top_k), so a table that grades "medium" (its columns named by short forms) is no longer
    dropped behind prose that only mentions the question's words.
    """
    return sorted(fresh, key=lambda c: (not engine.holds_answer(question, c), graded[c.id].score != "high"))


def switch_retriever(state: GraphState, runtime: Runtime[RunContext], started: Clock, rewrites: int,
                      old_mode: str, new_mode: str) -> dict:
    """The ``switch_retriever`` correction: the same query, retrieved again with ``new_mode``."""
    o = runtime.context.options
    n = len(state.get("documents", []))
    query = state.get("query") or state["question"]
    detail = RewriteDetail(from_query=query, query=query, strategy="switch_retriever",
                           reasoning=(f"{old_mode} retrieval found {n} relevant chunk(s) ({o.min_relevant} "
                                      f"wanted); retrying the same query with {new_mode} retrieval before "
                                      f"rewriting it."),
                           rewrite=rewrites, budget=o.max_rewrites, mode=new_mode, from_mode=old_mode)
    return record(state, runtime, "rewrite_query", started,
                  f"Correction {rewrites} of {o.max_rewrites} (switch_retriever): {old_mode} -> {new_mode} "
                  f"retrieval", detail,
                  {"retrieval_mode": new_mode, "mode_switched": True, "rewrites": rewrites,
                   "last_strategy": "switch_retriever", "sub_queries": []},
                  decide=routing.decide_after_rewrite)


def seek_answer_type(state: GraphState, runtime: Runtime[RunContext], started: Clock, rewrites: int,
                      kind: str) -> dict:
    """The ``seek_answer_type`` correction: the answer lacked the type asked for, so search again for it.

    The query is the question without the words that only name its type (:func:`search_query`), the next
    retrieve fetches :func:`seek_width` chunks (the next candidates: SEEK_FACTOR × top_k), plus the front
    matter of the documents already cited when the question asks who wrote them, and the evidence may grow to
    twice top_k.
    """
    o = runtime.context.options
    question = state["question"]
    query = search_query(question)
    what = describe(kind)
    detail = RewriteDetail(from_query=state.get("query"), query=query, strategy="seek_answer_type",
                           reasoning=(f"The answer's lead passage holds no {what.removeprefix('a ')}, "
                                      f"the kind "
                                      f"of answer the question asks for; searching again for more chunks "
                                      f"({seek_width(o.top_k)}) that hold {what}."),
                           rewrite=rewrites, budget=o.max_rewrites, mode=routing.current_mode(state, o),
                           from_mode=routing.current_mode(state, o))
    return record(state, runtime, "rewrite_query", started,
                  f"Correction {rewrites} (seek_answer_type): looking for {what}", detail,
                  {"query": query, "rewrites": rewrites, "grounded": None, "useful": None,
                   "ungrounded_claims": [], "sub_queries": [], "last_strategy": "seek_answer_type",
                   "seek_type": kind, "missing_type": None,
                   "before_seek": (state.get("answer", ""), list(state.get("citations", []))),
                   "sought_types": [*(state.get("sought_types") or []), kind]},
                  decide=routing.decide_after_rewrite)
