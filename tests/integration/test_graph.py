"""The whole graph on real papers in a real Chroma: presets, paths, trace, streaming, guards."""

from __future__ import annotations

import pytest

from rag.config import Options, preset_options
from rag.engines.base import AnswerGrade, GroundingCheck, RelevanceGrade
from rag.engines.local import LocalEngine
from rag.graph.build import build_graph
from rag.models import NODE_ORDER
from rag.run import make_context, run_question
from rag.store.bm25 import lexical_stats

QUESTION = "What is the retrieval component of RAG and how is it trained?"


@pytest.fixture(scope="module")
def ctx(papers_kb):
    return make_context(papers_kb.settings, papers_kb)


def test_graph_has_every_designed_node():
    nodes = set(build_graph().get_graph().nodes) - {"__start__", "__end__"}
    assert nodes == set(NODE_ORDER) == {
        "contextualize_question", "route_question", "reply_directly",  # issue 13: the routing nodes
        "decompose_query", "retrieve", "grade_documents", "rewrite_query",
        "web_search", "generate",
        "check_grounding", "grade_answer", "finalize", "finalize_with_caveat", "fallback"}


def test_naive_is_single_pass(ctx):
    run = run_question(QUESTION, ctx, preset_options("naive"))
    assert run.path == ["retrieve", "generate", "finalize"]
    assert run.citations and all(c.source.endswith(".pdf") and c.page >= 1 for c in run.citations)
    assert run.llm_calls == 0 and run.engine == "local"


def test_full_answers_with_cited_pages_from_lewis(ctx):
    run = run_question(QUESTION, ctx, preset_options("full"))
    assert run.path[:5] == ["route_question", "decompose_query", "retrieve", "grade_documents", "generate"]
    assert run.path[-1] == "finalize", run.stop_reason
    assert {"check_grounding", "grade_answer"} <= set(run.path)
    assert any(c.source == "2005.11401v4_lewis_rag.pdf" for c in run.citations)
    for c in run.citations:
        assert f"[{c.n}]" in run.answer
        assert c.text and c.chunk_id.startswith(c.chunk_id.split("-")[0])
    assert run.stop_reason.startswith("Answered:")
    # every event is in the DESIGN.md shape
    for i, e in enumerate(run.events, 1):
        assert e.step == i and e.duration_ms >= 0 and e.started_at > 0 and e.summary
        assert (e.route is None) == (e.node in ("finalize", "finalize_with_caveat", "fallback",
                                                "reply_directly"))
    grade = next(e for e in run.events if e.node == "grade_documents")
    retrieved = next(e for e in run.events if e.node == "retrieve")
    assert len(grade.detail.verdicts) == len(retrieved.detail.chunks) >= 6
    assert all("Matched" in v.reasoning or "Matched no" in v.reasoning
               for v in grade.detail.verdicts)


def test_events_stream_live_in_order(ctx):
    seen = []
    run = run_question(QUESTION, ctx, preset_options("crag"), on_event=seen.append)
    assert [e.node for e in seen] == run.path
    assert [e.step for e in seen] == list(range(1, len(seen) + 1))


def test_off_topic_question_rewrites_then_abstains_with_plain_reason(ctx):
    # Updated for issue 10: no chunk is relevant, so no rewrite takes feedback terms from
    # them (no 'expand_terms'), and rewriting may stop early when a rewrite brings back the
    # same chunks; the run still ends in fallback after web search, never in finalize.
    # Issue 13: routing off, to test the correction loop itself (with routing on this question goes
    # straight to an abstention: test_routing_sends_an_off_topic_question_to_an_abstention).
    run = run_question("What is the boiling point of tungsten at sea level?", ctx,
                       preset_options("full", routing=False))
    rewrites = run.path.count("rewrite_query")
    assert 1 <= rewrites <= 2
    assert "web_search" in run.path
    web = next(e for e in run.events if e.node == "web_search")
    assert web.detail.status == "skipped: no web search configured"
    assert run.path[-1] == "fallback"
    assert run.stop_reason.startswith("No answer:")
    assert "no web search configured" in run.stop_reason
    assert run.citations == []
    attempts = [e.attempt for e in run.events if e.node == "retrieve"]
    assert attempts == list(range(1, rewrites + 2))
    strategies = [e.detail.strategy for e in run.events if e.node == "rewrite_query"]
    assert "expand_terms" not in strategies
    queries = [e.detail.query for e in run.events if e.node == "retrieve"]
    assert len(set(queries)) == len(queries), "a rewrite repeated an earlier query"
    if rewrites < 2:
        assert "same chunks again" in run.stop_reason


def test_routing_sends_an_off_topic_question_to_an_abstention(ctx):
    run = run_question("What is the boiling point of tungsten at sea level?", ctx, preset_options("full"))
    assert run.path == ["route_question", "web_search", "fallback"]
    assert "outside the knowledge base" in run.stop_reason and "tungsten" in run.stop_reason
    assert "no web search configured" in run.stop_reason and run.citations == []


