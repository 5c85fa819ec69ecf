"""Round 15's rules, each about grammar, a document's layout or its text, not a topic.

Written after retrace-dev20 and retrace-dev21 (the held-out shape: the 10-K and four classic papers) were
measured once on arrival; their turns are the examples.
"""

from __future__ import annotations

import pytest

from rag.answer_lists import list_count
from rag.answer_types import expected_type, main_clause
from rag.engines.base import Answer, AnswerCitation
from rag.engines.benchmarks import benchmark_cells, unit_asked
from rag.engines.checks import _as_printed
from rag.engines.cited import EXTRACTIVE_LABEL
from rag.engines.entities import entities
from rag.engines.phrases import topics
from rag.models import Chunk
from tests.unit.conversation import ask, engine_over

SELF_RAG_TABLE = """Short-form Closed-set Long-form generations (with citations)
PopQA TQA Pub ARC Bio ASQA
LM (acc) (acc) (acc) (acc) (FS) (em) (rg) (mau) (pre) (rec)
LMs with proprietary data
ChatGPT 29.3 74.3 70.1 75.3 71.8 35.3 36.2 68.8 – –
Our SELF-RAG 7B 54.9 66.4 72.4 67.3 81.2 30.0 35.7 74.3 66.9 67.8"""


@pytest.mark.parametrize(("question", "kind"), [
    # a question word after a preposition, and a bare noun phrase of four words
    ("At what weighted average interest rate?", "number"),
    ("At what rate did it grow?", "number"),
    # a contraction is its two words
    ("What's the par value of a Class B share?", "number"),
    # a cap is a quantity; "get" measures as "score" does
    ("In the Self-RAG paper, what cap on output tokens did the authors set when prompting GPT-4?", "number"),
    ("What did ChatGPT get without retrieval on PopQA?", "number"),
    # still a named thing and a person
    ("Under which brand does it sell?", "organisation"),
    ("Who's the CEO?", "person"),
])
def test_more_ways_of_asking_for_a_type(question, kind) -> None:
    assert expected_type(question) == kind


def test_a_counted_list_may_name_its_items_in_several_words() -> None:
    question = "Turning to IMC, which two big multinational rivals does the 10-K name in metal cutting?"
    assert expected_type(question) == "list" and list_count(main_clause(question)) == 2
    assert list_count("Which two LLMs did the authors study?") == 2


def test_a_participle_that_opens_a_sentence_is_no_name() -> None:
    question = "Moving to the goodwill note: how large were accumulated goodwill impairments in 2024?"
    assert "Moving" not in topics(question) and "Moving" not in entities(question)
    assert topics("Turning to IMC, which two rivals does it name?") == ["IMC"]
    assert entities("Looking at BNSF, how many miles of track are there?") == ["BNSF"]
    # a name that ends in -ing is still a name where it is not a participle opening a sentence
    assert "Sterling Bank" in entities("How large is Sterling Bank?")


def test_its_after_a_lead_in_means_the_filer_not_the_lead_in() -> None:
    engine = engine_over("Goodwill impairments accumulated to $11.5 billion.",
                         "Intangible assets with indefinite lives were $18.9 billion.")
    got = ask(engine, "According to Berkshire Hathaway's 2024 10-K, what actual return did its defined "
                      "benefit pension plan assets earn in 2024, in millions?",
              "Moving to the goodwill note: how large were accumulated goodwill impairments in 2024?",
              "And how much of its intangible assets had indefinite lives?")
    assert "Moving" not in got[2] and "Berkshire Hathaway's intangible assets" in got[2]


def test_a_possessed_noun_replaced_keeps_the_verb_and_the_year() -> None:
    engine = engine_over("TTI revenues declined 10.0% in 2024 and its pre-tax earnings declined 51.0%.")
    got = ask(engine, "According to Berkshire Hathaway's 2024 10-K, by what percentage did TTI's revenues "
                      "decline in 2024?", "And its earnings?")
    assert got[1] == ("According to Berkshire Hathaway's 2024 10-K, by what percentage did TTI's earnings "
                      "decline in 2024?")
    got = ask(engine, "What were Berkshire's net earnings in 2024?", "And BNSF's revenues?")
    assert got[1] == "What were BNSF's revenues in 2024?"


def test_that_year_alone_is_the_previous_questions_year() -> None:
    engine = engine_over("Depreciation expense on property, plant and equipment was $9,631 million.")
    got = ask(engine, "According to Berkshire Hathaway's 2024 10-K, how much interest did the railroad "
                      "businesses pay in cash in 2024, in millions?",
              "What was total depreciation expense on property, plant and equipment that year?")
    assert got[1] == "What was total depreciation expense on property, plant and equipment in 2024?"


