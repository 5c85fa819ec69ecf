"""Round 18's rules: answer types, a wider correction, contractions and "they" in contextualize_question.

A "which" question with a few words before its verb asks for a name, and "what birth date" for a date; a
correction for a missing type reads wider; a question word's contraction is no name, and "they" after a verb
of saying is the question's own plural.

Both rules were chosen on the odd-numbered retrace-dev sets and reported on the even-numbered ones (README,
"Self-correction on conversations").
"""

from __future__ import annotations

import pytest

from rag.acronyms import spelled_out
from rag.answer_types import expected_type, question_part
from rag.engines.base import Answer, AnswerCitation
from rag.engines.benchmarks import benchmark_cells
from rag.engines.cited import EXTRACTIVE_LABEL
from rag.engines.phrases import topics
from rag.graph.corrections import SEEK_FACTOR, SEEK_MAX, seek_width
from rag.graph.evidence import last_heading
from tests.unit.conversation import ask, engine_over


@pytest.mark.parametrize(("question", "kind"), [
    # "which" and up to three words before the verb: a named thing of that kind
    ("Which FAISS index type did the authors of the Dense Passage Retrieval paper use?", "organisation"),
    ("Which search service did the authors use to retrieve more documents?", "organisation"),
    ("Which newer Wikipedia snapshot did the authors swap in?", "organisation"),
    ("In which reinsurance business is the float largest?", "organisation"),
    # unchanged: one word before the verb (as before), and what the longer form does not cover
    ("Which generator does the RAG model use?", "organisation"),
    ("Which of Berkshire's senior notes matures last?", None),  # "which of": the rule names no kind
    ("Which program gave the authors access to OpenAI APIs?", None),  # no auxiliary verb
    ("What reduction in emissions from 2005 levels is BHE aiming for?", None),  # "what", not "which"
    ("Which year did BNSF begin operations?", "date"),  # the date rule comes first
    ("How many FAISS index types did the authors try?", "number"),
])
def test_which_and_a_few_words_before_the_verb_asks_for_a_name(question, kind):
    assert expected_type(question) == kind


FAISS = ("However, building the FAISS index on 21-million vectors on a single server takes 8.5 hours. "
         "For the dense passage vectors we used the HNSW index type of FAISS with a search depth of 128.")


def _answer(lead: str) -> Answer:
    return Answer(text=f"{EXTRACTIVE_LABEL}\n{lead} [1]", citations=[AnswerCitation(n=1, chunk_id="c1")])


def test_the_answer_check_wants_a_name_the_question_does_not_give():
    engine = engine_over(FAISS)
    question = "Which FAISS index type did the authors use for the dense passage vectors?"
    no_name = engine.grade_answer(question, _answer(
        "However, building the FAISS index on 21-million vectors on a single server takes 8.5 hours."))
    assert not no_name.useful and no_name.missing_type == "organisation"
    named = engine.grade_answer(question, _answer(
        "For the dense passage vectors we used the HNSW index type of FAISS with a search depth of 128."))
    assert named.useful, named.reasoning


def test_a_correction_for_a_missing_type_reads_wider_but_bounded():
    assert seek_width(6) == SEEK_FACTOR * 6 == 48
    assert seek_width(50) == SEEK_MAX
    assert seek_width(1) == SEEK_FACTOR
    assert all(k <= seek_width(k) <= max(k, SEEK_MAX) for k in range(1, 51))


def test_a_question_word_with_a_contraction_is_no_name():
    """A name is "Berkshire Hathaway" in "What's Berkshire Hathaway's trading symbol?", not "What's …"."""
    assert topics("What's Berkshire Hathaway's trading symbol?") == ["Berkshire Hathaway"]
    assert topics("Who's BNSF's chief executive?") == ["BNSF"]
    engine = engine_over("Berkshire Hathaway insider trading policy")
    got = ask(engine, "According to the cover page of Berkshire Hathaway's 2024 10-K, what coupon do its "
                      "notes carry?", "And what's its trading symbol?",
              "Its insider trading policy lets covered employees trade for a while after each filing. How "
              "long is that window?")
    assert got[2].startswith("Berkshire Hathaway's insider trading policy lets covered employees"), got[2]


def test_they_after_a_verb_of_saying_is_the_questions_own_plural():
    engine = engine_over("Berkshire Hathaway insider trading policy")
    got = ask(engine, "What does Berkshire Hathaway's insider trading policy cover?",
              "And how often do directors and covered employees have to certify they've complied?",
              "How often must employees confirm they have read the policy?")
    assert got[1] == "How often do directors and covered employees have to certify they've complied?"
    assert got[2] == "How often must employees confirm they have read the policy?"


@pytest.mark.parametrize(("question", "kind"), [
    ("In the G. Venugopal bio example, what birth date does the reference give?", "date"),
    ("What filing date does the exhibit give for the merger agreement?", "date"),
    ("Which fiscal year ended on that date?", "date"),
    ("What trading symbol do the notes have?", None),  # no date noun after the modifier
])
def test_a_date_of_a_kind_asks_for_a_date(question, kind):
    assert expected_type(question) == kind


BALANCE_SHEET = """Notes payable and other borrowings 44,885 48,468
311,220 301,274
Railroad, Utilities and Energy:
Accounts payable, accruals and other liabilities 18,226 18,304
Regulatory liabilities 7,033 6,818
Notes payable and other borrowings 79,877 79,803"""
"""The 10-K's balance sheet: a group caption ("Railroad, Utilities and Energy:") over two columns."""


def test_a_stop_word_of_the_question_names_no_column():
    question = "What was the weighted average duration of the life and health liabilities?"
    # it was "Regulatory liabilities, and (and Energy): 6,818", the column taken for the question's "and"
    assert benchmark_cells(BALANCE_SHEET, question) == []


FREIGHT = """Burlington Northern Santa Fe
BNSF operates one of the largest railroad systems in North America.
A summary of BNSF’s railroad freight volumes by business group follows (cars/units in thousands).
Cars/Units Percentage Change
2024 2023 2022 2024 vs 2023 2023 vs 2022
Consumer products 5,254 5,191 5,718 1.2 % (9.2)%"""
"""The 10-K's BNSF section: its heading, then a table whose column header is a short capitalised line."""


def test_a_tables_column_header_is_no_section_heading():
    assert last_heading(FREIGHT) == "Burlington Northern Santa Fe"
    assert last_heading("GEICO\nGEICO writes private passenger automobile insurance.\nMore text") == "GEICO"


def test_a_possessive_acronym_is_spelled_out_by_its_name():
    assert spelled_out("Burlington Northern Santa Fe", "BNSF's")
    assert spelled_out("Burlington Northern Santa Fe", "BNSF")
    assert not spelled_out("Berkshire Hathaway Energy", "BNSF's")


@pytest.mark.parametrize("question", [
    "Rostker v. Goldberg held that the practice of what way of filling vacancies was constitutional?",
    "Both Bishop Carroll Catholic High School and Kapaun Mt. Carmel Catholic High School are in which city?",
    "Which firm did Dr. Smith found?",
])
def test_an_abbreviation_ends_no_statement(question):
    assert question_part(question) == question


def test_a_statement_before_the_question_is_still_set_apart():
    assert question_part("BNSF also issued debentures in 2024. In what year do they mature?") == (
        "In what year do they mature?")