def test_weak_evidence_finalizes_with_caveat(ctx):
    # Updated for issue 10: the old question found its one "relevant" chunk only because the
    # grader passed chunks without the question's constraints ('Swahili'); now it abstains.
    # Weak evidence is made here by wanting more relevant chunks than the papers hold.
    # (PDFium's text found six relevant chunks for it before round 9's rules and ten or eleven since; since
    # round 14 a failed lead sends Full looking for more candidates, twice top_k, which found sixteen of the
    # fifteen wanted; so it wants thirty.)
    run = run_question("How many Wikipedia documents does the RAG retriever index hold?",
                       ctx, preset_options("full", decomposition=False, min_relevant=30, top_k=30))
    assert run.path[-1] == "finalize_with_caveat", run.stop_reason
    assert run.stop_reason.startswith("Answered with caveat:")
    assert "(30 wanted)" in run.stop_reason
    assert run.answer.startswith("Caveat:")
    off = run_question("How many parameters does the Jeopardy retriever index use in Swahili?",
                       ctx, preset_options("full", decomposition=False))
    assert off.path[-1] == "fallback"


def test_min_relevant_above_top_k_is_refused():
    with pytest.raises(ValueError, match="min_relevant"):
        Options(top_k=3, min_relevant=4)


def test_empty_question_is_refused(ctx):
    with pytest.raises(ValueError):
        run_question("   ", ctx)


# -- loop guard: engines that never approve must still terminate --------------------------
class RejectsChunks(LocalEngine):
    """Finds no chunk relevant: the worst case for the retrieval loop."""

    def grade(self, question, chunks, **kw):
        return [RelevanceGrade(relevant=False, score="low", reasoning="skeptic") for _ in chunks]


class RejectsAnswers(LocalEngine):
    """Approves evidence but never the answer: the worst case for the answer loops."""

    def check_grounding(self, answer, chunks):
        return GroundingCheck(grounded=False, ungrounded_claims=["everything"], confidence=0.0,
                              reasoning="skeptic")

    def grade_answer(self, question, answer):
        return AnswerGrade(useful=False, reasoning="skeptic")


@pytest.mark.parametrize("budget", [0, 1, 3])
def test_retrieval_loop_is_bounded_by_budgets(papers_kb, budget):
    # Updated for issue 10: a rewrite that retrieves the same chunks again stops the
    # rewriting early (so at most ``budget`` rewrites, and fewer only with that reason).
    ctx = make_context(papers_kb.settings, papers_kb, engine=RejectsChunks(lexical_stats(papers_kb)))
    run = run_question(QUESTION, ctx, Options(max_rewrites=budget))
    assert run.error is None
    rewrites = run.path.count("rewrite_query")
    assert rewrites <= budget
    if rewrites < budget:
        assert "same chunks again" in run.stop_reason
    assert run.path.count("web_search") == 1
    assert run.path[-1] == "fallback"


@pytest.mark.parametrize("grounding", [True, False])
@pytest.mark.parametrize("budget", [0, 2, 4])
def test_answer_loops_are_bounded_by_budgets(papers_kb, budget, grounding):
    # Updated for issue 10: an answer is never generated again from the evidence of the
    # previous one (it would be identical), so rewrites that bring no new evidence end in
    # finalize_with_caveat at once, saying so.
    ctx = make_context(papers_kb.settings, papers_kb, engine=RejectsAnswers(lexical_stats(papers_kb)))
    options = Options(max_rewrites=budget, grounding_check=grounding)
    run = run_question(QUESTION, ctx, options)
    assert run.error is None
    assert run.path.count("rewrite_query") <= budget
    assert run.path.count("web_search") <= (0 if grounding else 1)
    assert run.path[-1] == "finalize_with_caveat"
    assert len(run.path) < options.recursion_limit()
    evidence = [tuple(c.id for c in e.detail.evidence) for e in run.events if e.node == "generate"]
    assert len(evidence) == len(set(evidence)), "an answer was generated twice from the same evidence"
    # (new evidence may give the same answer again: a correction searched the document the question names and
    # its best chunks hold the same lead; what never happens is a second answer from the same evidence)
    if budget and run.path.count("rewrite_query") and len(evidence) == 1:
        assert "did not change" in run.stop_reason


class Broken(LocalEngine):
    def check_grounding(self, answer, chunks):
        raise RuntimeError("grader exploded")


def test_an_error_in_a_node_ends_the_run_with_a_reason(papers_kb):
    ctx = make_context(papers_kb.settings, papers_kb, engine=Broken(lexical_stats(papers_kb)))
    run = run_question(QUESTION, ctx, preset_options("full"))
    assert run.error and "grader exploded" in run.error and "check_grounding" in run.error
    assert run.stop_reason.startswith("Stopped by an error")
    assert run.path[-1] == "generate"


def test_empty_knowledge_base_falls_back(kb, settings):
    run = run_question(QUESTION, make_context(settings, kb), preset_options("naive"))
    assert run.path == ["retrieve", "fallback"]
    assert "no chunks" in run.stop_reason