def test_an_ellipsis_may_name_a_model_by_how_it_was_trained() -> None:
    engine = engine_over("Multi BM25+DPR 38.8 57.9 41.1 50.6 35.8")
    got = ask(engine, "In the Dense Passage Retrieval paper's end-to-end QA table, what exact match does "
                      "GraphRetriever get on TriviaQA?", "And BM25+DPR trained on multiple datasets?")
    assert got[1] == ("In the Dense Passage Retrieval paper's end-to-end QA table, what exact match does "
                      "BM25+DPR trained on multiple datasets get on TriviaQA?")


def test_the_metric_a_question_names_picks_among_columns_of_one_dataset() -> None:
    assert [u for u in ("acc", "em", "rg", "mau", "pre", "rec")
            if unit_asked(u, "What MAUVE fluency score does Self-RAG 7B get on ASQA?")] == ["mau"]
    assert unit_asked("em", "What exact match does it get?") and not unit_asked("rec", "What does it reach?")
    [(cell, _)] = benchmark_cells(SELF_RAG_TABLE, "What MAUVE fluency score does Self-RAG 7B get on ASQA?")
    assert cell == "Our SELF-RAG 7B, ASQA (mau): 74.3"
    [(cell, _)] = benchmark_cells(SELF_RAG_TABLE, "What citation precision does Self-RAG 7B reach on ASQA?")
    assert cell == "Our SELF-RAG 7B, ASQA (pre): 66.9"
    # no metric named: the first of the dataset's columns, as before
    [(cell, _)] = benchmark_cells(SELF_RAG_TABLE, "What does Self-RAG 7B get on ASQA?")
    assert cell == "Our SELF-RAG 7B, ASQA (em): 30.0"


def test_a_cell_whose_column_the_question_spells_out_is_grounded_by_its_short_form() -> None:
    assert _as_printed("Multi DPR, WebQuestions (WQ): 42.4") == "Multi DPR, WQ: 42.4"
    assert _as_printed("Net earnings (loss), 2024: 5") == "Net earnings (loss), 2024: 5"
    table = "Training Model NQ TriviaQA WQ TREC SQuAD\nMulti DPR 41.5 56.8 42.4 49.4 24.1"
    engine = engine_over(table)
    chunk = Chunk(id="c1", source="dpr.pdf", text=table)
    answer = Answer(text=f"{EXTRACTIVE_LABEL}\nMulti DPR, WebQuestions (WQ): 42.4 [1]",
                    citations=[AnswerCitation(n=1, chunk_id="c1")])
    assert engine.check_grounding(answer, [chunk]).grounded
    # a figure the chunk does not print is still not grounded by it
    wrong = Answer(text=f"{EXTRACTIVE_LABEL}\nMulti DPR, WebQuestions (WQ): 47.7 [1]",
                   citations=[AnswerCitation(n=1, chunk_id="c1")])
    assert not engine.check_grounding(wrong, [chunk]).grounded


def test_the_company_after_a_name_that_only_modifies_a_noun_is_the_filer() -> None:
    engine = engine_over("The fair value of the investment in Occidental common stock was $13,053 million.")
    got = ask(engine, "Per Berkshire Hathaway's 2024 10-K, what was the fair value of its investment in "
                      "Occidental common stock at December 31, 2024, in millions?",
              "How much did the company pay to acquire equity securities during 2024?")
    assert got[1] == "How much did Berkshire Hathaway pay to acquire equity securities during 2024?"


def test_a_row_of_the_same_name_with_another_note_is_another_row() -> None:
    table = ("Name Architectures Pre-training NQ\n(79k/4k)\nWQ\n(3k/2k)\nCT\n(1k /1k) # params\n"
             "T5 (large) (Roberts et al., 2020) Transformer Seq2Seq T5 (Multitask) 29.8 32.2 - 738m\n"
             "T5 (11b) (Roberts et al., 2020) Transformer Seq2Seq T5 (Multitask) 34.5 37.4 - 11318m")
    question = "How many parameters does T5 (large) have in the REALM paper's Open-QA results table?"
    assert [cell for cell, _ in benchmark_cells(table, question)] == [
        "T5 (large) (Roberts et al., 2020) Transformer Seq2Seq T5 (Multitask), parameters (# params): 738m"]
    only_11b = "\n".join(line for line in table.splitlines() if "738m" not in line)
    assert benchmark_cells(only_11b, question) == []


def test_where_are_they_after_a_statement_asks_where_its_places_are() -> None:
    engine = engine_over("Insurance recoveries for fires at the Rockton, Illinois and Rouen, France sites.")
    got = ask(engine, "Lubrizol booked insurance recoveries for fires at two of its facilities. "
                      "Where are they?",
              "BNSF also issued debentures in 2024. In what year do they mature?")
    assert got[0].endswith("Where are the facilities?")
    assert got[1].endswith("In what year do the debentures mature?")


