"""Round 17's rules, each about grammar or a document's layout, not a topic.

Written after retrace-dev25 (measured on arrival and at the end of round 16 without being read) became a dev
set; its turns, and the 10-K's own tables, are the examples.
"""

from __future__ import annotations

import pytest

from rag.engines.phrases import strip_courtesy
from rag.engines.tables import table_rows
from tests.unit.conversation import ask, engine_over

REINSURANCE = """Property/casualty
A summary of property/casualty reinsurance underwriting results follows (dollars in millions).
2024 2023 2022
Amount % Amount % Amount %
Premiums written $ 21,899 $ 22,360 $ 16,962
Premiums earned $ 22,239 100.0 $ 21,938 100.0 $ 16,040 100.0
Losses and loss adjustment expenses 12,244 55.1 12,664 57.7 10,605 66.1
Life/health
A summary of our life/health reinsurance underwriting results follows (dollars in millions).
2024 2023 2022
Amount % Amount % Amount %
Premiums written $ 5,007 $ 5,093 $ 5,185"""
"""The 10-K's reinsurance tables: a caption that names the business; an amount and its percentage a year."""

SUMMARIZED = """Summarized consolidated financial information of Kraft Heinz follows (in millions).
December 28,
2024
December 30,
2023
Assets $ 88,287 $ 90,339
Year ended
December 28,
2024
December 30,
2023
December 31,
2022
Sales $ 25,846 $ 26,640 $ 26,485"""
"""The 10-K's note on equity method investments: a header printed one date per line."""

GEICO = """homeowners insurance. A summary of GEICO’s underwriting results follows (dollars in
millions).
2024 2023 2022
Premiums written $ 42,916 $ 39,837 $ 39,107"""


def rows(text: str, question: str) -> list[str]:
    return [r for r, _ in table_rows(text, question)]


def test_a_caption_that_names_the_business_qualifies_its_rows_and_percentages_are_left_out() -> None:
    got = rows(REINSURANCE, "What property/casualty reinsurance premiums were written in 2024?")
    assert got[0] == ("Premiums written (property/casualty reinsurance), 2024: $21,899 million "
                      "(2023: $22,360 million; 2022: $16,962 million)")
    # the amounts, not the percentages beside them
    assert got[1] == ("Premiums earned (property/casualty reinsurance), 2024: $22,239 million "
                      "(2023: $21,938 million; 2022: $16,040 million)")
    assert got[2].startswith("Losses and loss adjustment expenses (property/casualty reinsurance), 2024: "
                             "12,244 million (2023: 12,664 million")
    # the next caption's table is the next business's
    assert got[3].startswith("Premiums written (life/health reinsurance), 2024: $5,007 million")


def test_a_header_printed_one_date_per_line_is_read_and_the_caption_names_the_owner() -> None:
    got = rows(SUMMARIZED, "What sales did Kraft Heinz report for 2024?")
    # the caption names the owner and what the table is, for both of its headers
    assert got == ["Kraft Heinz’s assets (summarized consolidated financial information), 2024: "
                   "$88,287 million (2023: $90,339 million)",
                   "Kraft Heinz’s sales (summarized consolidated financial information), 2024: "
                   "$25,846 million (2023: $26,640 million; 2022: $26,485 million)"]
    # a lone year in prose is no header
    assert rows("Revenue grew.\n2024\nSales $ 5 $ 6", "What were sales in 2024?") == []


def test_a_scale_line_broken_after_in_still_scales_the_rows() -> None:
    assert rows(GEICO, "What premiums did GEICO write in 2024?") == [
        "GEICO’s premiums written, 2024: $42,916 million (2023: $39,837 million; 2022: $39,107 million)"]


@pytest.mark.parametrize(("question", "rest"), [
    ("Unrelated: in the DPR paper's appendix, what top-1 accuracy does DPR get?",
     "In the DPR paper's appendix, what top-1 accuracy does DPR get?"),
    ("Different part of the business: based on A.M. Best data, what was GEICO's share?",
     "Based on A.M. Best data, what was GEICO's share?"),
    ("By the way, who founded NetJets?", "Who founded NetJets?"),
    ("Moving on. How many employees does BNSF have?", "How many employees does BNSF have?"),
])
def test_topic_switch_lead_ins_are_dropped(question, rest) -> None:
    assert strip_courtesy(question, short=True)[0] == rest


