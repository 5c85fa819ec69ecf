"""Round 16's rules, each about grammar or a document's layout, not a topic.

Written after retrace-dev23 and retrace-dev24 (the held-out shape: the 10-K and four classic papers) were
measured on arrival; their turns, and the 10-K's own tables, are the examples.
"""

from __future__ import annotations

import pytest

from rag.answer_types import expected_type
from rag.engines.benchmarks import benchmark_cells, names_column
from rag.engines.measure_slots import measure_slot
from rag.engines.tables import asked_group, group_names, table_rows
from tests.unit.conversation import ask, engine_over

PREMIUMS_BY_REGION = """Insurance premiums written by geographic region (based upon the domicile of the
insured or reinsured) are summarized below (in millions).
Property/Casualty Life/Health
2024 2023 2022 2024 2023 2022
United States $ 71,723 $ 67,831 $ 59,648 $ 1,358 $ 1,285 $ 2,107
Western Europe 5,252 5,014 4,901 1,407 1,323 1,235
Asia Pacific 5,043 5,306 4,699 1,548 1,760 1,704"""
"""The layout of the 10-K's note 26: two groups of columns side by side, each over the same years."""

SEGMENT_DATA = """Additional segment data for each of the three most recent years follows (in millions).
Capital expenditures Depreciation and amortization
2024 2023 2022 2024 2023 2022
Business segments
BNSF 3,690 3,920 3,532 2,621 2,627 2,510
BHE 9,013 9,148 7,505 4,003 4,010 3,751
Pilot McLane
2024 2023 2024 2023 2022
Revenues 45,000 46,891 52,000 51,739 50,000"""


@pytest.mark.parametrize(("line", "groups"), [
    ("Property/Casualty Life/Health", ["Property/Casualty", "Life/Health"]),
    ("Revenues Earnings (loss) before income taxes", ["Revenues", "Earnings (loss) before income taxes"]),
    # a joining word keeps the next capitalised word in its group; of several cuts, the most even
    ("Manufacturing Service and Retailing", ["Manufacturing", "Service and Retailing"]),
    ("Carrying Value Fair Value", ["Carrying Value", "Fair Value"]),
    ("Equity in Earnings Distributions Received", ["Equity in Earnings", "Distributions Received"]),
    # a title before the groups is left out
    ("Operating leases Lessee Lessor", ["Lessee", "Lessor"]),
    # a line with a figure, or one group only, names no groups
    ("Total 2,000 Other", []),
    ("Revenues", []),
])
def test_the_names_of_column_groups(line, groups) -> None:
    assert group_names(line, 2) == groups


def test_a_header_that_repeats_its_years_is_read_for_the_group_the_question_names() -> None:
    rows = [r for r, _ in table_rows(PREMIUMS_BY_REGION, "How much property/casualty premium was written in "
                                     "2024 for insureds domiciled in Asia Pacific, in millions?")]
    assert "Asia Pacific (Property/Casualty), 2024: 5,043 million (2023: 5,306 million; " \
        "2022: 4,699 million)" in rows
    rows = [r for r, _ in table_rows(PREMIUMS_BY_REGION, "What life/health premiums were written for Western "
                                     "Europe in 2023?")]
    assert "Western Europe (Life/Health), 2023: 1,323 million (2024: 1,407 million; " \
        "2022: 1,235 million)" in rows
    # naming neither group: no row of the table is read, as before (which group is meant is not said)
    assert table_rows(PREMIUMS_BY_REGION, "How much premium was written for Western Europe in 2024?") == []


def test_groups_of_different_widths_and_a_name_for_a_label() -> None:
    rows = [r for r, _ in table_rows(SEGMENT_DATA, "What was BNSF's depreciation and amortization in 2023?")]
    # the section line over the rows ("Business segments") heads them as before
    assert rows[0] == "BNSF (business segments) (Depreciation and amortization), 2023: 2,627 million " \
        "(2024: 2,621 million; 2022: 2,510 million)"
    # Pilot's two years, then McLane's three
    rows = [r for r, _ in table_rows(SEGMENT_DATA, "What were McLane's revenues in 2022?")]
    assert rows == ["Revenues (McLane), 2022: 50,000 million (2024: 52,000 million; 2023: 51,739 million)"]
    rows = [r for r, _ in table_rows(SEGMENT_DATA, "What were Pilot's revenues in 2023?")]
    assert rows == ["Revenues (Pilot), 2023: 46,891 million (2024: 45,000 million)"]


