"""Round 23 (issue 19): a page's running head is no section; tables of amounts and of counts are read.

Chosen on the odd-numbered retrace-dev sets, reported on the even-numbered ones (README, "Round 23").
"""

from __future__ import annotations

from rag.config import preset_options
from rag.engines.benchmarks import benchmark_cells, count_cells, count_row
from rag.engines.cited import EXTRACTIVE_LABEL, printed_lead
from rag.graph import routing
from rag.graph.evidence import last_heading, page_top, running_heads, starts_in_table, with_sections
from rag.models import FINALIZE, FINALIZE_WITH_CAVEAT, Chunk
from tests.unit.conversation import ask, engine_over

TOP = ("K-{page}\nManagement’s Discussion and Analysis\nCritical Accounting Estimates\n"
       "Property and casualty insurance unpaid losses\n")
GEICO_TOP = TOP.format(page=57) + "GEICO\nGEICO predominantly writes private passenger automobile insurance."
BHRG_OPENS = ("liabilities, with a corresponding decrease or increase in pre-tax earnings.\n"
              "Berkshire Hathaway Reinsurance Group\nBHRG’s property and casualty claims arise from a "
              "diverse portfolio of reinsurance contracts.\nProperty Casualty Total\n"
              "Case liabilities $ 7,563 $ 11,675 $ 19,238\nIBNR liabilities 9,007 23,391 32,398")
BHRG_TOP = TOP.format(page=58) + "The loss information provided under facultative contracts is comparable."
BHRG_LATER = ("While we generally rely on the ceding companies’ reported case loss estimates, we may perform "
              "our own evaluations. As of December 31, 2024, our case loss estimates exceeded ceding company "
              "estimates by approximately $1.7 billion.")


