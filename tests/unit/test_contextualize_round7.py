"""contextualize on the offline engine, round 7.

Whole clauses after "And", sibling names, head nouns with a year, "he" for the person the last question
named, a paper that only says where to look, a named subject as the slot of a noun phrase.
"""

import pytest

from rag.engines.local import LocalEngine
from rag.store.bm25 import LexicalStats
from tests.unit.conversation import ask

TEXTS = [
    "The 2020 wildfires in PacifiCorp's service territory burned about 500,000 acres.",
    "The 2022 McKinney Fire burned about 60,000 acres.",
    "Ajit Jain, 73, Vice Chairman - Insurance Operations since 2018. Warren E. Buffett, Chairman since 1970.",
    "RAG-Sequence gets 44.5 exact match on Natural Questions; RAG-Token gets 44.1.",
    "MPT-30B-Instruct has a maximum context length of 8192 tokens and was pre-trained on 1 trillion tokens.",
    "We find that language models are lost in the middle of long contexts.",
    "Greg Abel would replace Warren Buffett. Greg Abel is 62.",
] + [f"Berkshire Hathaway filler text number {i} about retrieval and language models" for i in range(30)]
# "Berkshire Hathaway" is in most chunks, as in the 10-K: a word of the corpus, not a person's name


@pytest.fixture(scope="module")
def engine():
    return LocalEngine(LexicalStats.from_texts(TEXTS))




def test_an_ellipsis_swaps_the_noun_phrase_with_the_same_head_and_another_year(engine):
    got = ask(engine, "How many acres did the 2020 wildfires in PacifiCorp's service territory burn?",
               "What about the 2022 Wildfire?")
    assert got[1] == "How many acres did the 2022 Wildfire in PacifiCorp's service territory burn?"


def test_an_ellipsis_swaps_a_name_of_the_same_family(engine):
    got = ask(engine, "What exact match score does RAG-Sequence get on Natural Questions in the Lewis et "
                       "al. RAG paper?", "And RAG-Token?")
    assert got[1] == ("What exact match score does RAG-Token get on Natural Questions in the Lewis et al. "
                      "RAG paper?")


def test_a_whole_clause_after_and_only_loses_the_and(engine):
    got = ask(engine, "How old is Ajit Jain?", "And Warren Buffett has been Chairman and CEO since when?")
    assert got[1] == "Warren Buffett has been Chairman and CEO since when?"


def test_he_is_the_one_person_the_last_question_named_and_his_then_stays(engine):
    got = ask(engine, "How old is Ajit Jain according to Berkshire Hathaway's 2024 10-K?",
               "Since what year has he held his current position?")
    assert got[1] == "Since what year has Ajit Jain held his current position?"


def test_he_after_a_question_that_asked_who_is_the_answer_not_a_name_of_the_question(engine):
    got = ask(engine, "Who has the board agreed should replace Warren Buffett?", "How old is he?")
    assert got[1] == "How old is he?"  # not "Warren Buffett": the answer (no answer here) is meant


def test_he_with_an_antecedent_in_the_question_itself_stays(engine):
    got = ask(engine, "How old is Ajit Jain?", "The battle in which Giuseppe Arimondi lost his life secured "
                                                "what for Ethiopia?")
    assert got[1] == "The battle in which Giuseppe Arimondi lost his life secured what for Ethiopia?"
    got = ask(engine, "How old is Ajit Jain?", "Who was known by his stage name Aladin?")
    assert got[1] == "Who was known by his stage name Aladin?"


def test_it_is_the_model_not_the_paper_that_only_says_where_to_look(engine):
    got = ask(engine, "What is the maximum context length of MPT-30B-Instruct in the Lost in the Middle "
                       "paper?", "On how many tokens was it initially pre-trained?")
    assert got[1] == "On how many tokens was MPT-30B-Instruct initially pre-trained?"
    got = ask(engine, "Which dataset does the Lost in the Middle paper use?", "Who are its authors?")
    assert got[1] == "Who are the Lost in the Middle paper's authors?"  # a paper that is the topic stays one


def test_an_ellipsis_noun_phrase_with_no_slot_of_its_own_takes_the_named_subject(engine):
    got = ask(engine, "What exact match score does FLAREdirect achieve on 2WikiMultihopQA?",
               "And the question decomposition baseline?")
    assert got[1] == ("What exact match score does the question decomposition baseline achieve on "
                      "2WikiMultihopQA?")


def test_its_before_the_named_subject_and_it_in_a_clause_about_a_noun_point_inside(engine):
    from rag.engines.coreference import refers_inside

    q = "What percentage of its outstanding common stock did Berkshire Hathaway Energy repurchase?"
    assert refers_inside(q, q.index("its"))
    q = "How much did PacifiCorp pay the five commercial timber plaintiffs it settled with?"
    assert refers_inside(q, q.index(" it ") + 1)
    got = ask(engine, "How many acres did the 2020 wildfires burn?", q)
    assert got[1] == q
    q = "How many employees does it have?"  # no antecedent of its own: resolved from the conversation
    assert not refers_inside(q, q.index("it"))
