"""The graph's nodes.

One ``verb_noun(state, runtime)`` function each, returning only the keys it changes plus its TraceEvent and,
for a node that routes, its routing decision.

Counters rise only in the node that acts (rewrite_query, web_search, generate); deciders in
:mod:`rag.graph.routing` read them. Each node calls its decider exactly once
(:func:`rag.graph.events.record`).
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from rag.engines.base import Answer, AnswerCitation, RelevanceGrade
from rag.graph import routing
from rag.graph.context import RunContext
from rag.graph.events import Clock, record
from rag.graph.state import GraphState
from rag.models import (
    AnswerCheckDetail,
    Chunk,
    ChunkView,
    Citation,
    CitationRef,
    ContextualizeDetail,
    DecomposeDetail,
    GenerateDetail,
    GradedChunk,
    GradeDetail,
    GroundingDetail,
    RetrieveDetail,
    RewriteDetail,
    SubQueryHits,
    Verdict,
    WebSearchDetail,
)
from rag.text import clip
from rag.web import WebSearchError


def contextualize_question(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Rewrite a follow-up into a standalone question with the thread's earlier turns (``history``).

    The standalone question replaces ``question`` for every later node; what the user typed is kept in
    ``original_question``.
    """
    started = Clock.start()
    typed = state["question"]
    history = list(state.get("history") or [])
    result = runtime.context.engine.contextualize(typed, history)
    standalone = " ".join(result.question.split()) or typed
    changed = standalone != typed
    summary = (f"Understood as: {standalone}" if changed
               else "The question stands alone: unchanged")
    detail = ContextualizeDetail(original_question=typed, standalone_question=standalone, changed=changed,
                                 carried=result.carried, from_turn=result.from_turn,
                                 turns_seen=len(history), reasoning=result.reasoning)
    return record(state, runtime, "contextualize_question", started, summary, detail,
                   {"question": standalone, "original_question": typed}, [result.meta],
                   routing.decide_after_contextualize)


