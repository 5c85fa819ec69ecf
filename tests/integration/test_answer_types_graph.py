"""Issue 19 in the graph: Full corrects an answer that lacks the type asked for; Naive cannot."""

from pathlib import Path

import pytest

from rag.config import preset_options
from rag.engines.base import Answer, AnswerCitation
from rag.engines.cited import EXTRACTIVE_LABEL
from rag.engines.local import LocalEngine
from rag.graph import routing
from rag.graph.corrections import seek_width
from rag.models import REWRITE_QUERY, RewriteDetail
from rag.run import make_context, run_question
from rag.store.bm25 import lexical_stats

DOCS = Path(__file__).parents[2] / "docs"


@pytest.fixture(scope="module")
def ctx(papers_kb):
    return make_context(papers_kb.settings, papers_kb)


def test_full_finds_the_authors_in_the_front_matter_naive_does_not(ctx):
    q = "Who are Self-RAG's authors?"
    naive = run_question(q, ctx, preset_options("naive"))
    full = run_question(q, ctx, preset_options("full"))
    assert "Akari Asai" not in naive.answer  # the top chunks talk about Self-RAG, not who wrote it
    check = ctx.engine.grade_answer(q, _answer_of(naive))
    assert not check.useful and check.missing_type == "person" and "asks who" in check.reasoning
    assert full.path[-1] == "finalize", full.stop_reason
    seek = [e for e in full.events if isinstance(e.detail, RewriteDetail)
            and e.detail.strategy == "seek_answer_type"]
    assert len(seek) == 1 and "person's name" in seek[0].summary
    after = full.events[full.events.index(seek[0]) + 1]  # the retrieve the correction asked for: wider
    assert after.node == "retrieve" and after.detail.top_k == seek_width(6) == 48
    lead = full.answer.splitlines()[1]
    assert "Akari Asai" in lead and full.citations[0].page == 1  # the author line, cited on page 1
    final_check = [e for e in full.events if e.node == "grade_answer"][-1]
    assert final_check.detail.useful and "Akari Asai" in final_check.detail.reasoning


def _answer_of(run):
    cited = [AnswerCitation(n=c.n, chunk_id=c.chunk_id) for c in run.citations]
    return Answer(text=run.answer, citations=cited)


def test_a_type_is_looked_for_once_and_only_when_rewriting_is_on():
    state = {"useful": False, "missing_type": "person", "rewrites": 2}
    full = preset_options("full")
    assert routing.decide_after_answer_check(state, full).to == REWRITE_QUERY
    assert routing.seeks_type({**state, "sought_types": ["person"]}, full) is None
    again = routing.decide_after_answer_check({**state, "sought_types": ["person"]}, full)
    assert "lacks" not in again.why  # web search, a plain rewrite or a caveat: not the same search again
    assert routing.seeks_type(state, preset_options("self-rag")) is None  # rewriting off
    assert routing.seeks_type({**state, "useful": True}, full) is None


def test_a_caveat_is_one_short_sentence_and_never_nests(ctx):
    run = run_question("What learning rate was used to fine-tune RAG on Jeopardy in 2020?", ctx,
                       preset_options("full"))
    assert run.path[-1] in ("finalize_with_caveat", "fallback"), run.path
    if run.path[-1] == "finalize_with_caveat":
        first = run.answer.splitlines()[0]
        assert first.startswith("Caveat: ") and first.count(".") == 1 and first.endswith(".")
        assert run.answer.lower().count("caveat") == 1


def test_the_answer_check_names_the_span_it_found(papers_kb):
    engine = LocalEngine(lexical_stats(papers_kb))
    good = Answer(text=f"{EXTRACTIVE_LABEL}\nREALM: Retrieval-Augmented Language Model Pre-Training [1]",
                  citations=[AnswerCitation(n=1, chunk_id="x")])
    check = engine.grade_answer("What does REALM stand for?", good)
    assert check.useful and check.answer_span == "Retrieval-Augmented Language Model"
    assert check.answer_kind == "acronym"