def test_the_group_asked_is_the_one_with_most_of_the_questions_words() -> None:
    assert asked_group(["Carrying Value", "Fair Value"], "What was the fair value of the stake?") == 1
    assert asked_group(["Carrying Value", "Fair Value"], "What was the value of the stake?") is None


@pytest.mark.parametrize(("question", "kind"), [
    ("What was BNSF's depreciation and amortization in 2023?", "number"),
    ("What was the Manufacturing segment's goodwill at year-end 2024?", "number"),
    ("What were BHE's capital expenditures in 2024?", "number"),
    # a quantity word alone asks what it is
    ("What is goodwill?", "definition"),
    ("What is revenue?", "definition"),
])
def test_accounting_measures_ask_for_figures(question, kind) -> None:
    assert expected_type(question) == kind


SELF_RAG_MAIN = """PopQA TQA Pub ARC Bio ASQA
LM (acc) (acc) (acc) (acc) (FS) (em) (rg) (mau) (pre) (rec)
Baselines with retrieval
Toolformer*6B – 48.8 – – – – – – – –
SAIL*7B – – 69.2 48.4 – – – – – –
Our SELF-RAG 7B 54.9 66.4 72.4 67.3 81.2 30.0 35.7 74.3 66.9 67.8"""

LEWIS_SIZES = """Table 7: Number of instances in the datasets used.
Task Train Development Test
Natural Questions 79169 8758 3611
FEVER-3-way 145450 10000 10000
FEVER-2-way 96966 6666 6666"""


def test_a_row_label_with_a_footnote_mark_and_a_model_size() -> None:
    cells = benchmark_cells(SELF_RAG_MAIN, "In the Self-RAG paper's main results table, what TriviaQA "
                                           "accuracy is reported for Toolformer?")
    assert [c for c, _ in cells] == ["Toolformer*6B, TriviaQA (TQA, acc): 48.8"]


def test_the_paper_a_question_names_is_no_row() -> None:
    # "the Self-RAG paper" says where the table is; the row asked for is SAIL's
    cells = benchmark_cells(SELF_RAG_MAIN, "What PubHealth accuracy is listed for SAIL in the Self-RAG "
                                           "paper's main results table?")
    assert [c for c, _ in cells] == ["SAIL*7B, PubHealth (Pub, acc): 69.2"]


def test_a_column_named_by_the_first_part_of_a_camel_case_name() -> None:
    assert names_column("Pub", "PubHealth")
    assert not names_column("Pub", "Publication")  # a cut of three letters is not enough otherwise
    assert not names_column("Health", "PubHealth")


def test_a_hyphenated_row_label_asked_in_another_order() -> None:
    cells = benchmark_cells(LEWIS_SIZES, "According to the appendix's table of dataset sizes, how many "
                                         "training instances does 3-way FEVER have?")
    assert [c for c, _ in cells] == ["FEVER-3-way, training (Train): 145450"]
    cells = benchmark_cells(LEWIS_SIZES, "How many FEVER 2-way test instances are listed?")
    assert [c for c, _ in cells] == ["FEVER-2-way, test: 6666"]


@pytest.mark.parametrize(("fragment", "previous", "expected"), [
    ("its depreciation and amortization that year",
     "Switching to Berkshire Hathaway's 2024 10-K: what capital expenditures does the segment data show for "
     "BNSF in 2024, in millions",
     "Switching to Berkshire Hathaway's 2024 10-K: what depreciation and amortization does the segment data "
     "show for BNSF in 2024, in millions"),
    # the phrase after the measure with the fragment's preposition goes with it
    ("its case liabilities for property",
     "In Berkshire Hathaway's 2024 10-K, how large were the reinsurance group's IBNR liabilities for "
     "casualty at year-end 2024, in millions",
     "In Berkshire Hathaway's 2024 10-K, how large were the reinsurance group's case liabilities for "
     "property at year-end 2024, in millions"),
    # a year in the fragment replaces the previous one
    ("their revenues in 2023", "What were Berkshire's net earnings in 2024",
     "What were Berkshire's revenues in 2023"),
])
def test_an_ellipsis_that_asks_for_another_measure(fragment, previous, expected) -> None:
    got = measure_slot(fragment, previous)
    assert got is not None and got[0] == expected


@pytest.mark.parametrize("fragment", ["BNSF", "the ORQA baseline", "in 2023", "the manufacturing businesses",
                                      "its net earnings"])
