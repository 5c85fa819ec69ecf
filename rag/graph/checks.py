"""The answer's checks: check_grounding (Self-RAG IsSup) and grade_answer (Self-RAG IsUse), in one round.

When both checks are on, check_grounding starts grade_answer's call at the same time as its own, and
grade_answer records that verdict: the two cost one round of waiting instead of two. Neither verdict is
weakened: each is the same call, on the same answer, as when they ran one after the other.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from langgraph.runtime import Runtime

from rag.engines.base import Answer, AnswerCitation, AnswerGrade
from rag.graph import routing
from rag.graph.context import RunContext
from rag.graph.events import Clock, record
from rag.graph.scope import document_named
from rag.graph.state import GraphState
from rag.models import GRADE_ANSWER, AnswerCheckDetail, GroundingDetail
from rag.store.records import id_prefix


def _answer_record(state: GraphState) -> Answer:
    return Answer(text=state.get("answer", ""),
                  citations=[AnswerCitation(n=c.n, chunk_id=c.chunk_id)
                             for c in state.get("citations", [])])


@dataclass
class ConcurrentCheck:
    """grade_answer's verdict made in the same round as check_grounding, for one generation."""

    generation: int
    result: AnswerGrade
    started: Clock
    duration_ms: float


def _timed(fn: Callable, *args) -> tuple[Any, Clock, float]:
    clock = Clock.start()
    out = fn(*args)
    return out, clock, clock.elapsed_ms()


def answered_from(state: GraphState) -> list:
    """The chunks the current answer was generated from (``answered_with``), in that order.

    The relevant ``documents`` as a rule, but the partly relevant chunks of CRAG's ambiguous action, or the
    ungraded chunks of a fast answer when the time budget ran out: the grounding check must read the
    chunks the answer cites, or every claim of those answers "cites no known source".
    """
    pool = {c.id: c for c in [*state.get("retrieved", []), *state.get("ambiguous", []),
                              *state.get("documents", [])]}
    for cited in state.get("citations") or []:  # as generate read it (a table's rows with their header)
        if cited.chunk_id in pool and cited.text and cited.text != pool[cited.chunk_id].text:
            pool[cited.chunk_id] = pool[cited.chunk_id].model_copy(update={"text": cited.text})
    ids = [*(state.get("answered_with") or []), *(c.chunk_id for c in state.get("citations") or [])]
    return [pool[i] for i in dict.fromkeys(ids) if i in pool] or list(state.get("documents", []))


def check_grounding(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Check that each claim of the answer is supported by the chunks it cites (Self-RAG IsSup).

    When the answer check is on, it runs in the same round (grade_answer then records it); if the run
    does not go on to grade_answer, that verdict is dropped but its calls are counted here.
    """
    started = Clock.start()
    ctx = runtime.context
    answer = _answer_record(state)
    documents = answered_from(state)
    concurrent = None
    if ctx.options.answer_check:
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="checks") as pool:
            grounding = pool.submit(ctx.engine.check_grounding, answer, documents)
            useful = pool.submit(_timed, ctx.engine.grade_answer, state["question"], answer)
            result = grounding.result()
            grade, clock, ms = useful.result()
        concurrent = ConcurrentCheck(state.get("generations", 0), grade, clock, ms)
    else:
        result = ctx.engine.check_grounding(answer, documents)
    verdict = "grounded" if result.grounded else f"{len(result.ungrounded_claims)} ungrounded claim(s)"
    out = record(state, runtime, "check_grounding", started,
                 f"{verdict} (confidence {result.confidence:.2f})"
                 + ("; answer check ran alongside" if concurrent else ""),
                 GroundingDetail(grounded=result.grounded, ungrounded_claims=list(result.ungrounded_claims),
                                 confidence=result.confidence, reasoning=result.reasoning),
                 {"grounded": result.grounded, "ungrounded_claims": result.ungrounded_claims,
                  "grounding_checks": [*(state.get("grounding_checks") or []), len(result.ungrounded_claims)],
                  "answer_grade": concurrent},
                 [result.meta], routing.decide_after_grounding)
    if concurrent is not None and out["route"].to != GRADE_ANSWER:
        # the answer check's verdict will not be shown: its calls still count, here
        extra = concurrent.result.meta
        event = out["events"][0]
        out["events"] = [event.model_copy(update={
            "llm_calls": event.llm_calls + extra.llm_calls,
            "prompt_tokens": event.prompt_tokens + extra.prompt_tokens,
            "completion_tokens": event.completion_tokens + extra.completion_tokens})]
    return out


def _quotes_another_document(state: GraphState, ctx: RunContext) -> str | None:
    """The source of the answer's first citation when the question names one other document, else None.

    "In the Self-RAG paper, which GPUs …" answered from the RAG paper's sentence about GPUs is no answer about
    Self-RAG, however well it reads. The named document is :func:`rag.graph.scope.document_named` (a paper
    or filing the question names as one); None too when the question names none, the first citation is from
    the web, or the store cannot say.
    """
    cites = state.get("citations") or []
    if not cites or cites[0].origin != "kb":
        return None
    try:
        named = document_named(ctx.kb, state["question"])
    except Exception:  # noqa: BLE001 - a store that cannot list its documents names none
        return None
    # a document the name also fits is no other
    other = named is not None and not any(cites[0].chunk_id.startswith(id_prefix(sha)) for sha in named[1])
    return cites[0].source if other else None


def grade_answer(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Check that the answer addresses the question (Self-RAG IsUse).

    The verdict made in the same round as check_grounding is recorded when there is one for this answer
    (``concurrent``, with its own start and duration).
    """
    started = Clock.start()
    pre = state.get("answer_grade")
    duration = None
    concurrent = isinstance(pre, ConcurrentCheck) and pre.generation == state.get("generations", 0)
    if isinstance(pre, ConcurrentCheck) and concurrent:
        result, started, duration = pre.result, pre.started, pre.duration_ms
    else:
        result = runtime.context.engine.grade_answer(state["question"], _answer_record(state))
    if result.useful and (other := _quotes_another_document(state, runtime.context)) is not None:
        result = result.model_copy(update={
            "useful": False, "answer_span": None, "answer_kind": None, "missing_type": None,
            "reasoning": f"the answer quotes {other}, not the document the question names"})
    return record(state, runtime, "grade_answer", started,
                  ("useful" if result.useful else "not useful")
                  + (" (checked alongside check_grounding)" if concurrent else ""),
                  AnswerCheckDetail(useful=result.useful, reasoning=result.reasoning, concurrent=concurrent),
                  {"useful": result.useful, "answer_grade": None, "answer_span": result.answer_span,
                   "answer_kind": result.answer_kind,
                   "answer_checks": [*(state.get("answer_checks") or []), result.useful],
                   "missing_type": None if result.useful else result.missing_type}, [result.meta],
                  routing.decide_after_answer_check, duration_ms=duration)