def decompose_query(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Split a multi-hop or comparison question into 2-4 sub-questions, each to be retrieved on its own.

    A first retrieval for the question shows the engine the bridge entities.
    """
    started = Clock.start()
    o = runtime.context.options
    question = state["question"]
    first_hop = runtime.context.retriever(runtime.context.kb, question, o.top_k, o.retrieval)
    plan = runtime.context.engine.decompose(question, first_hop)
    subs = list(plan.sub_questions) if plan.kind != "single" else []
    summary = (f"{plan.kind}: {len(subs)} sub-questions" if subs
               else "single-hop: no sub-questions needed")
    detail = DecomposeDetail(kind=plan.kind, sub_questions=subs, reasoning=plan.reasoning,
                             first_hop=[ChunkView.of(c) for c in first_hop])
    return record(state, runtime, "decompose_query", started, summary, detail, {"sub_queries": subs},
                   [plan.meta], routing.decide_after_decompose)


def _interleave(lists: list[list[Chunk]], shares: list[int] | None = None) -> list[Chunk]:
    """Weighted round-robin over ranked lists.

    (``shares[i]`` items from list i per round, 1 by default), first occurrence of each chunk kept: every
    sub-question keeps its best chunks near the top.
    """
    shares = shares or [1] * len(lists)
    out: dict[str, Chunk] = {}
    cursors = [0] * len(lists)
    while any(c < len(x) for c, x in zip(cursors, lists, strict=False)):
        for i, ranked in enumerate(lists):
            for _ in range(shares[i]):
                if cursors[i] < len(ranked):
                    out.setdefault(ranked[cursors[i]].id, ranked[cursors[i]])
                    cursors[i] += 1
    return list(out.values())


def retrieve(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Fetch the top_k chunks for the current query, or top_k for each sub-question."""
    started = Clock.start()
    o = runtime.context.options
    query = state.get("query") or state["question"]
    queries = state.get("sub_queries") or [query]
    per_query = [runtime.context.retriever(runtime.context.kb, q, o.top_k, o.retrieval)
                 for q in queries]
    chunks = _interleave(per_query)
    query_of: dict[str, str] = {}
    for q, found in zip(queries, per_query, strict=False):
        for c in found:
            query_of.setdefault(c.id, q)
    ids = {c.id for c in chunks}
    repeated = bool(state.get("rewrites")) and any(
        isinstance(e.detail, RetrieveDetail) and {c.id for c in e.detail.chunks} == ids
        for e in state.get("events", []) if e.node == "retrieve")
    update: dict = {"query": query, "retrieved": chunks, "query_of": query_of,
                    "repeated_retrieval": repeated}
    if not o.grading:
        update["documents"] = chunks[:o.top_k]
    best = f"; best {chunks[0].label()} ({chunks[0].score:.2f})" if chunks else ""
    if repeated:
        best += "; the same chunks as before"
    detail = RetrieveDetail(query=query, top_k=o.top_k, mode=o.retrieval,
                            chunks=[ChunkView.of(c) for c in chunks], repeated=repeated)
    if len(queries) > 1:
        detail.sub_queries = [SubQueryHits(query=q, chunks=[c.id for c in found])
                              for q, found in zip(queries, per_query, strict=False)]
        summary = (f"Retrieved {len(chunks)} chunks for {len(queries)} sub-questions"
                   f"{best}")
    else:
        summary = f"Retrieved {len(chunks)} chunks for '{clip(query, 80)}'{best}"
    return record(state, runtime, "retrieve", started, summary, detail, update,
                   decide=routing.decide_after_retrieve)


EVIDENCE_SHARE_OF_QUESTION = 3
"""Evidence slots per round for the user's question when it is one of the sub-questions (each
other sub-question gets one): its chunks carry the first hop. Measured on HotpotQA: 3 slots
0.645 recall_all, 2 slots 0.625."""


def grade_documents(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Grade every retrieved chunk against the question (or the sub-question that retrieved it).

    Keep the relevant ones as evidence.

    Evidence accumulates over attempts (deduplicated by chunk id) and is capped at top_k:
    relevant chunks in retrieval order (the grade filters, the retriever's finer ranking
    orders), taken in turn from each sub-question so every hop is represented.
    """
    started = Clock.start()
    o = runtime.context.options
    question = state["question"]
    chunks = state.get("retrieved", [])
    query_of = state.get("query_of") or {}
    fetched_for = {c.id: query_of.get(c.id, state.get("query", question)) for c in chunks}
    # Sub-question chunks are judged against their sub-question; otherwise against the
    # user's question, whatever query a rewrite retrieved them with.
    asked = {c.id: fetched_for[c.id] if state.get("sub_queries") else question for c in chunks}
    by_query: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_query.setdefault(asked[c.id], []).append(c)
    graded: dict[str, RelevanceGrade] = {}
    partial = bool(state.get("sub_queries"))  # each passage may answer only its hop
    for q, group in by_query.items():
        graded.update({c.id: g for c, g in
                       zip(group, runtime.context.engine.grade(q, group, partial=partial), strict=False)})
    if partial:
        _regrade_other_hops(runtime.context.engine, state.get("sub_queries") or [], by_query,
                            graded, asked)
    grades = [graded[c.id] for c in chunks]
    attempt = 1 + sum(1 for e in state.get("events", []) if e.node == "grade_documents")
    verdicts = [Verdict(chunk_id=c.id, source=c.source, page=c.page, query=fetched_for[c.id],
                        relevant=g.relevant, score=g.score, reasoning=g.reasoning,
                        attempt=attempt, fallback=g.meta.fallback)
                for c, g in zip(chunks, grades, strict=False)]
    kept = {c.id: c for c in state.get("documents", [])}
    relevant_per_query = [
        [c for c in group
         if graded[c.id].relevant and c.id not in kept]
        for group in by_query.values()]
    shares = [EVIDENCE_SHARE_OF_QUESTION if q == question else 1 for q in by_query]
    documents = (list(kept.values()) + _interleave(relevant_per_query, shares))[:o.top_k]
    n_rel = sum(g.relevant for g in grades)
    detail = GradeDetail(
        question=question, query=state.get("query", question), relevant=n_rel, evidence=len(documents),
        verdicts=[GradedChunk(**ChunkView.of(c).model_dump(), query=fetched_for[c.id],
                              graded_against=asked[c.id],
                              relevant=g.relevant, grade=g.score, reasoning=g.reasoning, cached=g.meta.cached,
                              fallback=g.meta.fallback) for c, g in zip(chunks, grades, strict=False)])
    return record(state, runtime, "grade_documents", started,
                   f"{n_rel} of {len(chunks)} chunks relevant; {len(documents)} in evidence",
                   detail, {"verdicts": verdicts, "documents": documents},
                   [g.meta for g in grades], routing.decide_after_grading)


def _regrade_other_hops(engine, sub_queries: list[str], by_query: dict[str, list[Chunk]],
                        graded: dict, asked: dict[str, str]) -> None:
    """A chunk one sub-question retrieved may hold another hop.

    (the question's retrieval often finds the bridge's passage): a chunk not relevant to its own sub-question
    is graded against the others, and is relevant when it holds one of them. Updates ``graded`` and ``asked``.
    """
    for q, group in by_query.items():
        misses = [c for c in group if not graded[c.id].relevant]
        for other in sub_queries:
            if other == q or not misses:
                continue
            for c, g in zip(misses, engine.grade(other, misses, partial=True), strict=False):
                if g.relevant:
                    graded[c.id] = g.model_copy(update={"reasoning": (
                        f"Not relevant to the sub-question that retrieved it, but to the hop "
                        f"'{clip(other, 80)}': {g.reasoning}")})
                    asked[c.id] = other
            misses = [c for c in misses if not graded[c.id].relevant]


def rewrite_query(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Rewrite the query from the failed chunks and their grade reasons.

    Or from the ungrounded claims after a failed grounding check.
    """
    started = Clock.start()
    o = runtime.context.options
    rewrites = state.get("rewrites", 0) + 1
    last_attempt = max((v.attempt for v in state.get("verdicts", [])), default=0)
    verdicts = [v for v in state.get("verdicts", []) if v.attempt == last_attempt]
    previous = [e.detail.query for e in state.get("events", []) if isinstance(e.detail, RetrieveDetail)]
    claims = state.get("ungrounded_claims", []) if state.get("grounded") is False else []
    result = runtime.context.engine.rewrite(
        state["question"], state.get("query") or state["question"], verdicts=verdicts,
        chunks=state.get("retrieved", []), ungrounded_claims=claims, previous_queries=previous)
    detail = RewriteDetail(from_query=state.get("query"), query=result.query, strategy=result.strategy,
                           reasoning=result.reasoning, rewrite=rewrites, budget=o.max_rewrites,
                           ungrounded_claims=list(claims))
    # Clearing the last verdicts makes the next answer re-earn its checks.
    return record(state, runtime, "rewrite_query", started,
                   f"Rewrite {rewrites} of {o.max_rewrites} ({result.strategy}): "
                   f"'{clip(result.query, 80)}'",
                   detail, {"query": result.query, "rewrites": rewrites, "grounded": None,
                            "useful": None, "ungrounded_claims": [], "sub_queries": []},
                   [result.meta], routing.decide_after_rewrite)


def web_search(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Search the web for the question and add the results to the evidence.

    With no web search configured it records ``skipped: no web search configured``.
    A failing search is recorded and routing continues.
    """
    started = Clock.start()
    searches = state.get("web_searches", 0) + 1
    web = runtime.context.web
    query = state["question"]
    documents = list(state.get("documents", []))
    if web is None:
        note = "skipped: no web search configured"
        results: list[Chunk] = []
    else:
        try:
            results = web.search(query)
            note = f"{len(results)} web results"
        except WebSearchError as exc:
            results, note = [], f"failed: {exc}"
    seen = {c.id for c in documents}
    documents += [c for c in results if c.id not in seen]
    return record(state, runtime, "web_search", started, f"Web search {note}",
                   WebSearchDetail(query=query, status=note, results=[ChunkView.of(c) for c in results]),
                   {"web_searches": searches, "documents": documents, "web_note": note},
                   decide=routing.decide_after_web_search)


def generate(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Write a cited answer from the evidence (the retrieved chunks when grading is off)."""
    started = Clock.start()
    o = runtime.context.options
    documents = state.get("documents", [])
    # The answer text streams to the UI (custom stream mode) while the checks still wait.
    history = state.get("history") if o.use_history else None
    answer: Answer = runtime.context.engine.generate(
        state["question"], documents,
        on_token=lambda text: runtime.stream_writer({"kind": "token", "text": text}),
        **({"history": history} if history else {}))
    by_id = {c.id: c for c in documents}
    citations = [Citation(n=a.n, chunk_id=a.chunk_id, source=by_id[a.chunk_id].source,
                          page=by_id[a.chunk_id].page, origin=by_id[a.chunk_id].origin,
                          text=by_id[a.chunk_id].text)
                 for a in answer.citations if a.chunk_id in by_id]
    weak = o.grading and len(documents) < o.min_relevant
    detail = GenerateDetail(answer=answer.text, evidence=[ChunkView.of(c) for c in documents],
                            weak_evidence=weak,
                            citations=[CitationRef(n=c.n, chunk_id=c.chunk_id, source=c.source, page=c.page)
                                       for c in citations])
    return record(state, runtime, "generate", started,
                   f"Answer of {len(answer.text.split())} words citing {len(citations)} chunks",
                   detail, {"answer": answer.text, "citations": citations, "weak_evidence": weak,
                            "generations": state.get("generations", 0) + 1,
                            "answered_with": [c.id for c in documents]}, [answer.meta],
                   routing.decide_after_generate)


def _answer_record(state: GraphState) -> Answer:
    return Answer(text=state.get("answer", ""),
                  citations=[AnswerCitation(n=c.n, chunk_id=c.chunk_id)
                             for c in state.get("citations", [])])


def check_grounding(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Check that each claim of the answer is supported by the chunks it cites (Self-RAG IsSup)."""
    started = Clock.start()
    result = runtime.context.engine.check_grounding(_answer_record(state), state.get("documents", []))
    verdict = "grounded" if result.grounded else f"{len(result.ungrounded_claims)} ungrounded claim(s)"
    return record(state, runtime, "check_grounding", started,
                   f"{verdict} (confidence {result.confidence:.2f})",
                   GroundingDetail(grounded=result.grounded, ungrounded_claims=list(result.ungrounded_claims),
                                   confidence=result.confidence, reasoning=result.reasoning),
                   {"grounded": result.grounded, "ungrounded_claims": result.ungrounded_claims},
                   [result.meta], routing.decide_after_grounding)


def grade_answer(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Check that the answer addresses the question (Self-RAG IsUse)."""
    started = Clock.start()
    result = runtime.context.engine.grade_answer(state["question"], _answer_record(state))
    return record(state, runtime, "grade_answer", started,
                   "useful" if result.useful else "not useful",
                   AnswerCheckDetail(useful=result.useful, reasoning=result.reasoning),
                   {"useful": result.useful}, [result.meta], routing.decide_after_answer_check)
