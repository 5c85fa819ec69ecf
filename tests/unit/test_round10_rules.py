"""Round 10's rules, each about grammar or layout, not a topic.

Written on the dev sets after retrace-dev9 was measured once on arrival (its turns are the examples).
"""

from __future__ import annotations

import pytest

from rag.answer_lists import list_count
from rag.answer_spans import holds, measures_other
from rag.answer_types import expected_type
from rag.engines.local import LocalEngine
from rag.engines.phrases import strip_courtesy
from rag.engines.tables import label_share
from rag.store.bm25 import LexicalStats
from rag.text import terms
from tests.unit.conversation import ask


@pytest.mark.parametrize(("question", "kind"), [
    ("What exact match did REALM score on NaturalQuestions when pre-trained on CC-News?", "number"),
    ("What agreement with human annotators does Ragas reach on faithfulness?", "number"),
    ("What accuracy does Self-RAG 13B reach on PopQA?", "number"),
    ("What method did they use to score passages?", "organisation"),  # a named method, not a score
    ("Which dataset did they use?", "organisation"),
])
def test_a_verb_of_measuring_asks_for_a_figure(question: str, kind: str | None) -> None:
    assert expected_type(question) == kind


def test_a_figure_the_question_gives_is_not_the_answer() -> None:
    question = "How much did the June 2023 jury award the 17 named plaintiffs in the James case?"
    trial = "In April 2023, a jury trial for the James case with respect to 17 named plaintiffs began."
    award = "In June 2023, the jury awarded the 17 named plaintiffs $90 million in damages in the James case."
    assert holds(trial, "number", question) is None
    assert holds(award, "number", question) == "$90 million"


def test_a_row_that_measures_something_else_is_no_answer() -> None:
    question = "What were Berkshire's operating lease liabilities at December 31, 2024, in millions?"
    asked = {t: 1.0 for t in terms("operating lease liabilities")}
    expense = "Operating lease expense, 2024: $1,652 million (2023: $1,535 million)"
    liabilities = "Operating lease liabilities, 2024: $5,996 million (2023: $5,441 million)"
    assert label_share(expense, asked) == 0.0
    assert label_share(liabilities, asked) == 1.0
    assert measures_other(set(terms("Operating lease expense")), set(terms(question)))
    # a label that names no measure, or the same one among others, is left to the share of words
    assert not measures_other(set(terms("Net earnings (loss) per average equivalent Class A share")),
                              set(terms("What were Berkshire's net earnings per Class A share in 2024?")))
    assert not measures_other(set(terms("BNSF")), set(terms(question)))


TEXTS = [
    "Berkshire's subsidiaries expect to contribute $190 million to the pension plans in 2025.",
    "The discount rate applicable to PBOs was 5.8% at year-end 2024.",
    "Operating lease liabilities were $5,996 million; the weighted average discount rate was 4.5%.",
    "Float has grown from approximately $129 billion at the end of 2019 to $171 billion at the end of 2024.",
    "We use Contriever to retrieve the distractor documents for the multi-document QA task.",
] + [f"Berkshire Hathaway filler text number {i} about retrieval and language models" for i in range(30)]


@pytest.fixture(scope="module")
def engine():
    return LocalEngine(LexicalStats.from_texts(TEXTS))




def test_its_never_means_a_plural_acronym(engine) -> None:
    got = ask(engine, "What discount rate did Berkshire use for its pension PBOs at year-end 2024?",
               "How much do its subsidiaries expect to contribute to the pension plans in 2025?")
    assert got[1] == "How much do Berkshire's subsidiaries expect to contribute to the pension plans in 2025?"


def test_them_means_the_plural_noun_phrase_the_owner_possesses(engine) -> None:
    got = ask(engine, "What were Berkshire's operating lease liabilities at December 31, 2024, in millions?",
               "What weighted average discount rate was used to measure them?")
    assert got[1] == ("What weighted average discount rate was used to measure Berkshire's operating lease "
                      "liabilities?")


def test_they_after_a_quoted_paper_title_means_its_authors(engine) -> None:
    got = ask(engine, "In the 'Lost in the Middle' paper, how many NaturalQuestions-Open queries were used "
                       "for the multi-document QA task?",
               "Which retrieval system did they use to pick the distractor documents?")
    assert got[1] == ("Which retrieval system did the authors of the Lost in the Middle paper use to pick "
                      "the distractor documents?")