def test_two_rows_of_one_label_give_no_cell() -> None:
    table = ("Training Model NQ TriviaQA WQ TREC SQuAD\n"
             "Single\nBM25 32.6 52.4 29.9 24.9 38.1\nBM25+DPR 39.0 57.0 35.2 28.0 36.7\n"
             "Multi DPR 41.5 56.8 42.4 49.4 24.1\nBM25+DPR 38.8 57.9 41.1 50.6 35.8")
    question = "What exact match does BM25+DPR trained on multiple datasets get on TriviaQA?"
    assert benchmark_cells(table, question) == []
    assert [c for c, _ in benchmark_cells(table, "What exact match does BM25 get on TriviaQA?")] == [
        "BM25, TriviaQA: 52.4"]


def test_an_item_of_a_list_does_not_start_with_including() -> None:
    from rag.answer_lists import enumeration
    assert enumeration("We show qualitative benefits of REALM, including interpretability and modularity.",
                       3) is None
    assert enumeration("on three benchmarks: NaturalQuestions-Open, WebQuestions, and CuratedTrec.", 3) == \
        "NaturalQuestions-Open, WebQuestions, and CuratedTrec"


def test_a_share_of_stock_is_no_share_of_a_whole() -> None:
    from rag.answer_spans import _spans
    row = "Class B, $0.0033 Par Value (3.225 billion shares authorized)"
    assert "$0.0033" in _spans(row, "number", "What is the par value of a Class B share?", None)
    # "what share of" still asks for a percentage
    assert _spans("Auto policies were 92% of premiums, $38,000 million.", "number",
                  "What share of GEICO's premiums came from auto policies?", None) == ["92%"]


def test_a_counted_list_of_named_things_lists_names() -> None:
    from rag.answer_lists import enumeration
    rivals = "Turning to IMC, which two big multinational rivals does the 10-K name in metal cutting?"
    assert enumeration("IMC has six primary product lines: milling tools, round tools and tooling.", 2,
                       rivals) is None
    assert enumeration("It competes with Sandvik and Kennametal.", 2, rivals) is not None
    benchmarks = "Which three Open-QA benchmarks do the authors evaluate on?"
    assert enumeration("where the fine-tuning setup, hyperparameters and training data are identical.", 3,
                       benchmarks) is None
    # a list of other things may be in lower case
    assert enumeration("We use dense, sparse and hybrid retrieval.", 3, "What are its three retrieval modes?")


def test_a_row_label_of_words_may_be_asked_hyphened() -> None:
    table = ("PQA Med AS\n(acc) (acc) (em)\nSELF-RAG (50k) 45.5 73.5 32.1\nTest\n"
             "No retrieval 24.7 73.0 –\nHard constraints 28.3 72.6 –")
    question = "In its ablation on the 7B model, what PopQA accuracy does the hard-constraints variant reach?"
    assert [c for c, _ in benchmark_cells(table, question)][0] == "Hard constraints, PopQA (PQA, acc): 28.3"


def test_they_say_and_which_ones_then() -> None:
    engine = engine_over("The use of dense vector representations for retrieval goes back to Latent Semantic "
                         "Analysis.", "Significant catastrophe events in 2023 included a hailstorm in Italy.")
    got = ask(engine, "In the Dense Passage Retrieval paper, which concurrent work showed dense retrieval?",
              "And which older technique do they say dense vector representations go back to?")
    assert got[1] == ("Which older technique do the authors of the Dense Passage Retrieval paper say dense "
                      "vector representations go back to?")
    got = ask(engine, "According to Berkshire Hathaway's 2024 10-K, which events counted as significant "
                      "catastrophe events for its insurers in 2023?", "Which ones made that list in 2022?")
    assert got[1] == ("According to Berkshire Hathaway's 2024 10-K, which events counted as significant "
                      "catastrophe events for its insurers in 2022?")


def test_the_last_word_of_a_papers_title_is_no_reference_to_it() -> None:
    engine = engine_over("Top-20 Top-100 retrieval accuracy on test sets.")
    got = ask(engine, "How do the authors of the Dense Passage Retrieval paper pick the positive passage?",
              "In the retrieval results table, what top-100 accuracy does BM25 reach on SQuAD?")
    assert got[1] == "In the retrieval results table, what top-100 accuracy does BM25 reach on SQuAD?"
    # a name that is no paper's title still is: "the hospital" after "Mount Sinai Hospital"
    got = ask(engine, "When was Mount Sinai Hospital founded?", "Where is the hospital?")
    assert got[1] == "Where is Mount Sinai Hospital?"