def test_no_measure_slot_without_another_measure(fragment) -> None:
    assert measure_slot(fragment, "What were Berkshire's net earnings in 2024") is None


def test_follow_ups_that_ask_for_another_measure() -> None:
    engine = engine_over("Capital expenditures and depreciation of BNSF", "Kraft Heinz and Occidental")
    got = ask(engine, "Switching to Berkshire Hathaway's 2024 10-K: what capital expenditures does the "
                      "segment data show for BNSF in 2024, in millions?",
              "And its depreciation and amortization that year?")
    assert got[1] == ("Switching to Berkshire Hathaway's 2024 10-K: what depreciation and amortization does "
                      "the segment data show for BNSF in 2024, in millions?")
    # a measure with an owner of its own is a question of its own, in the same filing
    got = ask(engine, "In Berkshire Hathaway's 2024 10-K, what sales did Kraft Heinz report for its 2024 "
                      "fiscal year in the summarized financial information, in millions?",
              "How about Occidental's total assets as of September 30, 2024?")
    assert got[1] == ("In Berkshire Hathaway's 2024 10-K, what were Occidental's total assets as of "
                      "September 30, 2024?")


def test_that_table_is_the_table_the_previous_turn_named() -> None:
    engine = engine_over("Self-RAG main results table PopQA TriviaQA PubHealth SAIL")
    got = ask(engine, "In the Self-RAG paper's main results table, what TriviaQA accuracy does Self-RAG 13B "
                      "achieve?", "What PubHealth accuracy is listed for SAIL in that table?")
    assert got[1] == "What PubHealth accuracy is listed for SAIL in the Self-RAG paper's main results table?"
    # with no table before, "that table" stays as it is
    got = ask(engine, "Who wrote the Self-RAG paper?", "What does that table show?")
    assert got[1] == "What does that table show?"


def test_it_after_a_statement_is_the_statements_subject() -> None:
    engine = engine_over("Fechheimer Brothers uniforms", "Garan children's apparel trademarks")
    got = ask(engine, "According to Berkshire Hathaway's 2024 10-K, what does Fechheimer Brothers make?",
              "Garan is another apparel business of Berkshire. Under which trademarks does it sell?")
    assert got[1] == "Garan is another apparel business of Berkshire. Under which trademarks does Garan sell?"


def test_a_date_near_the_names_answers_a_date_question_with_another_verb() -> None:
    from rag.engines.grading import dated_name
    from rag.engines.lexical import constraints
    question = "On what date did PacifiCorp's 2022 Wildfire start?"
    text = ("According to the California Department of Forestry and Fire Protection, a wildfire began on "
            "July 29, 2022, in the Oak Knoll Ranger District located in PacifiCorp’s service territory (the "
            "“2022 Wildfire”) burning over 60,000 acres.")
    assert dated_name(text, question, constraints(question), None, None) == "July 29, 2022"
    # the year the question gives is no answer
    burned = "The 2022 Wildfire burned near PacifiCorp lines."
    assert dated_name(burned, question, constraints(question), None, None) is None
    engine = engine_over(text, "PacifiCorp wildfire losses were accrued.")
    from rag.models import Chunk
    chunk = Chunk(id="a-1", text=text, source="10-K.pdf", page=116, doc_sha="a" * 64, index=0)
    assert engine.grade(question, [chunk])[0].relevant


def test_a_model_named_by_its_size_alone() -> None:
    engine = engine_over("Self-RAG 13B and 7B results", "Llama2 7B and 13B")
    got = ask(engine, "In the Self-RAG paper's main results table, what TriviaQA accuracy does Self-RAG 13B "
                      "achieve?", "And the 7B version?")
    assert got[1] == ("In the Self-RAG paper's main results table, what TriviaQA accuracy does Self-RAG 7B "
                      "achieve?")
    got = ask(engine, "What does Llama2-13B score on PopQA?", "And the 7B model?")
    assert got[1] == "What does Llama2-7B score on PopQA?"


def test_a_group_on_the_other_side_of_income_taxes_is_not_asked() -> None:
    groups = ["Revenues", "Earnings (loss) before income taxes"]
    assert asked_group(groups, "What after-tax earnings did the non-controlled businesses add?") is None
    assert asked_group(groups, "What pre-tax earnings did the non-controlled businesses report?") == 1
    assert asked_group(groups, "What earnings before income taxes did BNSF report in 2024?") == 1
