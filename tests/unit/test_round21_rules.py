"""Round 21 (issue 19): a table's rows are read with what its caption says the table is about.

Chosen on the odd-numbered retrace-dev sets, reported on the even-numbered ones (README, "Round 21").
"""

from __future__ import annotations

from rag.answer_spans import holds
from rag.engines.benchmarks import benchmark_cells
from rag.engines.captions import read_caption
from rag.engines.tables import label_share, table_rows
from rag.text import terms

ALLOWANCE = ("Reconciliations of the allowance for credit losses on loans and finance receivables for each "
             "of the three\nyears ending December 31, 2024 follow (in millions).\n") + """2024 2023 2022
Balance at the beginning of the year $ 950 $ 856 $ 765
Provision for credit losses 298 169 124
Charge-offs, net of recoveries (275) (75) (33)
Balance at December 31 $ 973 $ 950 $ 856"""

LEASES = """Depreciation expense for equipment held for lease was $1,429 million in 2024 and $1,209 million
in 2022. Operating lease revenues for each of the three years ending December 31, 2024 are summarized below
(in millions).
2024 2023 2022
Fixed lease revenue $ 6,456 $ 5,902 $ 5,184
Variable lease revenue 2,771 2,514 2,330
$ 9,227 $ 8,416 $ 7,514
A summary of future operating lease receipts as of December 31, 2024 follows (in millions)."""


def test_a_caption_names_what_its_table_is_about_but_not_whose_it_is():
    line = ("Reconciliations of the allowance for credit losses on loans and finance receivables for each of "
            "the three years ending December 31, 2024 follow (in millions).")
    assert read_caption(line, "", "") == ("", "allowance for credit losses on loans and finance receivables")
    assert read_caption("Operating lease revenues for each of the three years ending December 31, 2024 are "
                        "summarized below (in millions).", "", "") == ("", "operating lease revenues")
    # whose table it is stays the owner, as before: no topic is read from it
    assert read_caption("A summary of BNSF’s earnings follows (dollars in millions).", "", "") == ("BNSF", "")
    # prose that announces no table names nothing
    assert read_caption("Loans are considered delinquent when payments are more than 30 days past due.",
                        "", "") == ("", "")


def test_rows_carry_their_tables_topic_so_the_question_words_it_holds_count_for_the_label():
    question = ("In Berkshire Hathaway's 2024 10-K, how much did the company provide for credit losses on "
                "its loans and finance receivables in 2024, in millions?")
    rows = [text for text, _ in table_rows(ALLOWANCE, question)]
    assert rows[1] == ("Provision for credit losses (allowance for credit losses on loans and finance "
                       "receivables), 2024: 298 million (2023: 169 million; 2022: 124 million)")
    assert all("(allowance for credit losses on loans and finance receivables)" in r for r in rows)


def test_the_scale_a_question_asks_in_is_not_asked_of_a_row_label():
    asked = {t: 1.0 for t in terms("credit losses millions")}
    # "in millions" is the table's scale, which the row's cells carry
    assert label_share("Provision for credit losses, 2024: 298 million", asked) == 1.0
    assert label_share("Provision for credit losses, 2024: 298", {**asked, "provis": 1.0}) == 1.0
    assert label_share("Charge-offs, 2024: (275) million", asked) == 0.0


def test_unlabelled_figures_under_a_captioned_tables_rows_are_its_total():
    question = "On Berkshire's 2024 consolidated statement of earnings, how much were leasing revenues?"
    rows = [text for text, _ in table_rows(LEASES, question)]
    assert rows[-1] == ("Total operating lease revenues, 2024: $9,227 million "
                        "(2023: $8,416 million; 2022: $7,514 million)")
    assert len(rows) == 3
    # without a caption that names the table's topic, figures without a label stay unread
    bare = LEASES.replace("Operating lease revenues for each of the three years ending December 31, 2024 are "
                          "summarized below\n(in millions).", "Leases (in millions).")
    assert [text for text, _ in table_rows(bare, question)][-1].startswith("Variable lease revenue, 2024")


def test_a_notes_number_at_the_start_of_a_passage_is_no_figure():
    question = "What was accumulated other comprehensive income attributable to Berkshire shareholders?"
    heading = ("(25) Accumulated other comprehensive income A summary of the net changes in after-tax "
               "accumulated other comprehensive income attributable to Berkshire shareholders follows.")
    assert holds(heading, "number", question) is None
    assert holds("(25) million of accumulated other comprehensive income was reclassified.", "number",
                 question) == "(25) million"


PLAN_ASSETS = """Reconciliations of the changes in plan assets and PBOs for each of the two years ending
December 31, 2024 follow (in millions).
2024 2023
Plan assets
Balance at the beginning of the year $ 13,379 $ 12,592
Benefits paid (810) (852)
Settlements paid (354) (448)
Actual return on plan assets 1,909 1,783
Balance at the end of the year $ 14,180 $ 13,379"""


def test_bracketed_figures_are_negative_amounts_not_a_results_tables_units():
    question = "How large were the defined benefit pension plan assets at the end of 2024?"
    # before, "(354) (448)" was read as a line of units and "Actual return on plan assets, benefit
    # (Benefits, 354): 1,909" came out as a results table's cell
    assert benchmark_cells(PLAN_ASSETS, question) == []
    units = "Model NQ TQA\nLM (acc) (em)\nRAG 44.5 56.8"
    assert benchmark_cells(units, "What NQ accuracy does RAG get?")
    rows = [text for text, _ in table_rows(PLAN_ASSETS, question)]
    end = "Balance at the end of the year (plan assets), 2024: $14,180 million (2023: $13,379 million)"
    assert end in rows


def test_a_change_marked_not_meaningful_leaves_its_row_readable():
    text = """A summary of net earnings attributable to BHE follows (dollars in millions).
Percentage Change
2024 2023 2022 2024 vs 2023 2023 vs 2022
Natural gas pipelines 1,232 1,079 1,040 14.2 3.8
Real estate brokerage (107 ) 13 100 ** (87.0 )
** Not meaningful."""
    question = "What did real estate brokerage contribute to BHE's net earnings in 2024, in millions?"
    rows = [r for r, _ in table_rows(text, question)]
    assert "Real estate brokerage, 2024: (107) million (2023: 13 million; 2022: 100 million)" in rows
    assert len(rows) == 2
