"""Round 11's rules, each about grammar or layout, not a topic.

Written after retrace-dev10 was measured once on arrival (its turns are the examples).
"""

from __future__ import annotations

import pytest

from rag.answer_spans import holds
from rag.answer_types import expected_type
from rag.engines.local import LocalEngine
from rag.store.bm25 import LexicalStats
from tests.unit.conversation import ask

TEXTS = [
    "Ragas computes the answer relevance score from questions generated for the answer.",
    "BNSF issued $1.0 billion of debentures in 2024 that mature in 2055.",
    "The estimated fair value of Pilot was $20.3 billion and its carrying value was $18.3 billion.",
    "Shareholders' equity increased $88.1 billion in 2024 to $649.4 billion.",
    "FLARE uses a confidence threshold of 0.4 on StrategyQA; the LMs generate a tentative next sentence.",
    "The survey lists Flowise AI for its low-code, drag-and-drop approach to RAG applications.",
] + [f"Berkshire Hathaway filler text number {i} about retrieval and language models: how an answer "
     "relevance score is computed" for i in range(30)]


@pytest.fixture(scope="module")
def engine():
    return LocalEngine(LexicalStats.from_texts(TEXTS))


@pytest.mark.parametrize(("question", "kind"), [
    ("What range of interest rates do those borrowings carry?", "number"),  # a plural quantity
    ("What average score over all seven datasets did Davinci003 get?", "number"),  # head before "over"
    ("What values of k did they test?", "number"),
    ("What method did they use to score passages?", "organisation"),  # unchanged: a named method
    ("Which datasets do the authors use?", "organisation"),
    ("What kind of model did they use?", None),
])
def test_the_head_of_the_asked_noun_phrase_says_whether_a_figure_is_asked(question: str, kind) -> None:
    assert expected_type(question) == kind


def test_a_figure_after_a_number_sign_is_an_identifier() -> None:
    question = "What were Berkshire Hathaway's total assets at December 31, 2024?"
    contents = "Report of Independent Registered Public Accounting Firm (PCAOB ID No. 34) K-64 Balance Sheets"
    assert holds(contents, "number", question) is None
    assert holds("Total assets were $ 1,153,881 million.", "number", question) == "$ 1,153,881 million"


def test_a_statement_before_the_question_is_its_nearest_antecedent(engine) -> None:
    got = ask(engine, "What were BHFC's senior note borrowings at December 31, 2024?",
              "BNSF also issued debentures in 2024. In what year do they mature?")
    assert got[1] == "BNSF also issued debentures in 2024. In what year do the debentures mature?"
    got = ask(engine, "How many reporting units had fair values close to their carrying values?",
              "Of the units acquired in 2022 and 2023, the largest was Pilot. "
              "What was its estimated fair value?",
              "And its carrying value?")
    # "its" means the statement's Pilot (the turn stands alone), and the ellipsis keeps that statement: years
    # ("2022 and 2023") are never the name it replaces
    assert got[1].endswith("What was its estimated fair value?")
    assert got[2] == ("Of the units acquired in 2022 and 2023, the largest was Pilot. "
                      "What was its carrying value?")


def test_a_question_with_no_topic_of_its_own_is_framed_by_the_conversation_s_paper(engine) -> None:
    got = ask(engine, "In the Ragas paper, what agreement with human annotators did the GPT Ranking "
                      "baseline reach?",
              "When extracting sentences for context relevance, what phrase should the LLM return?",
              "How is the answer relevance score computed?")
    assert got[2] == "In the Ragas paper, how is the answer relevance score computed?"


def test_an_ellipsis_with_named_modifiers_replaces_the_phrase_with_the_same_head(engine) -> None:
    got = ask(engine, "In the Ragas paper, what agreement with human annotators did the GPT Ranking "
                      "baseline reach?",
              "And the GPT Score baseline?")
    assert got[1] == ("In the Ragas paper, what agreement with human annotators did the GPT Score baseline "
                      "reach?")


def test_it_before_a_verb_of_change_is_the_measure_asked_before(engine) -> None:
    got = ask(engine, "What was Berkshire Hathaway's shareholders' equity at the end of 2024?",
              "By how much did it grow over the year?")
    assert got[1] == "By how much did Berkshire Hathaway's shareholders' equity grow over the year?"
    got = ask(engine, "What is Self-RAG?", "How is it trained?")
    assert got[1] == "How is Self-RAG trained?"  # not a verb of change: the name, as before


def test_they_who_use_something_are_the_paper_s_authors(engine) -> None:
    got = ask(engine, "In the FLARE paper, which model do the authors prompt to generate questions?",
              "What exact match does single-time retrieval get on 2WikiMultihopQA?",
              "Which confidence threshold did they use on StrategyQA?")
    assert got[2] == "Which confidence threshold did the authors of the FLARE paper use on StrategyQA?"


def test_the_paper_is_a_survey_named_earlier_not_a_name_of_the_last_turn(engine) -> None:
    got = ask(engine, "According to the RAG survey by Gao et al., how many datasets does MTEB cover?",
              "How many citations does the survey have on Google Scholar right now?",
              "Which tool does the paper single out for its low-code, drag-and-drop approach?")
    assert got[2] == "Which tool does the RAG survey single out for its low-code, drag-and-drop approach?"


def test_them_never_means_one_work(engine) -> None:
    got = ask(engine, "In the hallucination mitigation survey, which model was best at spotting "
                      "high-entropy words?",
              "And which one was better at replacing them?")
    assert "survey" not in got[1]


def test_a_document_head_holds_a_name_of_several_words_only_with_most_of_them() -> None:
    from rag.graph.scope import _held_names, _named_terms
    from rag.text import terms

    names = _named_terms("Which Berkshire subsidiary sells pontoon boats under the South Bay and Trifecta "
                         "brands?")
    survey = tuple(terms("A Survey of Hallucination Mitigation S.M Tonmoy, University of South Carolina"))
    filing = tuple(terms("FORM 10-K Berkshire Hathaway Inc. Omaha, Nebraska"))
    assert _held_names(survey, names) == []  # "South" alone is not "South Bay"
    assert [t for _, t in _held_names(filing, names)] == terms("Berkshire")
    title = tuple(terms("Retrieval meets Long Context Large Language Models"))
    assert _held_names(title, _named_terms("Which retrievers does the Long Context LLMs paper compare?"))


def test_a_question_cut_at_an_abbreviation_has_no_statement_before_it(engine) -> None:
    got = ask(engine, "What exact match score does RAG-Sequence get on Natural Questions in the Lewis et al. "
                      "RAG paper?", "And RAG-Token?")
    assert got[1] == ("What exact match score does RAG-Token get on Natural Questions in the Lewis et al. "
                      "RAG paper?")
    got = ask(engine, "What is REALM?", "It was written by Guu et al. Which corpus does it retrieve from?")
    assert got[1] == "REALM was written by Guu et al. Which corpus does REALM retrieve from?"  # one sentence


def test_a_bare_quantity_word_is_not_a_word_the_passage_must_hold() -> None:
    from rag.answer_types import cue_words

    assert "value" in cue_words("What value of k1 did the authors of DPR use for BM25?")
    assert "value" not in cue_words("What was the fair value of Berkshire's equity securities?")


def test_named_scores_in_a_counted_list_are_a_list_not_a_figure() -> None:
    assert expected_type("What are the three quality scores BEQUE lists for evaluating RAG?") == "list"
