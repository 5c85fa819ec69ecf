"""Query decomposition on the offline engine: comparison and bridge questions on real data."""

from __future__ import annotations

import json

import pytest

from rag.config import preset_options
from rag.engines.local import LocalEngine, entities
from rag.models import Chunk
from rag.run import make_context, run_question
from rag.store.bm25 import LexicalStats
from tests.conftest import DATA

HOTPOT = DATA / "hotpotqa" / "corpus.jsonl"


@pytest.fixture(scope="module")
def hotpot():
    docs = [json.loads(line) for line in HOTPOT.open()]
    return {d["title"]: d for d in docs}, LexicalStats.from_texts(d["text"] for d in docs)


def chunk(doc: dict) -> Chunk:
    return Chunk(id=doc["_id"], text=doc["text"], source=doc["title"], title=doc["title"])


def test_entities_finds_names_and_quoted_titles():
    found = entities('The director of the romantic comedy "Big Stone Gap" met Annie Morton '
                     "and the University of Kansas in New York City.")
    assert found[:4] == ["Big Stone Gap", "Annie Morton", "University of Kansas", "New York City"]
    assert "The" not in found
    assert entities("Were Scott Derrickson and Ed Wood of the same nationality?") == [
        "Scott Derrickson", "Ed Wood"]


def test_comparison_gets_one_sub_question_per_entity(hotpot):
    _, stats = hotpot
    plan = LocalEngine(stats).decompose("Who is older, Annie Morton or Terry Richardson?", [])
    assert plan.kind == "comparison"
    assert plan.sub_questions == ["Annie Morton older", "Terry Richardson older"]
    assert "'Annie Morton', 'Terry Richardson'" in plan.reasoning


def test_bridge_follows_an_entity_from_the_first_hop(hotpot):
    by_title, stats = hotpot
    question = ("What government position was held by the woman who portrayed Corliss Archer "
                "in the film Kiss and Tell?")
    first_hop = [chunk(by_title["Kiss and Tell (1945 film)"]), chunk(by_title["Meet Corliss Archer"])]
    plan = LocalEngine(stats).decompose(question, first_hop)
    assert plan.kind == "bridge" and plan.sub_questions[0] == question
    assert any(q.startswith("Shirley Temple") for q in plan.sub_questions[1:]), plan.sub_questions
    assert 2 <= len(plan.sub_questions) <= 4
    assert "Shirley Temple" in plan.reasoning


def test_graph_retrieves_and_grades_each_sub_question(papers_kb):
    ctx = make_context(papers_kb.settings, papers_kb)
    run = run_question("Do RAG and Self-RAG both train their retriever?", ctx,
                       preset_options("full"))
    assert run.path[:4] == ["route_question", "decompose_query", "retrieve", "grade_documents"]  # issue 13
    plan = run.events[1]
    assert plan.node == "decompose_query" and plan.detail.kind == "comparison"
    assert plan.detail.sub_questions == ["RAG train retriever", "Self-RAG train retriever"]
    retrieve = run.events[2]
    assert [s.query for s in retrieve.detail.sub_queries] == plan.detail.sub_questions
    grading = run.events[3]
    assert {v.graded_against for v in grading.detail.verdicts} == set(plan.detail.sub_questions)
    assert grading.detail.relevant >= 2
    assert len(next(e for e in run.events if e.node == "generate").detail.evidence) <= 6


def test_decomposition_off_skips_the_node(papers_kb):
    ctx = make_context(papers_kb.settings, papers_kb)
    run = run_question("Do RAG and Self-RAG both train their retriever?", ctx,
                       preset_options("full", decomposition=False))
    assert run.path[:2] == ["route_question", "retrieve"]  # issue 13: routing comes first
