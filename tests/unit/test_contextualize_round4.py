"""contextualize on the offline engine: own subjects, preposition-led questions, slot ellipses, answers."""

import json
from pathlib import Path

import pytest

from rag.engines.local import LocalEngine
from rag.engines.phrases import _is_fragment
from rag.models import Turn
from rag.store.bm25 import LexicalStats

CASES = [json.loads(line) for line in
         (Path(__file__).parents[1] / "data" / "contextualize-cases.jsonl").read_text().splitlines() if line]
HAMBURG = ("Extractive answer from the offline engine (quoted passages, not generated):\n"
           "Marc D. Hamburg 75 Senior Vice President – Chief Financial Officer [1]")


@pytest.fixture(scope="module")
def engine():
    texts = [c["standalone"] for c in CASES] + [h for c in CASES for h in c["history"]]
    return LocalEngine(LexicalStats.from_texts(texts))


def _turns(*items):
    return [t if isinstance(t, Turn) else Turn(question=t) for t in items]


def test_a_question_with_its_own_subject_stays_unchanged(engine):
    q = "How many intermodal hubs does BNSF have across its system?"
    out = engine.contextualize(q, _turns(
        "What were Berkshire Hathaway's net earnings attributable to shareholders in 2024?"))
    assert out.question == q
    assert out.reasoning.startswith("Stands alone")


def test_a_question_led_by_its_preposition_is_no_ellipsis(engine):
    previous = "How many employees did BNSF have at the end of 2024?"
    out = engine.contextualize("In which state is it based?", _turns(previous))
    assert out.question == "In which state is BNSF based?"
    assert previous.rstrip("?") not in out.question
    assert "ellipsis" not in out.reasoning
    assert not _is_fragment("In which state is it based")
    assert _is_fragment("In 2023")


def test_a_bare_name_replaces_the_previous_questions_subject(engine):
    out = engine.contextualize("And Jazwares?", _turns(
        "About Berkshire: where is Detlev Louis Motorrad headquartered?"))
    assert out.question == "About Berkshire: where is Jazwares headquartered?"
    assert "Detlev" not in out.question


def test_of_a_name_replaces_the_company_not_the_owner(engine):
    out = engine.contextualize("And of Occidental?", _turns(
        "Who is Berkshire's chief executive officer?",
        "What share of the outstanding Kraft Heinz common stock did Berkshire own at year-end 2024?"))
    assert out.question == ("What share of the outstanding Occidental common stock did Berkshire own at "
                            "year-end 2024?")
    assert "replacing “Kraft Heinz” by “Occidental”" in out.reasoning


def test_a_possessive_fragment_keeps_the_verb_phrase(engine):
    out = engine.contextualize("And Kern River's system?", _turns(
        "About how many miles of natural gas pipelines does Northern Natural's system consist of?"))
    assert out.question == ("About how many miles of natural gas pipelines does Kern River's system "
                            "consist of?")
    assert out.question.endswith("consist of?")


def test_they_after_a_question_about_a_paper_are_its_authors(engine):
    out = engine.contextualize("Which retriever do they use by default?", _turns(
        "How many parameters does the BART-large generator in the Lewis et al. RAG paper have?"))
    assert out.question == "Which retriever do the authors of the Lewis et al. RAG paper use by default?"
    assert "parameters use" not in out.question


def test_he_after_an_answered_who_question_is_the_person_answered(engine):
    out = engine.contextualize("Since what year has he held that position?", _turns(
        Turn(question="Who is Berkshire's chief financial officer?", answer=HAMBURG)))
    assert out.question == "Since what year has Marc D. Hamburg held that position?"
    assert "Senior" not in out.question and "75" not in out.question


def test_its_after_a_question_about_a_survey_is_the_survey(engine):
    out = engine.contextualize("Two of its authors are also affiliated with a company. Which one?", _turns(
        "Who is the first author of the hallucination mitigation survey?"))
    assert "the hallucination mitigation survey" in out.question
    assert out.question == ("Two of the hallucination mitigation survey's authors are also affiliated with "
                            "a company. Which one?")