def test_it_after_a_statement_is_the_thing_the_statement_brings_in() -> None:
    engine = engine_over("REALM Fermat example regular polygon compass straightedge",
                         "Wang et al. splitting documents overlapping passages")
    got = ask(engine, "In the REALM paper, over how many TPUs is the MIPS index parallelized?",
              "In their Fermat example, the retrieved document mentions a regular polygon that can be "
              "constructed with compass and straightedge. How many sides does it have?")
    assert got[1].endswith("How many sides does the regular polygon have?")
    got = ask(engine, "In the DPR paper, how are passages split?",
              "Wang et al. (2019) also proposed another way of splitting documents that they didn't find "
              "advantageous. What was it?")
    assert got[1].endswith("What was the other way of splitting documents?")
    # a statement whose subject is named keeps its rule: "it" is that subject
    got = ask(engine, "Which apparel businesses does Berkshire own?",
              "Garan is another apparel business. Under which trademarks does it sell?")
    assert got[1].endswith("Under which trademarks does Garan sell?")


def test_they_who_think_or_tackle_are_the_papers_authors_and_the_phrase_ends_at_paper() -> None:
    engine = engine_over("Lewis et al. RAG paper TriviaQA Wiki test set FEVER")
    got = ask(engine, "In the Lewis et al. RAG paper, which TriviaQA split is used as the test set?",
              "Why do they think their scores are so much higher on the official Wiki test set?",
              "Got it. Why didn't they tackle FEVER's evidence-extraction sub-task?")
    assert got[1] == ("Why do the authors of the Lewis et al. RAG paper think their scores are so much "
                      "higher on the official Wiki test set?")
    assert got[2] == ("Why didn't the authors of the Lewis et al. RAG paper tackle FEVER's "
                      "evidence-extraction sub-task?")


def test_a_when_clause_replaces_the_previous_questions_and_a_trained_it_is_the_model() -> None:
    engine = engine_over("DPR distant supervision BM25 positives gold context Natural Questions")
    first = ("In the DPR paper's appendix, what top-1 accuracy on Natural Questions does DPR get when its "
             "positives are the top BM25 passages?")
    got = ask(engine, first, "And when it's trained on passages that match the gold context?")
    assert got[1] == ("In the DPR paper's appendix, what top-1 accuracy on Natural Questions does DPR get "
                      "when it's trained on passages that match the gold context?")
    # a "when" question is a question of its own, not a clause
    got = ask(engine, first, "And when was it published?")
    assert got[1] != got[0] and "top-1" not in got[1]
    got = ask(engine, "What accuracy does the DPR paper report?", "How is it trained on gold passages?")
    assert got[1] == "How is DPR trained on gold passages?"


def test_a_row_label_is_not_asked_for_its_column_year_nor_for_total() -> None:
    from rag.engines.tables import label_share

    row = "Occidental’s assets (summarized consolidated financial information), 2024: $85,803 million"
    asked = {"2024": 1.2, "total": 2.8, "asset": 2.3}
    assert label_share(row, asked) == 1.0
    # a label that names another thing still falls short, and a question of only the year fits no label
    assert label_share("Occidental’s liabilities, 2024: 50,869 million", asked) == 0.0
    assert label_share("Occidental’s assets, 2024: $85,803 million", {"2024": 1.2}) == 0.0
    # a year that is not the row's column is still asked of the label
    assert label_share("Assets, 2023: 5 million", {"2024": 1.0, "asset": 1.0}) == 0.5



def test_they_of_a_passive_is_the_statements_plural_and_the_capital_the_is_not_doubled() -> None:
    engine = engine_over("Self-RAG critic model concurrent RAG works preprint released datasets")
    got = ask(engine, "In the Self-RAG paper, what is the critic model?",
              "The Self-RAG paper also discusses a few concurrent RAG works. How close to this preprint were "
              "they released?",
              "Which datasets did they use for training?")
    # "were they released": the works are released, not the paper's authors
    assert got[1].endswith("How close to this preprint were the concurrent RAG works released?")
    assert got[2] == "Which datasets did the authors of the Self-RAG paper use for training?"
