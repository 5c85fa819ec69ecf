"""Round 13's rules, each about grammar, not a topic.

Written after retrace-dev15 and retrace-dev16 (the held-out shape: the 10-K and four classic papers) were
measured once on arrival; their turns are the examples.
"""

from __future__ import annotations

import pytest

from rag.answer_types import expected_type
from rag.engines.aliases import definitions, expand
from rag.engines.phrases import strip_courtesy
from rag.engines.slots import _name_and_phrase_slot, fill_slot
from rag.text import terms
from tests.unit.conversation import ask, engine_over

TEXTS = [
    "T5 (large) reaches 32.2 on WebQuestions; GraphRetriever reaches 31.8 on NaturalQuestions.",
    "Nebraska Furniture Mart operates four retail complexes.",
]


@pytest.fixture(scope="module")
def engine():
    return engine_over(*TEXTS)


@pytest.mark.parametrize(("question", "kind"), [
    # a count before the plural place noun
    ("In which two states are Berkshire Hathaway Automotive's dealership operations concentrated?", "place"),
    ("In which state is BHE headquartered?", "place"),
    # a modal before the measure ("be worth")
    ("What would the equity portfolio be worth after that decline?", "number"),
    # a discount is a measure; "S&P" is one word of the noun phrase
    ("What discount for illiquidity and subordination did Berkshire apply to its Level 3 preferred stock?",
     "number"),
    ("In their small human evaluation, what S&P score did Self-RAG get on PopQA?", "number"),
    # no measure: no figure asked for
    ("What would the company do if rates rose?", None),
])
def test_the_answer_type_of_a_question(question, kind) -> None:
    assert expected_type(question) == kind


def test_a_fragment_with_a_name_and_a_phrase_fills_both_slots() -> None:
    prev = "In the REALM paper's Open-QA results table, what exact match does T5 (large) get on WebQuestions"
    got, how = fill_slot("GraphRetriever on NaturalQuestions", prev, None)
    assert got == ("In the REALM paper's Open-QA results table, what exact match does GraphRetriever get on "
                   "NaturalQuestions")
    assert "T5 (large)" in how and "on WebQuestions" in how
    # the named owner, when the question has no "do" subject
    assert fill_slot("GEICO in 2022", "What were BNSF's net earnings in 2024", "BNSF")[0] == \
        "What were GEICO's net earnings in 2022"
    # a name the previous question already holds is no second slot: only the phrase is left to fill
    assert _name_and_phrase_slot("T5 (large) on NaturalQuestions", prev, None) is None


def test_how_about_a_name_on_a_dataset_in_a_conversation(engine) -> None:
    got = ask(engine, "In the REALM paper's Open-QA results table, what exact match does T5 (large) get on "
                      "WebQuestions?", "How about GraphRetriever on NaturalQuestions?")
    assert got[1] == ("In the REALM paper's Open-QA results table, what exact match does GraphRetriever get "
                      "on NaturalQuestions?")


@pytest.mark.parametrize(("turn", "rest"), [
    ("OK, different topic. How many retail complexes does Nebraska Furniture Mart operate?",
     "How many retail complexes does Nebraska Furniture Mart operate?"),
    ("Switching topics: where is See's Candies based?", "Where is See's Candies based?"),
    # a frame that names what the question is about stays
    ("Switching to the Self-RAG paper: what is its batch size?",
     "Switching to the Self-RAG paper: what is its batch size?"),
])
def test_a_topic_switch_is_a_courtesy_not_part_of_the_question(turn, rest) -> None:
    assert strip_courtesy(turn, short=True)[0] == rest


def test_a_definition_takes_the_words_its_initials_spell() -> None:
    # a page header runs into the sentence that defines the short form
    text = ("Burlington Northern Santa Fe\nBurlington Northern Santa Fe, LLC (“BNSF”) operates one of the "
            "largest railroad systems. Omaha, Nebraska. Berkshire Hathaway Specialty Insurance (“BHSI”) "
            "offers")
    defined = definitions([text])
    assert defined["bnsf"] == tuple(terms("Burlington Northern Santa Fe"))
    assert defined["bhsi"] == tuple(terms("Berkshire Hathaway Specialty Insurance"))


def test_a_full_name_written_out_holds_its_short_form_and_the_short_form_its_full_name() -> None:
    aliases = {"bnsf": tuple(terms("Burlington Northern Santa Fe"))}
    assert "bnsf" in expand(terms("Burlington Northern Santa Fe revenues"), aliases)
    assert set(terms("Burlington Northern")) <= set(expand(terms("BNSF revenues"), aliases))
    # the full name's words apart are not the name
    assert "bnsf" not in expand(terms("Burlington and Santa Fe Northern"), aliases)


def test_their_after_a_singular_subject_means_the_earlier_turn(engine) -> None:
    got = ask(engine, "Who is the first author of the Dense Passage Retrieval paper?",
              "How many test questions does TriviaQA have in their dataset table?")
    assert got[1] == ("How many test questions does TriviaQA have in the Dense Passage Retrieval paper's "
                      "dataset table?")
    # a plural subject's own "their" and a singular subject's "its" stay
    assert ask(engine, "Who is the first author of the Dense Passage Retrieval paper?",
               "How many fans did the Lewiston Maineiacs draw to their home games?")[1] == \
        "How many fans did the Lewiston Maineiacs draw to their home games?"



def test_a_typed_candidate_that_names_the_subject_beats_one_whose_chunk_does(engine) -> None:
    from rag.engines.cited import Passage

    q = "Where is Berkshire Hathaway Specialty Insurance based?"
    name = frozenset(terms("Berkshire Hathaway Specialty Insurance"))

    def passage(text: str, stems: frozenset[str]) -> Passage:
        return Passage(0, 0, text, stems, 0.0, len(terms(text)), text, context=name)

    # the short sentence holds the question's name only through its chunk; the long one through "BHSI"
    omaha = passage("NICO Primary and BHHC are each based in Omaha, Nebraska.",
                    frozenset(terms("NICO Primary and BHHC are each based in Omaha, Nebraska.")))
    long = ("BHSI writes primary and excess policies on an admitted and non-admitted basis in the U.S., and "
            "on a local or foreign non-admitted basis outside the U.S. BHSI is based in Boston, "
            "Massachusetts, and has regional offices in several other cities within the U.S.")
    boston = passage(long, frozenset(terms(long)) | name)
    best = engine._typed_candidate(q, [omaha, boston], lambda p: True, lambda p: 1.0)
    assert best is boston


def test_such_a_kind_is_the_previous_questions_phrase_of_that_head(engine) -> None:
    got = ask(engine, "Losses above what amount per event count as a significant catastrophe event in the "
                      "claims note?",
              "How much did such events contribute to current accident year incurred losses in 2024?")
    assert got[1] == ("How much did significant catastrophe events contribute to current accident year "
                      "incurred losses in 2024?")
    # "such as" is no reference, and a kind the previous question does not name stays as it is
    assert ask(engine, "What is GEICO?", "Which insurers such as GEICO sell auto policies?")[1] == \
        "Which insurers such as GEICO sell auto policies?"