def test_back_in_a_year_is_a_year_ellipsis(engine) -> None:
    got = ask(engine, "How large was Berkshire's insurance float at the end of 2024?",
               "What about back in 2019?")
    assert "2019" in got[1] and "float" in got[1] and "back" not in got[1] and "2024" not in got[1]


@pytest.mark.parametrize("prefix", ["Fair enough.", "Makes sense!", "Good to know,", "All right,"])
def test_more_courtesies_are_stripped(prefix: str) -> None:
    question, dropped = strip_courtesy(f"{prefix} When did the company last declare a cash dividend?")
    assert question == "When did the company last declare a cash dividend?"
    assert dropped.rstrip(",.!") == prefix.rstrip(",.!")


def test_a_figure_next_to_another_measure_is_no_answer() -> None:
    question = "What were Berkshire's operating lease liabilities at December 31, 2024, in millions?"
    predicate = {t: 1.0 for t in terms("operating lease liabilities")}
    row = "Operating lease expense $ 1,652 $ 1,535 $ 1,361"
    assert holds(row, "number", question, None, predicate) is None
    assert holds("Operating lease liabilities $ 5,996 $ 5,441", "number", question, None,
                 predicate) == "$ 5,996"


def test_a_passage_about_another_measure_is_no_answer_but_a_synonym_is() -> None:
    question = "What were Berkshire's operating lease liabilities at December 31, 2024, in millions?"
    predicate = {t: 1.0 for t in terms("operating lease liabilities")}
    depreciation = ("Depreciation expense for equipment held for lease was $1,429 million in 2024, $1,266 "
                    "million in 2023.")
    assert holds(depreciation, "number", question, None, predicate) is None
    assert not measures_other(set(terms("McLane's sales")), set(terms("What were McLane's revenues?")))
    assert measures_other(set(terms("McLane's pre-tax earnings")), set(terms("What were McLane's revenues?")))


def test_of_that_means_what_the_previous_question_asked_about(engine) -> None:
    got = ask(engine, "What cumulative wildfire losses had PacifiCorp recorded through December 31, 2024?",
               "How much of that was accrued in 2024 alone?")
    assert got[1] == "How much of PacifiCorp's cumulative wildfire losses was accrued in 2024 alone?"
    got = ask(engine, "How many people did Berkshire employ at the end of 2024?",
               "How many of those worked in the insurance businesses?")
    assert got[1] == "How many of Berkshire's people worked in the insurance businesses?"
    # a demonstrative followed by its own noun is left alone
    got = ask(engine, "How many people did Berkshire employ at the end of 2024?",
               "How many of those plaintiffs won?")
    assert "Berkshire" not in got[1]


@pytest.mark.parametrize(("question", "n"), [
    ("Which two LLMs did the authors study?", 2),
    ("What are the three quality aspects RAGAS measures?", 3),
    ("Which LLMs did the authors study?", None),
])
def test_which_with_a_count_asks_for_a_counted_list(question: str, n: int | None) -> None:
    assert list_count(question) == n
    assert expected_type(question) == ("list" if n else "organisation")


def test_a_table_row_run_into_the_next_sentence_keeps_its_figures() -> None:
    question = "What was the accumulated benefit obligation at year-end 2024?"
    predicate = {t: 1.0 for t in terms("accumulated benefit obligation")}
    glued = ("Net periodic pension expense $ (53) $ (32) $ (156) The accumulated benefit obligation (“ABO”) "
             "is the actuarial present value of benefits earned based on service.")
    assert holds(glued, "number", question, None, predicate) is None
    caption = ("$ 9,227 $ 8,416 $ 7,514 A summary of future operating lease receipts as of December 31, 2024 "
               "follows (in millions).")
    assert holds(caption, "number", "What were the operating lease liabilities?", None,
                 {t: 1.0 for t in terms("operating lease liabilities")}) is None
    row = "Accumulated benefit obligation $ 11,210 $ 11,544 The plans are funded."
    assert holds(row, "number", question, None, predicate) == "$ 11,210"


def test_a_counted_list_after_a_framing_phrase_needs_that_many_items() -> None:
    question = ("In 'Retrieval meets Long Context Large Language Models', which two LLMs did the authors "
                "study?")
    assert holds("Extending the context window of large language models (LLMs) is getting popular.", "list",
                 question) is None
    assert holds("We study a proprietary GPT-43B and Llama2-70B.", "list", question) is not None


def test_an_obligation_is_a_quantity() -> None:
    assert expected_type("What was the accumulated benefit obligation at that year-end?") == "number"
