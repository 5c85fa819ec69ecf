"""Round 23: the 10-K's sections under running heads, its tables of amounts, and a paper's table of counts.

On the real pages of the BRK 10-K and the Self-RAG paper, ingested as a user would.
"""

from __future__ import annotations

import pypdfium2 as pdfium

from rag.config import preset_options
from rag.engines.benchmarks import count_cells
from rag.graph.evidence import with_sections
from rag.run import make_context, run_question
from tests.conftest import PAPERS
from tests.integration.test_self_correction import brk_kb, four_papers_kb  # noqa: F401  (session fixtures)

IBNR = ("In Berkshire Hathaway's 2024 10-K, how large were the reinsurance group's IBNR liabilities for "
        "casualty at year-end 2024, in millions?")
ALPACA = "How many GPT-4 Alpaca instances are in the generator LM's training data?"


def test_a_chunk_under_a_pages_running_head_keeps_its_sections_heading(brk_kb) -> None:  # noqa: F811
    chunks = brk_kb.document_chunks(brk_kb.documents()[0].doc_sha)
    said = "exceeded ceding company estimates by approximately $1.7 billion"
    [chunk] = [c for c in chunks if said in c.text and c.text.startswith("Disputes")]
    [read] = with_sections(brk_kb, [chunk])
    # page 60 opens with "Management’s Discussion and Analysis / … / Property and casualty insurance unpaid
    # losses", as every page of the part does; the section the chunk is in began on page 59
    assert read.section == "Berkshire Hathaway Reinsurance Group"


def test_full_reads_a_table_of_amounts_by_its_named_column(brk_kb) -> None:  # noqa: F811
    run = run_question(IBNR, make_context(brk_kb.settings, brk_kb), preset_options("full"))
    assert run.path[-1] == "finalize", run.stop_reason
    assert "IBNR liabilities, casualty: 23,391" in run.answer.splitlines()[1], run.answer


def test_the_generator_data_table_of_counts_on_its_page() -> None:
    doc = pdfium.PdfDocument(PAPERS / "2310.11511v1_self_rag.pdf")
    try:
        page = doc[17].get_textpage().get_text_range().replace("\r", "")
    finally:
        doc.close()
    assert count_cells(page, ALPACA)[0][0].endswith("number of instances: 26,168")
    arc = "How many Arc-Easy instances went into the generator LM's training data?"
    assert count_cells(page, arc)[0][0].endswith(": 2,147")


def test_full_answers_a_count_from_a_table_cut_over_two_chunks(four_papers_kb) -> None:  # noqa: F811
    run = run_question(ALPACA, make_context(four_papers_kb.settings, four_papers_kb), preset_options("full"))
    assert "26,168" in run.answer.splitlines()[1], run.answer
    assert run.path[-1] == "finalize", run.stop_reason
