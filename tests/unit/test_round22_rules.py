"""Round 22 (issue 19): a topic-shift frame says where a question goes, not what it asks.

Chosen on the odd-numbered retrace-dev sets, reported on the even-numbered ones (README, "Round 22").
"""

from __future__ import annotations

from rag.answer_types import cue_words, search_query
from rag.engines.checks import TABLE_ROW
from rag.engines.tables import label_share, table_rows
from rag.text import frame_words, terms


def test_a_topic_shift_frame_is_read_as_no_word_of_the_question():
    assert frame_words("Switching to the REALM paper: how many parameters does ORQA have?") == {"switching"}
    assert frame_words("OK, switching to Berkshire Hathaway's 2024 10-K: which state's insurance "
                       "department is the lead regulator?") == {"ok", "switching"}
    assert frame_words("Back to Berkshire: how much did the parent company pay in income taxes?") == {"back"}
    assert frame_words("Going back to the DPR paper: what is its batch size?") == {"going", "back"}
    assert frame_words("Moving on to flooring: what share of its carpet yarn did Shaw process?") == {"moving"}
    # the topic it names stays a word of the question
    assert frame_words("Different paper: in the DPR paper, how long did indexing take?") == {"different"}


def test_words_that_are_the_question_itself_are_no_frame():
    assert frame_words("Who is switching to BNSF's new terminal?") == frozenset()
    assert frame_words("What were the switching costs in 2024?") == frozenset()
    assert frame_words("How far back does the 10-K's segment data go?") == frozenset()
    assert frame_words("Now PacifiCorp's wildfire litigation: what did the complaint claim?") == frozenset()


def test_the_frame_is_neither_weighted_nor_searched_for():
    question = "Switching to the Lewis et al. RAG paper: what is the dimensionality of its document vectors?"
    assert "switching" in cue_words(question)
    assert "Switching" not in search_query(question)
    assert "Lewis et al. RAG paper" in search_query(question)
    # a question that is about a person keeps the frame out too
    assert "back" in cue_words("Back to the 10-K: who is its chief financial officer?")


SCHEDULE = """Operating lease revenues are summarized below.
$ 9,227 $ 8,416 $ 7,514
A summary of future operating lease receipts as of December 31, 2024 follows (in millions).
2025 2026 2027 2028 2029 Thereafter Total
$ 4,263 $ 3,455 $ 2,596 $ 1,724 $ 769 $ 339 $ 13,146
(12) Leases"""


def test_a_schedules_columns_of_later_years_and_its_total_are_read():
    rows = [text for text, _ in table_rows(SCHEDULE, "What total future operating lease receipts did "
                                                     "Berkshire expect as of the end of 2024, in millions?")]
    # the one unlabelled row under the header is the caption's topic; "total" asks for the Total column
    assert rows == ["Future operating lease receipts, Total: $13,146 million (2025: $4,263 million; 2026: "
                    "$3,455 million; 2027: $2,596 million; 2028: $1,724 million; 2029: $769 million; "
                    "Thereafter: $339 million)"]
    by_year = table_rows(SCHEDULE, "What lease receipts does Berkshire expect in 2026, in millions?")
    assert by_year[0][0].startswith("Future operating lease receipts, 2026: $3,455 million (2025: ")
    # the row's figures are its label's: the answer check reads it as an assembled table row
    assert TABLE_ROW.match(rows[0])
    asked = {t: 1.0 for t in terms("total future operating lease receipts")}
    assert label_share(rows[0], asked) == 1.0


def test_a_labelled_row_under_a_header_ending_in_prior_and_total_is_read():
    text = ("Loans by origination year (in millions).\n2024 2023 2022 2021 2020 Prior Total\n"
            "Performing $ 6,578 $ 4,969 $ 3,651 $ 3,052 $ 2,358 $ 8,172 $ 28,780")
    rows = table_rows(text, "What were performing loans in total, in millions?")
    assert rows[0][0].startswith("Performing, Total: $28,780 million (2024: $6,578 million;")
    assert "Prior: $8,172 million" in rows[0][0]
