"""Round 8's rules, about grammar or layout, not a topic; written on retrace-dev6 after measuring it once."""

from __future__ import annotations

import pytest

from rag.answer_spans import holds
from rag.answer_types import expected_type
from rag.engines.lexical import constraints, entities


@pytest.mark.parametrize(("question", "kind"), [
    # "how many" after a prepositional lead-in still asks for a figure
    ("In the long-context paper, into chunks of how many words are the documents split?", "number"),
    ("For how many years has Buffett been CEO?", "number"),
    # a noun phrase ending on a quantity word
    ("Switching topics: what retrieval threshold does Self-RAG use for most tasks?", "number"),
    ("What beam width does Self-RAG use?", "number"),
    # a named thing of a kind, whatever the verb, after a preposition, with modifiers
    ("Which Berkshire subsidiary sells pontoon boats under the South Bay brand?", "organisation"),
    ("On which stock exchange are Berkshire Hathaway's Class A shares listed?", "organisation"),
    ("Under which two brand names does its franchise network operate?", "organisation"),
    ("Which embedding model does RAGAS use?", "organisation"),
])
def test_answer_types(question: str, kind: str) -> None:
    assert expected_type(question) == kind


def test_a_kind_followed_by_a_quantity_is_no_name() -> None:
    assert expected_type("What model size works best?") != "organisation"
    assert expected_type("Which model size does InstructRetro use?") == "number"


def test_a_digit_of_a_name_is_no_figure() -> None:
    question = "How many distinct news articles are in the MultiHop-RAG knowledge base?"
    assert holds("Using GPT-4 as a data generator, we build the knowledge base.", "number", question) is None
    assert holds("Claude-1.3 reads the news articles of the knowledge base.", "number", question) is None
    assert holds("The knowledge base holds 609 distinct news articles.", "number", question) == "609"


def test_names_the_question_sets_aside_are_no_constraint() -> None:
    question = "Besides Stanford and UC Berkeley, which organisation are the Lost in the Middle authors with?"
    held = [c.text for c in constraints(question)]
    assert "Stanford" not in held and "UC Berkeley" not in held and "Lost" in held
    # only the names right after the phrase: the question's own subject stays
    other = "Which company other than GEICO does Berkshire own?"
    assert [c.text for c in constraints(other)] == ["Berkshire"]
    assert [c.text for c in constraints("What does Berkshire own besides BNSF?")] == ["Berkshire"]


def test_a_possessive_between_two_names_splits_them() -> None:
    assert entities("What was the liquidation value of Berkshire's Occidental preferred stock?") == \
        ["Berkshire", "Occidental"]
    assert entities("What were Berkshire Hathaway's revenues?") == ["Berkshire Hathaway's"]  # no name next
    assert entities("Where is McDonald's based?") == ["McDonald's"]


def test_the_scope_check_reads_the_question_without_the_names_it_sets_aside() -> None:
    from rag.engines.lexical import without_set_aside

    asked = without_set_aside("Besides Stanford and UC Berkeley, which organisation are its authors with?")
    assert "UC" not in asked and "Stanford" not in asked and "organisation" in asked
    assert without_set_aside("How much did BNSF earn?") == "How much did BNSF earn?"


def test_a_lower_case_model_name_with_a_version_is_a_name() -> None:
    question = "Which embedding model performed best with a reranker?"
    found = holds("With bge-reranker-large, voyage-02 performed best.", "organisation", question)
    assert found == "voyage-02"
    assert holds("In mid-2024 the reranker performed best.", "organisation", question) is None


def test_the_day_of_a_date_and_a_year_before_a_comma_are_no_figures() -> None:
    question = "How large was Berkshire Hathaway's insurance float at the end of 2022?"
    assert holds("December 31, 2022. The cost of float was negative in 2024 and 2023, as in 2022.", "number",
                 question) is None
    assert holds("Float was approximately $164 billion at December 31, 2022.", "number", question) == \
        "$164 billion"
