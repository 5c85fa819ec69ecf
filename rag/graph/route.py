"""The routing nodes: route_question (where to look, how to retrieve) and reply_directly (no retrieval).

Adaptive routing (Jeong et al. 2024) and routing by query type: route_question runs after
contextualize_question, so it routes the standalone question.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langgraph.runtime import Runtime

from rag.engines.base import Answer, CallMeta, RouteQuery
from rag.engines.lexical import entities, without_set_aside
from rag.graph import routing
from rag.graph.context import RunContext
from rag.graph.events import Clock, record
from rag.graph.prefetch import Prefetch, is_llm, prefetch
from rag.graph.state import GraphState
from rag.models import Chunk, EndDetail, RouteDetail
from rag.store.bm25 import lexical_index
from rag.store.embeddings import HASHING_NAME
from rag.text import terms

_WHERE = {"kb": "knowledge base, {mode} retrieval", "web": "the web (outside the knowledge base)",
          "none": "no retrieval (direct reply)"}


def _semantic(kb) -> bool:
    """True when ``kb``'s embeddings are semantic (not the offline hashing embeddings)."""
    ef = getattr(kb, "embedding_function", None)
    try:
        return ef is not None and ef.name() != HASHING_NAME
    except Exception:  # an embedding function that cannot name itself is not trusted as semantic
        return False


def _sources(kb) -> list[str]:
    """The document names of ``kb`` (for the LLM router), cached per knowledge-base revision."""
    try:
        key = kb.fingerprint()
        cached = getattr(kb, "_route_sources", None)
        if cached and cached[0] == key:
            return cached[1]
        names = [d.source for d in kb.documents()]
        kb._route_sources = (key, names)
        return names
    except Exception:  # the router then sees no document list
        return []


COVERED_AT = 0.5
"""A question is in the knowledge base's scope, whatever names it spells differently, when one of the
passages BM25 finds for it covers at least this share of its IDF-weighted terms and holds every number
of the question (a year or a figure is a constraint no rewording replaces). Measured with the
offline rules on the 200 HotpotQA questions over their corpus: 10 went to the web without this guard
(most for a misspelt or differently spelt name), 4 with it."""


def _lacking(kb, engine, question: str) -> list[str]:
    """Names in ``question`` (capitalised spans, quoted titles) whose words no passage of ``kb`` holds.

    A name counts as held when one passage has all its words together: the BM25 matches for each
    name's words are checked for all of them. None is lacking when a passage BM25 finds for the
    whole question covers COVERED_AT of its weight and holds its numbers (a misspelt name is not a
    topic the documents lack). The names the question sets aside ("Besides Stanford and UC Berkeley, …") are
    not looked for.
    """
    question = without_set_aside(question)
    try:
        index = lexical_index(kb)
        best = kb.get_chunks([cid for cid, _ in index.search_ids(question, 5)])
    except Exception:  # a store that cannot be read gives no evidence either way
        return []
    weights = engine.weighted_terms(question) if hasattr(engine, "weighted_terms") else {}
    numbers = {t for t in terms(question) if t.isdigit()}
    for c in best if weights else []:
        held = set(terms(c.text))
        if numbers <= held and engine.coverage(weights, held)[0] >= COVERED_AT:
            return []
    out = []
    for name in entities(question):
        need = set(terms(name))
        if not need:
            continue
        ids = [cid for cid, _ in index.search_ids(name, 5)]  # the name, not its stems (stemmed again)
        chunks: list[Chunk] = kb.get_chunks(ids) if ids else []
        if not any(need <= set(terms(c.text)) for c in chunks):
            out.append(name)
    return out


