"""The graph's nodes.

One ``verb_noun(state, runtime)`` function each, returning only the keys it changes plus its TraceEvent and,
for a node that routes, its routing decision.

Counters rise only in the node that acts (rewrite_query, web_search, generate); deciders in
:mod:`rag.graph.routing` read them. Each node calls its decider exactly once
(:func:`rag.graph.events.record`).
"""

from __future__ import annotations

import inspect
from concurrent.futures import ThreadPoolExecutor

from langgraph.runtime import Runtime

from rag.answer_types import about_authors, affiliation, search_query
from rag.engines.base import Answer, CallMeta, RelevanceGrade
from rag.graph import routing
from rag.graph.context import RunContext
from rag.graph.corrections import seek_answer_type, seek_order, seek_width, switch_retriever
from rag.graph.events import Clock, record
from rag.graph.evidence import front_first, interleave, learn_documents, with_context, with_table_headers
from rag.graph.prefetch import (
    Prefetch,
    Speculation,
    is_llm,
    prefetch,
    retrieve_cached,
    speculate_while_grading,
)
from rag.graph.scope import scoped_first
from rag.graph.state import GraphState
from rag.models import (
    Chunk,
    ChunkView,
    Citation,
    CitationRef,
    ContextualizeDetail,
    DecomposeDetail,
    GenerateDetail,
    GradedChunk,
    GradeDetail,
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
    ctx = runtime.context
    o = ctx.options
    question = state["question"]
    mode = routing.current_mode(state, o)
    pre = ctx.live.pop("prefetch", None)  # used once, here
    metas: list[CallMeta]
    if isinstance(pre, Prefetch) and pre.question == question and pre.mode == mode and pre.plan is not None:
        overlapped = True
        # its calls were counted by route_question; its fallback, if any, is reported here
        plan, first_hop, metas = pre.plan, pre.first_hop, [CallMeta(fallback=pre.plan.meta.fallback)]
    else:
        # the LLM engine grades the first hop in the same round as the plan (the grades are cached)
        pre = prefetch(ctx, question, mode, grade=o.grading and is_llm(ctx))
        overlapped = is_llm(ctx) and o.grading
        assert pre.plan is not None
        plan, first_hop, metas = pre.plan, pre.first_hop, [pre.plan.meta, *pre.metas]
    subs = list(plan.sub_questions) if plan.kind != "single" else []
    summary = (f"{plan.kind}: {len(subs)} sub-questions" if subs
               else "single-hop: no sub-questions needed")
    detail = DecomposeDetail(kind=plan.kind, sub_questions=subs, reasoning=plan.reasoning,
                             first_hop=[ChunkView.of(c) for c in first_hop], overlapped=overlapped)
    return record(state, runtime, "decompose_query", started, summary, detail,
                  {"sub_queries": subs}, metas, routing.decide_after_decompose)


def retrieve(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Fetch the top_k chunks for the current query, or top_k for each sub-question (in parallel).

    With the mode the router or a switch chose (else Options.retrieval); an identical query over the same
    knowledge-base revision comes from the retrieval cache (``cached``), a similar one from the semantic
    cache (``reused_from`` names the question whose retrieval was reused).
    """
    started = Clock.start()
    ctx = runtime.context
    o = ctx.options
    mode = routing.current_mode(state, o)
    query = state.get("query") or search_query(state["question"])
    queries = state.get("sub_queries") or [query]
    wide = seek_width(o.top_k) if state.get("seek_type") else None
    if len(queries) > 1:
        with ThreadPoolExecutor(max_workers=min(4, len(queries)), thread_name_prefix="retrieve") as pool:
            results = list(pool.map(lambda q: retrieve_cached(ctx, q, mode), queries))
    else:
        results = [retrieve_cached(ctx, queries[0], mode, k=wide)]
    per_query = [found for found, _ in results]
    scoped_to = None
    if state.get("rewrites") and len(queries) == 1:  # a correction searches the document the question names
        per_query[0], scoped_to = scoped_first(ctx.kb, state["question"], queries[0], per_query[0],
                                               wide or o.top_k)
    if about_authors(state["question"]) and (state.get("rewrites") or affiliation(state["question"])):
        # a correction for a question about a paper's authors: its front matter (title, author line,
        # affiliations) answers who wrote it and where they work, and holds few of the question's words
        per_query[0] = front_first(ctx.kb, list(state.get("documents", [])), per_query[0])
    cached = all(hit for _, hit in results)
    similar = next((h for q, (_, h) in zip(queries, results, strict=False) if h and h.other_than(q)), None)
    chunks = with_context(ctx.kb, interleave(per_query))
    learn_documents(ctx.kb, ctx.engine, chunks)
    query_of: dict[str, str] = {}
    for q, found in zip(queries, per_query, strict=False):
        for c in found:
            query_of.setdefault(c.id, q)
    ids = {c.id for c in chunks}
    earlier = state.get("retrieved_sets") or []
    repeated = bool(state.get("rewrites")) and any(set(before) == ids for before in earlier)
    update: dict = {"query": query, "retrieved": chunks, "query_of": query_of,
                    "repeated_retrieval": repeated, "seek_type": None,
                    "retrieved_sets": [*earlier, [c.id for c in chunks]],
                    "queries": list(dict.fromkeys([*(state.get("queries") or []), *queries])),
                    "fresh_first": bool(state.get("seek_type") or scoped_to)}
    if not o.grading:
        update["documents"] = chunks[:o.top_k]
    best = f"; best {chunks[0].label()} ({chunks[0].score:.2f})" if chunks else ""
    if scoped_to:
        best += f"; searched within {scoped_to}, the document the question names, first"
    if repeated:
        best += "; the same chunks as before"
    detail = RetrieveDetail(query=query, top_k=wide or o.top_k, mode=mode, cached=cached,
                            chunks=[ChunkView.of(c) for c in chunks], repeated=repeated,
                            reused_from=similar.question if similar else None,
                            reuse_similarity=similar.similarity if similar else None)
    how = f"{mode}; {similar.note()}" if similar else f"{mode}{', cached' if cached else ''}"
    if len(queries) > 1:
        detail.sub_queries = [SubQueryHits(query=q, chunks=[c.id for c in found])
                              for q, found in zip(queries, per_query, strict=False)]
        summary = (f"Retrieved {len(chunks)} chunks ({how}) for {len(queries)} sub-questions"
                   f"{best}")
    else:
        summary = f"Retrieved {len(chunks)} chunks ({how}) for '{clip(query, 80)}'{best}"
    return record(state, runtime, "retrieve", started, summary, detail, update,
                   decide=routing.decide_after_retrieve)


EVIDENCE_SHARE_OF_QUESTION = 3
"""Evidence slots per round for the user's question when it is one of the sub-questions (each
other sub-question gets one): its chunks carry the first hop. Measured on HotpotQA: 3 slots
0.645 recall_all, 2 slots 0.625."""


def grade_documents(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Grade every retrieved chunk against the question (or the sub-question that retrieved it).

    Keep the relevant ones as evidence.

    Evidence accumulates over attempts (deduplicated by chunk id) and is capped at top_k: relevant chunks in
    retrieval order (the grade filters, the retriever's finer ranking orders), taken in turn from each
    sub-question so every hop is represented; after a ``seek_answer_type`` correction, twice top_k.
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
    speculation, dropped = speculate_while_grading(state, runtime.context, chunks)
    runtime.context.live["speculation"] = speculation
    for q, group in by_query.items():
        graded.update({c.id: g for c, g in
                       zip(group, runtime.context.engine.grade(q, group, partial=partial), strict=False)})
    if partial:
        _regrade_other_hops(runtime.context.engine, state.get("sub_queries") or [], by_query, graded, asked)
    grades = [graded[c.id] for c in chunks]
    attempt = 1 + state.get("grade_rounds", 0)
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
    fresh = interleave(relevant_per_query, shares)
    # after a seek_answer_type correction the new chunks are the next candidates, those graded "high" first:
    # the evidence grows to twice top_k ("more chunks"), the kept chunks first
    cap = 2 * o.top_k if state.get("fresh_first") else o.top_k
    fresh = seek_order(runtime.context.engine, question, fresh, graded) if state.get("fresh_first") else fresh
    documents = (list(kept.values()) + fresh)[:cap]
    # partly relevant chunks (CRAG's "ambiguous": not relevant, score medium), kept for the last resort
    partly = {c.id: c for c in state.get("ambiguous", [])}
    partly.update((c.id, c) for c in chunks
                  if not graded[c.id].relevant and graded[c.id].score == "medium" and c.id not in partly)
    ambiguous = list(partly.values())[:o.top_k]
    n_rel = sum(g.relevant for g in grades)
    detail = GradeDetail(
        question=question, query=state.get("query", question), relevant=n_rel, evidence=len(documents),
        verdicts=[GradedChunk(**ChunkView.of(c).model_dump(), query=fetched_for[c.id],
                              graded_against=asked[c.id],
                              relevant=g.relevant, grade=g.score, reasoning=g.reasoning, cached=g.meta.cached,
                              fallback=g.meta.fallback) for c, g in zip(chunks, grades, strict=False)])
    return record(state, runtime, "grade_documents", started,
                   f"{n_rel} of {len(chunks)} chunks relevant; {len(documents)} in evidence",
                   detail, {"verdicts": verdicts, "documents": documents,
                            "grade_rounds": attempt, "ambiguous": ambiguous,
                            "fresh_first": False},
                   [*(g.meta for g in grades), *dropped], routing.decide_after_grading)


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

    Or from the ungrounded claims after a failed grounding check. With routing on, the first correction
    after weak grading retries the same query with another retrieval mode instead (strategy
    ``switch_retriever``, :func:`rag.graph.routing.switch_to`); it counts against the same rewrite budget.
    """
    started = Clock.start()
    o = runtime.context.options
    rewrites = state.get("rewrites", 0) + 1
    old_mode = routing.current_mode(state, o)
    if kind := routing.seeks_type(state, o):
        return seek_answer_type(state, runtime, started, rewrites, kind)
    if new_mode := routing.switch_to(state, o):
        return switch_retriever(state, runtime, started, rewrites, old_mode, new_mode)
    last_attempt = max((v.attempt for v in state.get("verdicts", [])), default=0)
    verdicts = [v for v in state.get("verdicts", []) if v.attempt == last_attempt]
    previous = list(state.get("queries") or [])
    claims = state.get("ungrounded_claims", []) if state.get("grounded") is False else []
    result = runtime.context.engine.rewrite(
        state["question"], state.get("query") or state["question"], verdicts=verdicts,
        chunks=state.get("retrieved", []), ungrounded_claims=claims, previous_queries=previous)
    detail = RewriteDetail(from_query=state.get("query"), query=result.query, strategy=result.strategy,
                           reasoning=result.reasoning, rewrite=rewrites, budget=o.max_rewrites,
                           ungrounded_claims=list(claims), mode=old_mode, from_mode=old_mode)
    # Clearing the last verdicts makes the next answer re-earn its checks.
    return record(state, runtime, "rewrite_query", started,
                   f"Rewrite {rewrites} of {o.max_rewrites} ({result.strategy}): "
                   f"'{clip(result.query, 80)}'",
                   detail, {"query": result.query, "rewrites": rewrites, "grounded": None,
                            "useful": None, "ungrounded_claims": [], "sub_queries": [],
                            "last_strategy": result.strategy},
                   [result.meta], routing.decide_after_rewrite)


def _search_web(web, query: str, left: float | None) -> list[Chunk]:
    """``web.search(query)``, with its timeout cut to the time left when the client takes one."""
    if left is not None and "timeout_s" in inspect.signature(web.search).parameters:
        return web.search(query, timeout_s=max(0.5, left))
    return web.search(query)


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
    left = runtime.context.remaining_s()
    if web is None:
        note = "skipped: no web search configured"
        results: list[Chunk] = []
    elif left is not None and left < 0.5:
        note, results = "skipped: time budget spent", []
    else:
        try:
            results = _search_web(web, query, left)
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
    """Write a cited answer from the evidence (the retrieved chunks when grading is off).

    A speculative answer started while grade_documents ran is used when it was generated from exactly
    this evidence (``speculative``); its tokens stream on as they come. Once the time budget is spent, a
    fast answer is made from the retrieved chunks when grading kept none. After a correction for a figure,
    a chunk opening inside a table is read with the chunks before it (its header).
    """
    started = Clock.start()
    o = runtime.context.options
    documents = state.get("documents", [])
    if not documents and state.get("out_of_time"):
        documents = state.get("retrieved", [])[:o.top_k]  # a fast answer from ungraded chunks
    from_ambiguous = not documents and bool(state.get("ambiguous"))
    if from_ambiguous:  # CRAG's ambiguous action: no chunk is relevant, some are partly
        documents = state.get("ambiguous", [])
    widen = routing.widens_tables(state, documents)
    if widen:  # after a correction for a figure: rows read with their table's header
        documents = with_table_headers(runtime.context.kb, documents)

    def on_token(text: str) -> None:
        runtime.stream_writer({"kind": "token", "text": text})

    # The answer text streams to the UI (custom stream mode) while the checks still wait.
    spec = runtime.context.live.pop("speculation", None)
    answer: Answer | None = None
    spent: list[CallMeta] = []
    if isinstance(spec, Speculation):
        if spec.accepts(state["question"], documents):
            answer = spec.replay(on_token)
        else:
            spent.append(spec.discarded_meta())
    speculative = answer is not None
    if answer is None:
        history = state.get("history") if o.use_history else None
        answer = runtime.context.engine.generate(state["question"], documents, on_token=on_token,
                                                 critique=o.answer_check,
                                                 **({"history": history} if history else {}))
    by_id = {c.id: c for c in documents}
    citations = [Citation(n=a.n, chunk_id=a.chunk_id, source=by_id[a.chunk_id].source,
                          page=by_id[a.chunk_id].page, origin=by_id[a.chunk_id].origin,
                          text=by_id[a.chunk_id].text, ocr=by_id[a.chunk_id].ocr)
                 for a in answer.citations if a.chunk_id in by_id]
    weak = o.grading and len(documents) < o.min_relevant
    detail = GenerateDetail(answer=answer.text, evidence=[ChunkView.of(c) for c in documents],
                            weak_evidence=weak, speculative=speculative,
                            citations=[CitationRef(n=c.n, chunk_id=c.chunk_id, source=c.source, page=c.page,
                                                   ocr=c.ocr)
                                       for c in citations])
    return record(state, runtime, "generate", started,
                   f"Answer of {len(answer.text.split())} words citing {len(citations)} "
                   f"chunk{'s' if len(citations) != 1 else ''}" + ("; tables read with their header from the "
                                                                   "chunk before" if widen else ""),
                   detail, {"answer": answer.text, "citations": citations, "weak_evidence": weak,
                            "ambiguous_evidence": from_ambiguous,
                            "generations": state.get("generations", 0) + 1,
                            "answered_with": [c.id for c in documents], "with_table_headers": widen},
                   [answer.meta, *spent], routing.decide_after_generate)
