"""contextualize_question on the offline engine, over tests/data/contextualize-cases.jsonl."""

import json
from pathlib import Path

import pytest

from rag.engines.local import LocalEngine
from rag.models import Turn
from rag.store.bm25 import LexicalStats

CASES = [json.loads(line) for line in
         (Path(__file__).parents[1] / "data" / "contextualize-cases.jsonl").read_text().splitlines() if line]


@pytest.fixture(scope="module")
def engine():
    texts = [c["standalone"] for c in CASES] + [h for c in CASES for h in c["history"]]
    return LocalEngine(LexicalStats.from_texts(texts))


def _run(engine, case):
    return engine.contextualize(case["question"], [Turn(question=h) for h in case["history"]]).question


def test_a_self_contained_question_is_never_altered(engine):
    alone = [c for c in CASES if c["kind"] == "self-contained"]
    assert len(alone) >= 10
    for case in alone:
        assert _run(engine, case) == case["question"], case


def test_the_mixed_dev_follow_ups_become_grammatical_standalone_questions(engine):
    def turns(*qs):
        return [Turn(question=q) for q in qs]
    net = "What were Berkshire Hathaway's net earnings attributable to shareholders in 2024?"
    assert engine.contextualize("And in 2023?", turns(net)).question == net.replace("2024", "2023")
    assert engine.contextualize("How many people do its subsidiaries employ?",
                                turns("Who is Berkshire's chief executive officer?")).question == (
        "How many people do Berkshire's subsidiaries employ?")
    assert engine.contextualize("How many of them were union members?", turns(
        "Where is BNSF based?", "How many employees did BNSF have at the end of 2024?")).question == (
        "How many of BNSF's employees were union members?")
    assert engine.contextualize("And of its non-insurance operations?", turns(
        "Who is Vice Chairman of Berkshire's insurance operations?")).question == (
        "Who is Vice Chairman of Berkshire's non-insurance operations?")
    thanks = engine.contextualize("Thanks! How large was Berkshire's insurance float at the end of 2024?",
                                  turns("Who are Self-RAG's authors?"))
    assert thanks.question == "How large was Berkshire's insurance float at the end of 2024?"
    assert "courtesy" in thanks.reasoning


def test_the_shared_cases_mostly_match_and_never_break_grammar(engine):
    got = [(_run(engine, c), c) for c in CASES]
    exact = sum(out == c["standalone"] for out, c in got)
    assert exact >= 0.75 * len(CASES), exact
    for out, _ in got:
        assert "'s's" not in out and "’s’s" not in out, out
        assert not out.lower().startswith(("thanks", "thank you", "great,")), out


def test_an_ellipsis_with_the_same_head_noun_replaces_its_modifiers(engine):
    before = [Turn(question="How many people did Berkshire's service businesses employ at the end of 2024?")]
    out = engine.contextualize("How about the manufacturing businesses?", before).question
    assert out == "How many people did Berkshire's manufacturing businesses employ at the end of 2024?"


def test_a_paper_named_in_the_latest_turn_is_what_a_reference_means(engine):
    before = [Turn(question="How many Wikipedia passages does DPR retrieve from?"),
              Turn(question="Which Wikipedia dump does the Lewis et al. RAG paper use?")]
    out = engine.contextualize("What are its two model variants?", before).question
    assert out == "What are the Lewis et al. RAG paper's two model variants?"
    study = [Turn(question="Which two LLMs does the Retrieval meets Long Context Large Language Models "
                           "paper study?")]
    out = engine.contextualize("Which retrievers did they compare?", study).question
    # "they" doing what authors do (compare, use, train) after a question about a paper: its authors
    assert out == ("Which retrievers did the authors of the Retrieval meets Long Context Large Language "
                   "Models paper compare?")
    # a self-contained question about another paper is left alone
    alone = "Which dataset does the Self-RAG paper use?"
    assert engine.contextualize(alone, before).question == alone
