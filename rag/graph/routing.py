"""Routing: pure ``decide_*`` functions from a node's outcome to the next node and why.

Each node calls its decider once, with the state as its own update leaves it, and writes the
Decision into the state (``route``) and into its TraceEvent; the graph's conditional edges only
read it (:func:`read_route`), so the drawn path can never disagree with the one taken.
Deciders read counters and never mutate state. The routing table follows DESIGN.md: rewrite
first, then web, then abstain (CRAG routing, Yan et al. 2024; Self-RAG checks, Asai et al. 2023).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag.answer_types import describe as kind_label
from rag.answer_types import expected_type
from rag.config import Options
from rag.engines.cited import PRINTED_LEAD, printed_lead
from rag.graph.evidence import starts_in_table
from rag.models import (
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
    Decision,
)
from rag.store.retrieval import RetrievalMode

START_TARGETS = (CONTEXTUALIZE_QUESTION, ROUTE_QUESTION, DECOMPOSE_QUERY, RETRIEVE)
TARGETS: dict[str, tuple[str, ...]] = {
    CONTEXTUALIZE_QUESTION: (ROUTE_QUESTION, DECOMPOSE_QUERY, RETRIEVE, FALLBACK),
    ROUTE_QUESTION: (DECOMPOSE_QUERY, RETRIEVE, WEB_SEARCH, REPLY_DIRECTLY, FALLBACK),
    RETRIEVE: (GRADE_DOCUMENTS, GENERATE, FINALIZE_WITH_CAVEAT, FALLBACK),
    GRADE_DOCUMENTS: (GENERATE, REWRITE_QUERY, WEB_SEARCH, FINALIZE_WITH_CAVEAT, FALLBACK),
    WEB_SEARCH: (GENERATE, FINALIZE_WITH_CAVEAT, FALLBACK),
    GENERATE: (CHECK_GROUNDING, GRADE_ANSWER, FINALIZE, FINALIZE_WITH_CAVEAT, FALLBACK),
    CHECK_GROUNDING: (GRADE_ANSWER, REWRITE_QUERY, FINALIZE, FINALIZE_WITH_CAVEAT),
    GRADE_ANSWER: (WEB_SEARCH, REWRITE_QUERY, FINALIZE, FINALIZE_WITH_CAVEAT),
}
"""Node -> every node its decider may choose: the conditional edges of the graph (including the short
way out when the time budget is spent, :func:`decide_out_of_time`)."""
FIXED: dict[str, str] = {DECOMPOSE_QUERY: RETRIEVE, REWRITE_QUERY: RETRIEVE}
"""Nodes that always go to the same next node."""

State = Mapping[str, Any]


SAME_EVIDENCE = "the same evidence as the previous answer"
"""How a decision not to generate the same answer again begins (finalize_with_caveat says so)."""


def _same_evidence(state: State) -> bool:
    """The evidence is exactly what the previous answer was generated from, and read the same way.

    Not after a first correction for a figure, when a chunk opens inside a table: generate reads it with its
    table's header then (:func:`rag.graph.evidence.with_table_headers`), which it did not before.
    """
    before = state.get("answered_with")
    if before is None or [c.id for c in state.get("documents", [])] != list(before):
        return False
    return state.get("with_table_headers") or not widens_tables(state, state.get("documents", []))


def widens_tables(state: State, documents: Sequence[Any]) -> bool:
    """True when generate reads tables' rows in ``documents`` (its evidence) with their headers now.

    After a correction, for a question about a figure, when a chunk of the evidence opens inside a table.
    """
    return bool(state.get("rewrites")) and expected_type(state["question"]) == "number" and any(
        c.origin == "kb" and starts_in_table(c.text) for c in documents)


def _can_rewrite(state: State, o: Options) -> bool:
    """Rewriting is on, budget is left, and the last rewrite did not bring back the same chunks."""
    return (o.rewriting and state.get("rewrites", 0) < o.max_rewrites
            and not state.get("repeated_retrieval"))


def read_route(state: State) -> str:
    """The conditional edge: the next node its source node decided. Raises KeyError if none did."""
    return state["route"].to


def _finish(state: State, o: Options, why: str) -> Decision:
    """Finalize, or finalize_with_caveat when the evidence is weak or the answer leads with a printed line.

    Weak evidence needs no caveat when the answer check found the kind of answer asked for in the answer's
    lead passage (``answer_span``): one relevant chunk that holds the figure or name asked for is enough. With
    the answer check on, a lead that is a table's line as printed (:func:`rag.engines.cited.printed_lead`)
    always has one.
    """
    if o.answer_check and printed_lead(state.get("answer", "")):
        return Decision(FINALIZE_WITH_CAVEAT, f"{why}; {PRINTED_LEAD}")
    if state.get("ambiguous_evidence"):
        return Decision(FINALIZE_WITH_CAVEAT, f"{why}; no chunk was relevant, the answer comes from partly "
                                              f"relevant ones")
    if state.get("weak_evidence") and state.get("useful") and state.get("answer_span"):
        return Decision(FINALIZE, f"{why}; one relevant chunk holds {kind_label(state.get('answer_kind'))}, "
                                  f"the kind of answer asked for (“{state['answer_span']}”)")
    if state.get("weak_evidence"):
        n = len(state.get("documents", []))
        return Decision(FINALIZE_WITH_CAVEAT,
                        f"{why}; evidence is weak ({n} relevant, {o.min_relevant} wanted)")
    return Decision(FINALIZE, why)


MODE_FALLBACK: dict[str, RetrievalMode] = {"bm25": "hybrid", "dense": "bm25", "hybrid": "bm25"}
"""Retrieval mode -> the mode a ``switch_retriever`` correction tries next."""


def current_mode(state: State, o: Options) -> RetrievalMode:
    """The mode the next retrieve uses: the router's or a switch's choice, else Options.retrieval."""
    return state.get("retrieval_mode") or o.retrieval


def switch_to(state: State, o: Options) -> RetrievalMode | None:
    """The mode a first correction after weak grading retries with (``switch_retriever``), or None.

    Only with routing on, before any rewrite, once per run, when the last retrieval found chunks but
    too few relevant ones.
    """
    if not o.routing or state.get("rewrites", 0) or state.get("mode_switched") or seeks_type(state, o):
        return None
    if state.get("grounded") is False or state.get("useful") is False or not state.get("retrieved"):
        return None
    return MODE_FALLBACK.get(current_mode(state, o))


def decide_start(o: Options, history: Sequence[object] = ()) -> Decision:
    """The first node.

    Contextualize_question when the thread has earlier turns and chat history is on; else route_question
    when routing is on; else decompose_query when decomposition is on; else retrieve.
    """
    if history and o.use_history:
        n = len(history)
        return Decision(CONTEXTUALIZE_QUESTION,
                        f"the thread has {n} earlier turn{'s' if n != 1 else ''} and chat history is on")
    return _first_step(o, ("routing is on", "decomposition is on", "decomposition is off"))


def decide_after_contextualize(state: State, o: Options) -> Decision:
    """Then as a first question would: route_question, decompose_query or retrieve, whichever is on first."""
    return _first_step(o, ("route the standalone question", "decompose the standalone question",
                           "retrieve for the standalone question"))


def _first_step(o: Options, why: tuple[str, str, str]) -> Decision:
    """Route_question when routing is on, else decompose_query when decomposition is on, else retrieve.

    ``why`` gives the reason for each, in that order.
    """
    if o.routing:
        return Decision(ROUTE_QUESTION, why[0])
    if o.decomposition:
        return Decision(DECOMPOSE_QUERY, why[1])
    return Decision(RETRIEVE, why[2])


def decide_after_route(state: State, o: Options) -> Decision:
    """Where the router sends the question.

    No retrieval: reply directly. The web: web_search when web fallback is on (it records ``skipped: no web
    search configured`` when there is none, and the run abstains), else abstain honestly. The knowledge
    base: decompose (when on and the question is not one-hop) or retrieve.
    """
    source = state.get("datasource", "kb")
    if source == "none":
        return Decision(REPLY_DIRECTLY, "no retrieval needed")
    if source == "web":
        if o.web_fallback:  # web_search searches, or records that none is configured; then the end
            return Decision(WEB_SEARCH, "outside the knowledge base; searching the web"
                            if state.get("web_available") else
                            "outside the knowledge base; web search (none is configured)")
        return Decision(FALLBACK, "outside the knowledge base and web search is off")
    mode = current_mode(state, o)
    if o.decomposition and not state.get("one_hop"):
        return Decision(DECOMPOSE_QUERY, f"knowledge base ({mode}); decomposition is on")
    if o.decomposition:
        return Decision(RETRIEVE, f"knowledge base, {mode} retrieval; one-hop, so no decomposition")
    return Decision(RETRIEVE, f"knowledge base, {mode} retrieval")


def decide_out_of_time(state: State, o: Options, budget_s: float) -> Decision:
    """The time budget is spent: end now.

    With the answer there is (with a caveat); else a fast answer from what was retrieved (retrieving
    first when nothing was); else abstain.
    """
    spent = f"time budget ({budget_s:g} s) spent"
    if state.get("answer") and state.get("citations"):
        return Decision(FINALIZE_WITH_CAVEAT, f"{spent}; keeping the answer so far")
    if not state.get("generations") and (state.get("documents") or state.get("retrieved")):
        return Decision(GENERATE, f"{spent}; a fast answer from the chunks retrieved")
    if "retrieved" not in state and state.get("datasource", "kb") == "kb":
        return Decision(RETRIEVE, f"{spent}; one fast retrieval for a fast answer")
    return Decision(FALLBACK, f"{spent}; no answer yet")


def decide_after_decompose(state: State, o: Options) -> Decision:
    """Always retrieve: each sub-question, or the question itself."""
    return Decision(RETRIEVE, "retrieve each sub-question" if state.get("sub_queries") else "retrieve")


def decide_after_retrieve(state: State, o: Options) -> Decision:
    """Grade when grading is on; otherwise generate from whatever came back, or abstain on nothing."""
    if o.grading:
        return Decision(GRADE_DOCUMENTS, "grading is on")
    if state.get("retrieved"):
        return Decision(GENERATE, f"grading is off; {len(state['retrieved'])} chunks retrieved")
    return Decision(FALLBACK, "grading is off and no chunk was retrieved")


def decide_after_grading(state: State, o: Options) -> Decision:
    """Generate with enough evidence; else rewrite, then web, then a caveat or an abstention."""
    relevant = len(state.get("documents", []))
    rewrites, webs = state.get("rewrites", 0), state.get("web_searches", 0)
    if relevant >= o.min_relevant:
        if _same_evidence(state):
            return Decision(FINALIZE_WITH_CAVEAT, f"{SAME_EVIDENCE}: generating again would give "
                                                  f"the same answer")
        return Decision(GENERATE, f"{relevant} relevant chunks (>= {o.min_relevant})")
    short = f"{relevant} relevant (< {o.min_relevant})"
    if not state.get("retrieved"):
        # Nothing came back at all: the index is empty, and no rewrite can change that.
        if o.web_fallback and webs == 0:
            return Decision(WEB_SEARCH, "the knowledge base returned no chunks; trying web search")
        return Decision(FALLBACK, "the knowledge base returned no chunks")
    if _can_rewrite(state, o):
        if mode := switch_to(state, o):
            return Decision(REWRITE_QUERY, f"{short}; correction {rewrites + 1} of {o.max_rewrites}: "
                                           f"switch to {mode} retrieval")
        return Decision(REWRITE_QUERY, f"{short}; rewrite {rewrites + 1} of {o.max_rewrites}")
    if state.get("repeated_retrieval") and o.rewriting:
        why = "the rewrite retrieved the same chunks again, so rewriting stops early"
    else:
        why = "rewrite budget spent" if o.rewriting else "rewriting is off"
    if o.web_fallback and webs == 0:
        return Decision(WEB_SEARCH, f"{short}; {why}, trying web search")
    if relevant >= 1:
        if _same_evidence(state):
            return Decision(FINALIZE_WITH_CAVEAT, f"{SAME_EVIDENCE}: generating again would give "
                                                  f"the same answer")
        return Decision(GENERATE, f"{short}; {why}; no correction left, answering with a caveat")
    if ambiguous := partly_relevant(state, o, f"no relevant chunk and no correction left ({why})"):
        return ambiguous
    return Decision(FALLBACK, f"no relevant chunk and no correction left ({why})")


def partly_relevant(state: State, o: Options, why: str = "no evidence from the documents or the web"
                    ) -> Decision | None:
    """Generate from the partly relevant chunks (CRAG's "ambiguous" action, Yan et al. 2024), or None.

    Only with grading on, when grade_documents kept some (``ambiguous``) and no answer was made from them yet;
    the answer then always ends with a caveat (:func:`_finish`).
    """
    partly = [c.id for c in state.get("ambiguous") or []]
    if not (o.grading and partly) or partly == list(state.get("answered_with") or []):
        return None
    n = len(partly)
    return Decision(GENERATE, f"{why}; {n} partly relevant chunk{'s' if n != 1 else ''} (CRAG's ambiguous "
                              f"action): answering from them with a caveat")


def decide_after_rewrite(state: State, o: Options) -> Decision:
    """Always retrieve again, with the new query (or the new mode)."""
    if state.get("last_strategy") == "switch_retriever":
        return Decision(RETRIEVE, f"retrieve again with {current_mode(state, o)}")
    return Decision(RETRIEVE, "retrieve with the new query")


def decide_after_web_search(state: State, o: Options) -> Decision:
    """Generate from any evidence (documents or web); otherwise abstain."""
    if state.get("documents"):
        if _same_evidence(state):
            return Decision(FINALIZE_WITH_CAVEAT, f"{SAME_EVIDENCE}: web search added nothing, so "
                                                  f"generating again would give the same answer")
        return Decision(GENERATE, f"{len(state['documents'])} chunks of evidence")
    if ambiguous := partly_relevant(state, o):
        return ambiguous
    return Decision(FALLBACK, "no evidence from the documents or the web")


def decide_after_generate(state: State, o: Options) -> Decision:
    """Run the checks that are on; an answer that cites nothing abstains."""
    if not state.get("citations"):
        return Decision(FALLBACK, "the answer cites no evidence")
    if o.grounding_check:
        return Decision(CHECK_GROUNDING, "grounding check is on")
    if o.answer_check:
        return Decision(GRADE_ANSWER, "answer check is on")
    return _finish(state, o, "no checks are on")


def decide_after_grounding(state: State, o: Options) -> Decision:
    """Grounded: on to the answer check or the end. Not grounded: rewrite, else a caveat."""
    if state.get("grounded"):
        if o.answer_check:
            return Decision(GRADE_ANSWER, "grounded; answer check is on")
        return _finish(state, o, "every claim is grounded")
    n = len(state.get("ungrounded_claims", []))
    rewrites = state.get("rewrites", 0)
    if _can_rewrite(state, o):
        return Decision(REWRITE_QUERY, f"{n} ungrounded claim(s); rewrite {rewrites + 1} of {o.max_rewrites}")
    why = "rewrite budget spent" if o.rewriting else "rewriting is off"
    return Decision(FINALIZE_WITH_CAVEAT, f"{n} ungrounded claim(s); {why}")


def seeks_type(state: State, o: Options) -> str | None:
    """The answer type a ``seek_answer_type`` rewrite should look for next, or None.

    When the answer check found the type asked for missing, rewriting is on and that type was not looked
    for yet. It may go one rewrite past max_rewrites: once per type, so still bounded.
    """
    kind = state.get("missing_type")
    if not kind or state.get("useful") is not False or kind in (state.get("sought_types") or []):
        return None
    return kind if o.rewriting else None


def decide_after_answer_check(state: State, o: Options) -> Decision:
    """Useful: the end. Not useful: look for a missing answer type, a rewrite, web search, then a caveat.

    The answer lacking the type of answer asked for (a name for "who", a figure for "how many") is
    corrected in the knowledge base first: more chunks and a query aimed at that type.
    """
    if state.get("useful"):
        return _finish(state, o, "the answer addresses the question")
    if kind := seeks_type(state, o):
        return Decision(REWRITE_QUERY, f"the answer lacks {kind_label(kind)}; looking for more evidence "
                                       f"that holds one (correction "
                                       f"{state.get('rewrites', 0) + 1})")
    rewrites = state.get("rewrites", 0)
    if _can_rewrite(state, o):  # the knowledge base first (a rewrite searches the named document), then web
        return Decision(REWRITE_QUERY, f"the answer does not address the question; "
                                       f"rewrite {rewrites + 1} of {o.max_rewrites}")
    if o.web_fallback and state.get("web_searches", 0) == 0:
        return Decision(WEB_SEARCH, "the answer does not address the question; trying web search")
    return Decision(FINALIZE_WITH_CAVEAT, "the answer does not address the question; no correction left")