def _route_with_prefetch(ctx: RunContext, state: GraphState, question: str,
                         args: dict) -> tuple[RouteQuery, Prefetch | None]:
    """The LLM router's call, and in the same round the first hop the rules predict, graded.

    An answer is speculated from it when the rules expect one hop. The plan waits for the router: a
    one-hop question needs none (decompose_query is skipped), a multi-hop one gets it in decompose_query.
    """
    o = ctx.options
    rules = getattr(ctx.engine, "fallback", None)
    guess = rules.route(question, **args) if rules is not None else None
    guess_mode = o.retrieval if guess is None or guess.retrieval_mode == "default" else guess.retrieval_mode
    overlap = (guess is None or guess.datasource == "kb") and o.grading
    history = list(state.get("history") or []) if o.use_history else []

    def one_hop(first_hop: list[Chunk]) -> bool:
        """Speculate on an answer only when the rules expect no decomposition."""
        return not o.decomposition or rules is None or rules.decompose(question, first_hop).kind == "single"

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="route") as pool:
        routed = pool.submit(ctx.engine.route, question, sources=_sources(ctx.kb), **args)
        ahead = (pool.submit(prefetch, ctx, question, guess_mode, grade=o.grading, plan=False,
                             speculate=one_hop, history=history) if overlap else None)
        return routed.result(), ahead.result() if ahead else None


def route_question(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Decide where to look (the knowledge base, the web, or nowhere) and how to retrieve.

    How: bm25, dense or hybrid. The reason is in plain words. With the LLM engine, the first hop is
    retrieved, graded and planned (and an answer speculated from it) in the same round as the routing
    call, with the mode the offline rules predict, so the next nodes find their work done when the
    router agrees; a one-hop plan skips decompose_query.
    """
    started = Clock.start()
    ctx = runtime.context
    o = ctx.options
    question = state["question"]
    web_available = ctx.web is not None
    rules = getattr(ctx.engine, "fallback", ctx.engine)
    lacking = _lacking(ctx.kb, rules, question)
    args: dict[str, Any] = dict(web_available=web_available, semantic=_semantic(ctx.kb),
                                default_mode=o.retrieval, lacking=lacking)
    pre: Prefetch | None = None
    llm = is_llm(ctx)
    if llm:
        result, pre = _route_with_prefetch(ctx, state, question, args)
    else:
        result = ctx.engine.route(question, sources=[], **args)
    mode = o.retrieval if result.retrieval_mode == "default" else result.retrieval_mode
    usable = pre if pre is not None and pre.mode == mode and result.datasource == "kb" else None
    metas: list[CallMeta] = [result.meta]
    if pre is not None:  # spent whether or not the router agreed
        metas += pre.metas
        if usable is None and pre.speculation is not None:
            metas.append(pre.speculation.discarded_meta())
        if pre.plan is not None:
            metas.append(pre.plan.meta.model_copy(update={"fallback": None}))
    # The LLM router's one-hop finding skips decomposition; offline, decompose_query decides (no call).
    one_hop = llm and o.decomposition and result.datasource == "kb" and result.hops == "one"
    missing = ctx.engine.missing_terms(question)[0]
    where = _WHERE[result.datasource].format(mode=mode) + ("; one-hop" if one_hop else "")
    detail = RouteDetail(datasource=result.datasource,
                         retrieval_mode=mode if result.datasource == "kb" else "",
                         hops=result.hops if llm and o.decomposition and result.datasource == "kb" else "",
                         reasoning=result.reasoning,
                         missing_terms=list(dict.fromkeys([*lacking, *missing]))[:12],
                         prefetched=usable is not None)
    update: dict = {"datasource": result.datasource, "web_available": web_available, "retrieval_mode": mode,
                    "route_reasoning": result.reasoning, "missing_terms": detail.missing_terms,
                    "one_hop": one_hop}
    ctx.live.update(prefetch=usable, speculation=usable.speculation if usable is not None else None)
    return record(state, runtime, "route_question", started, f"Route: {where}", detail, update, metas,
                  routing.decide_after_route)


def reply_directly(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Answer a greeting or a question about the chat itself plainly, with no retrieval."""
    started = Clock.start()
    answer: Answer = runtime.context.engine.reply(
        state["question"], on_token=lambda text: runtime.stream_writer({"kind": "token", "text": text}))
    why = state.get("route_reasoning", "")
    reason = "Answered directly, without retrieval" + (f": {why}" if why else ".")
    return record(state, runtime, "reply_directly", started, reason, EndDetail(stop_reason=reason),
                  {"final_answer": answer.text, "answer": answer.text, "citations": [],
                   "stop_reason": reason},
                  [answer.meta])
