"""Round 13: the 10-K's tables that stack the same rows under several measures, read on its real pages.

"Revenues", then "Pre-tax earnings", then "Pre-tax earnings as a percentage of revenues", each over the same
segment rows: a row is read with the section it stands in, so "the building products group's pre-tax
earnings" is not answered with its revenues. Written after retrace-dev15 and -dev16 were measured on arrival.
"""

from __future__ import annotations

import pypdfium2 as pdfium
import pytest

from rag.config import preset_options
from rag.engines.aliases import definitions, expand
from rag.engines.tables import table_rows
from rag.run import make_context, run_question
from rag.text import terms
from tests.conftest import TRICKY
from tests.integration.test_self_correction import brk_kb, four_papers_kb  # noqa: F401  (session fixtures)

BRK = TRICKY / "darinzRAG__brk_2024_10-k_sec.pdf"


def _page(page: int) -> str:
    doc = pdfium.PdfDocument(BRK)
    try:
        return doc[page - 1].get_textpage().get_text_range().replace("\r", "")
    finally:
        doc.close()


def _rows(page: int, question: str) -> list[str]:
    return [row for row, _ in table_rows(_page(page), question)]


@pytest.mark.parametrize(("page", "question", "row"), [
    # page 48: manufacturing's revenues, pre-tax earnings and margins over the same three rows
    (48, "What were the building products group's pre-tax earnings in 2024, in millions?",
     "Building products (pre-tax earnings), 2024: 4,134 million (2023: 4,187 million; 2022: 4,789 million)"),
    (48, "What were the building products group's revenues in 2024, in millions?",
     "Building products (revenues), 2024: 26,525 million (2023: 25,965 million; 2022: 28,896 million)"),
    # page 52: change columns headed on lines of their own ("2024 vs" / "2023"), and a row that leaves one
    # empty ("Pilot 46,891 51,739 — (9.4)") without ending the section
    (52, "What were McLane's revenues in 2024?",
     "McLane (revenues), 2024: 51,907 million (2023: 52,607 million; 2022: 53,209 million)"),
    (52, "What were McLane's pre-tax earnings in 2024?",
     "McLane (pre-tax earnings), 2024: 634 million (2023: 455 million; 2022: 271 million)"),
])
def test_a_row_is_read_with_the_section_it_stands_in(page, question, row) -> None:
    assert row in _rows(page, question)


def test_a_section_ends_at_its_subtotal_and_per_share_amounts_take_no_scale() -> None:
    rows = _rows(70, "What were Berkshire's net earnings per Class B share in 2024?")
    # "(dollars in millions except per share amounts)": $41.27 a share, not $41.27 million
    assert "Net earnings (loss) per average equivalent Class B share*, 2024: $41.27 (2023: $44.27; " \
           "2022: $(10.33))" in rows
    # "Railroad, Utilities and Energy:" heads its group's rows only, not the statement's last lines
    assert any(r.startswith("Net earnings (loss) attributable to Berkshire shareholders, 2024: $88,995")
               for r in rows)
    assert not any("Berkshire shareholders (railroad" in r for r in rows)


def test_a_full_name_written_out_reads_as_the_short_form_the_document_defines() -> None:
    # page 43 runs its header into the sentence: "Burlington Northern Santa Fe Burlington Northern Santa Fe,
    # LLC (“BNSF”)"; the definition is the words whose initials spell BNSF
    defined = definitions([_page(43)])
    assert defined["bnsf"] == ("burlington", "northern", "santa", "fe")
    # page 44 never writes "BNSF": its running header names the railroad in full
    seq = expand(terms("Burlington Northern Santa Fe Operating revenues from agricultural products"),
                 {"bnsf": defined["bnsf"]})
    assert "bnsf" in seq


@pytest.mark.parametrize(("preset", "question", "gold"), [
    ("naive", "What were the building products group's pre-tax earnings in 2024, in millions?", "4,134"),
    ("full", "What were the building products group's pre-tax earnings in 2024, in millions?", "4,134"),
    # the answer is on a page headed "Burlington Northern Santa Fe" that never writes "BNSF"
    ("full", "What were BNSF's operating revenues from agricultural products in 2024?", "$5.8 billion"),
])
def test_the_answers_lead_on_the_10k(brk_kb, preset, question, gold) -> None:  # noqa: F811
    run = run_question(question, make_context(brk_kb.settings, brk_kb), preset_options(preset))
    assert run.path[-1] == "finalize", run.stop_reason
    assert gold in run.answer.splitlines()[1], run.answer


def test_a_results_tables_cell_is_about_what_its_caption_names(four_papers_kb):  # noqa: F811
    # the cell's row and column are the question's; "Open-QA" is in the table's caption, not in the row
    question = "In the REALM paper's Open-QA results table, what exact match does GraphRetriever get on " \
               "NaturalQuestions?"
    ctx = make_context(four_papers_kb.settings, four_papers_kb)
    run = run_question(question, ctx, preset_options("full"))
    assert run.path[-1] == "finalize", run.stop_reason
    assert run.answer.splitlines()[1].startswith("GraphRetriever (Min et al., 2019b)")
    assert "NaturalQuestions (NQ): 31.8" in run.answer.splitlines()[1]
