"""Expected answer types: classification, the type held by a passage, acronym expansions and names."""

import pytest

from rag.acronyms import expansion
from rag.answer_spans import holds
from rag.answer_types import cue_words, expected_type, is_authorship, persons, search_query


@pytest.mark.parametrize(("question", "kind"), [
    ("What were Berkshire's net earnings in 2024?", "number"),
    ("How many people do Berkshire's subsidiaries employ?", "number"),
    ("How large was the insurance float at the end of 2024?", "number"),
    ("When was BNSF founded?", "date"),
    ("Who is Berkshire's chief executive officer?", "person"),
    ("Who are Self-RAG's authors?", "person"),
    ("Who won the 2022 FIFA World Cup?", "organisation"),
    ("Where is BNSF based?", "place"),
    ("In which city is the clinic?", "place"),
    ("What does REALM stand for?", "acronym"),
    ("Which generator does the RAG model use?", "organisation"),
    ("What is dense passage retrieval?", "definition"),
    ("How is Self-RAG trained?", None),
])
def test_expected_type_reads_the_question(question, kind):
    assert expected_type(question) == kind


def test_type_cue_words_leave_the_search_query():
    assert cue_words("What does REALM stand for?") == {"stand"}
    assert "stand" not in search_query("What does REALM stand for?")
    assert "authors" not in search_query("Who are Self-RAG's authors?")
    assert is_authorship("Who are Self-RAG's authors?") and not is_authorship("Who is the CEO?")
    assert search_query("Who is the CEO of BNSF?") == "Who is the CEO of BNSF?"


def test_acronym_expansion_spells_the_acronym_from_word_prefixes():
    assert expansion("REALM: Retrieval-Augmented Language Model Pre-Training", "REALM") == (
        "Retrieval-Augmented Language Model")
    assert expansion("Our Dense Passage Retriever (DPR) uses", "DPR") == "Dense Passage Retriever"
    assert expansion("a model for retrieval and reading", "REALM") is None


def test_person_names_are_not_roles_or_corpus_words():
    q = "Who is Berkshire's chief executive officer?"
    made = "decisions are made by Warren E. Buffett, Chairman of the Board"
    assert persons(made, q) == ["Warren E. Buffett"]
    assert persons("The Board of Directors selects a successor to the Chief Executive Officer.", q) == []
    # an author line with its e-mail list (names in lower case there) still gives the names
    line = "Akari Asai†, Zeqiu Wu† University of Washington {akari,zeqiuwu}@cs.washington.edu"
    assert persons(line, "Who are its authors?")[:2] == ["Akari Asai", "Zeqiu Wu"]
    # a word the corpus uses everywhere is no name
    assert persons("the gap between No Retriever and Critic Model baselines", q,
                   common=lambda w: w in {"retriever", "critic", "model"}) == []


def test_holds_says_no_when_the_type_is_missing():
    q = "Where is Berkshire headquartered?"
    assert holds("its corporate headquarters is in Omaha, Nebraska.", "place", q) == "Omaha, Nebraska"
    assert holds("Berkshire is a holding company.", "place", q) is None
    assert holds("Revenues rose in 2024.", "number", "How much did revenues rise?") is None  # a year only
    assert holds("Revenues rose 7% in 2024.", "number", "How much did revenues rise?")
    assert holds("The seq2seq model (BART) conditions on them.", "organisation",
                 "Which generator does the RAG model use?") == "BART"