class _Store:
    """A knowledge base's ``get_chunks`` over fixed chunks (what with_sections reads)."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = {c.id: c for c in chunks}

    def get_chunks(self, ids):
        return [self.chunks[i] for i in ids if i in self.chunks]


def _chunk(index: int, text: str) -> Chunk:
    return Chunk(id=f"a23ec32b25f08fa8-{index:05d}", text=text, source="brk.pdf", page=59, index=index,
                 doc_sha="a23ec32b25f08fa8" + "0" * 48)


def test_the_headings_atop_a_page_are_read_apart():
    assert page_top(BHRG_TOP) == ["Management’s Discussion and Analysis", "Critical Accounting Estimates",
                                  "Property and casualty insurance unpaid losses"]
    assert page_top(GEICO_TOP)[-1] == "GEICO"
    assert page_top(BHRG_LATER) == []  # no page label first
    # a heading atop two pages is the part's running head; one atop a single page opens a section
    assert running_heads([GEICO_TOP, BHRG_TOP]) == {"Management’s Discussion and Analysis",
                                                    "Critical Accounting Estimates",
                                                    "Property and casualty insurance unpaid losses"}
    assert last_heading(BHRG_TOP, running_heads([GEICO_TOP, BHRG_TOP])) == ""
    assert last_heading(BHRG_TOP) == "Property and casualty insurance unpaid losses"


def test_a_section_runs_on_under_the_next_pages_running_head():
    chunks = [_chunk(342, GEICO_TOP), _chunk(344, BHRG_OPENS), _chunk(345, BHRG_TOP), _chunk(346, BHRG_LATER)]
    got = {c.id[-3:]: c.section for c in with_sections(_Store(chunks), chunks)}
    # the $1.7 billion is BHRG's, though the page it is on opens with the part's running head
    assert got["346"] == "Berkshire Hathaway Reinsurance Group"
    assert got["345"] == "Berkshire Hathaway Reinsurance Group"
    # without the page before, the running head cannot be told from a section: it stands
    alone = [_chunk(345, BHRG_TOP), _chunk(346, BHRG_LATER)]
    assert with_sections(_Store(alone), alone)[1].section == "Property and casualty insurance unpaid losses"


def test_a_column_header_over_a_row_of_amounts_is_no_heading():
    assert last_heading(BHRG_OPENS) == "Berkshire Hathaway Reinsurance Group"


def test_a_table_of_amounts_with_named_columns():
    question = ("In Berkshire Hathaway's 2024 10-K, how large were the reinsurance group's case liabilities "
                "for property at year-end 2024, in millions?")
    assert benchmark_cells(BHRG_OPENS, question)[0][0] == "Case liabilities, property: 7,563"
    question = question.replace("case liabilities for property", "IBNR liabilities for casualty")
    assert benchmark_cells(BHRG_OPENS, question)[0][0] == "IBNR liabilities, casualty: 23,391"


def test_a_financial_statements_lines_are_no_cells():
    # the statement's caption and its groups ("Insurance and Other:") name no column; its columns are years
    sheet = ("Schedule I\nBalance Sheets\nDecember 31,\n2024 2023\nAssets:\n"
             "Cash and cash equivalents $ 6,337 $ 5,566\n"
             "Investment in The Kraft Heinz Company and other assets 13,417 13,246")
    assert benchmark_cells(sheet, "How much goodwill does Kraft Heinz report on its own balance sheet?") == []
    grouped = ("As previously\nreported Reclassification As reclassified\nAssets:\nInsurance and Other:\n"
               "Cash and cash equivalents $ 33,672 $ 596 $ 34,268\nOther receivables 44,174 2,087 46,261")
    assert benchmark_cells(grouped, "What cash did the insurance and other businesses hold?") == []


GENERATOR_DATA = ("Dataset name category Data source the number of instances\n"
                  "GPT-4 Alpaca Instruction-following Open-Instruct 26,168\n"
                  "Stanford Alpaca Instruction-following Open-Instruct 25,153\n"
                  "FLAN-V2 Instruction-following Open-Instruct 17,817\n"
                  "Open Assistant 1 Instruction-following Open-Instruct 9,464\n"
                  "ASQA Knowledge-intensive ASQA 3,897\n"
                  "Table 3: The generator LM M training data statistics.")


def test_a_one_column_table_of_counts():
    alpaca = "How many GPT-4 Alpaca instances are in the generator LM's training data?"
    cells = count_cells(GENERATOR_DATA, alpaca)
    assert cells[0][0] == "GPT-4 Alpaca Instruction-following Open-Instruct, number of instances: 26,168"
    assistant = "How many Open Assistant 1 instances are in the Self-RAG generator's training data?"
    assert count_cells(GENERATOR_DATA, assistant)[0][0].endswith(": 9,464")
    # benchmark_cells reads them too, after the tables of several columns
    assert benchmark_cells(GENERATOR_DATA, "And how many ASQA instances?")[0][0].endswith(": 3,897")


def test_a_count_is_read_only_for_the_row_the_question_puts_before_its_noun():
    # "instances" follows "many", not a row's name: GPT-4 is the one who judged, not a dataset of the table
    assert count_cells(GENERATOR_DATA, "In the Self-RAG paper, how many instances per aspect did the authors "
                                       "check by hand against GPT-4's reflection-token predictions?") == []
    # a question about another noun, or not about a number, reads no count
    assert count_cells(GENERATOR_DATA, "How many GPT-4 Alpaca examples were filtered out?") == []
    assert count_cells(GENERATOR_DATA, "Which source do the GPT-4 Alpaca instances come from?") == []
    # two rows are prose, not a table
    two = "\n".join(GENERATOR_DATA.splitlines()[:3])
    assert count_cells(two, "How many GPT-4 Alpaca instances are in the generator LM's training data?") == []


def test_a_count_row_is_one_figure_after_a_name():
    assert count_row("Stanford Alpaca Instruction-following Open-Instruct 25,153")
    assert starts_in_table("Stanford Alpaca Instruction-following Open-Instruct 25,153\nFLAN-V2 x 17,817")
    assert not count_row("Natural Questions 79,168 58,880 8,757 3,610")  # several figures run together
    assert not count_row("we collected 11,181")  # a line of prose
    assert not count_row("Item 7. Management's Discussion 25")  # a contents line's page


def test_a_lead_printed_as_a_tables_line_is_answered_with_a_caveat():
    printed = f"{EXTRACTIVE_LABEL}\nRevenues $ 46,891 $ 51,739 $ 56,756 [1]"
    assert printed_lead(printed)
    assert printed_lead(f"{EXTRACTIVE_LABEL}\nDefined benefit pension plans 1,628 578 (253 ) [2]")
    # an assembled row says which column each figure is, and a sentence of several figures says so too
    assert not printed_lead(f"{EXTRACTIVE_LABEL}\nRevenues (Pilot), 2024: $46,891 (2023: $51,739) [1]")
    assert not printed_lead(f"{EXTRACTIVE_LABEL}\nAggregate provisions were $469 million in 2024, $513 "
                            f"million in 2023. [1]")
    assert not printed_lead("Revenues were 46,891 and 51,739 million.")  # no offline answer
    why = "the answer addresses the question"
    decision = routing._finish({"answer": printed}, preset_options("full"), why)
    assert decision.to == FINALIZE_WITH_CAVEAT and "as printed" in decision.why
    assert routing._finish({"answer": f"{EXTRACTIVE_LABEL}\nRevenues (Pilot), 2024: $46,891 [1]"},
                           preset_options("full"), why).to == FINALIZE
    # Naive RAG checks nothing: it commits what it generated
    assert routing._finish({"answer": printed}, preset_options("naive"), "no checks are on").to == FINALIZE


def test_the_paper_a_question_names_by_its_authors_is_no_row():
    dataset_table = ("Task Train Development Test\nCuratedTrec 635 134 635\n"
                     "Jeopardy Question Generation 97392 13714 26849")
    question = ("In Lewis et al.'s retrieval-augmented generation paper, what test exact match does "
                "RAG-Sequence get on CuratedTrec?")
    # "generation" is a word of the paper's title, not the row "Jeopardy Question Generation"
    assert [c for c, _ in benchmark_cells(dataset_table, question)] == ["CuratedTrec, test: 635"]


def test_an_ellipsis_that_names_its_own_owner_is_asked_under_the_previous_frame():
    engine = engine_over("Single DPR 63.2 Multi DPR 51.6", "McLane's grocery revenue was $31,841 million.")
    first = ("In the retrieval accuracy table, what top-100 accuracy does DPR trained on multiple datasets "
             "reach on CuratedTREC?")
    [_, standalone] = ask(engine, first, "And single-dataset DPR's top-20 accuracy on SQuAD?")
    # before: "What about single-dataset DPR's top-20 accuracy on SQuAD of CuratedTREC?"
    assert standalone == ("In the retrieval accuracy table, what is single-dataset DPR's top-20 accuracy "
                          "on SQuAD?")
    first = ("In Berkshire Hathaway's 2024 10-K, how much customer contract revenue came from auto sales in "
             "2024, in millions?")
    follow = "How about McLane's grocery and convenience store distribution revenue that year?"
    [_, standalone] = ask(engine, first, follow)
    assert standalone == ("In Berkshire Hathaway's 2024 10-K, what was McLane's grocery and convenience "
                          "store distribution revenue in 2024?")
