"""Round 12: a results table's cell at the row and the column a question names, on the papers' real pages.

The four layouts of the four classic papers (a header and group captions, a header over two lines of groups,
a line of units, a header split by the PDF over lines of notes), and Full's correction that reads rows whose
header chunking cut off into the chunk before, which naive RAG's one generate does not.
"""

from __future__ import annotations

import pypdfium2 as pdfium
import pytest

from rag.config import preset_options
from rag.engines.benchmarks import benchmark_cells, names_column
from rag.graph.evidence import with_table_headers
from rag.run import make_context, run_question
from tests.conftest import PAPERS
from tests.integration.test_self_correction import four_papers_kb  # noqa: F401  (a session fixture)

LEWIS = "2005.11401v4_lewis_rag.pdf"
SELF_RAG = "2310.11511v1_self_rag.pdf"
DPR = "2004.04906v3_dense_passage_retrieval.pdf"
REALM = "2002.08909v1_realm.pdf"
MULTIHOP = "2401.15391v1_multihop_rag_benchmark.pdf"


def _page(name: str, page: int) -> str:
    doc = pdfium.PdfDocument(PAPERS / name)
    try:
        return doc[page - 1].get_textpage().get_text_range().replace("\r", "")
    finally:
        doc.close()


@pytest.mark.parametrize(("name", "page", "question", "cell"), [
    # a header, then group captions between it and its rows ("Closed" / "Book"); "CT": CuratedTrec's initials
    (LEWIS, 6, "What test exact match does RAG-Sequence get on CuratedTrec?",
     "RAG-Seq., CuratedTrec (CT): 52.2"),
    (LEWIS, 6, "What test exact match does RAG-Sequence get on WebQuestions?",
     "RAG-Seq., WebQuestions (WQ): 45.2"),
    (LEWIS, 6, "What exact match does RAG-Sequence get on Natural Questions?",
     "RAG-Seq., Natural Questions (NQ): 44.5"),
    # a line of units: one column a unit, the last name the rest ("ASQA" spans five)
    (SELF_RAG, 8, "What accuracy does Self-RAG 13B reach on ARC-Challenge?",
     "Our SELF-RAG 13B, ARC-Challenge (ARC, acc): 73.1"),
    (SELF_RAG, 8, "What accuracy does the 7B model reach on ARC-Challenge?",
     "Our SELF-RAG 7B, ARC-Challenge (ARC, acc): 67.3"),
    # two groups of the same datasets ("Top-20 Top-100"): the first, which the question names
    (DPR, 5, "What top-20 retrieval accuracy does DPR trained on a single dataset reach on TriviaQA?",
     "Single DPR, TriviaQA (Top-20): 79.4"),
    # a header the PDF split over lines of notes ("(79k/4k)"); "# params" answers "parameters"
    (REALM, 7, "How many parameters does T5 (large) have according to the Open-QA results table?",
     "T5 (large) (Roberts et al., 2020) Transformer Seq2Seq T5 (Multitask), parameters (# params): 738m"),
    # round 24: rows of the same name under group captions, the group a caption line or a block's first word
    (SELF_RAG, 8, "What PopQA accuracy does Alpaca 13B get without retrieval?",
     "Alpaca13B (under Baselines without retrieval), PopQA (acc): 24.4"),
    (SELF_RAG, 8, "What PopQA accuracy does Alpaca13B get with retrieval?",
     "Alpaca13B (under Baselines with retrieval), PopQA (acc): 46.1"),
    (DPR, 8, "What end-to-end exact match does BM25+DPR trained on a single dataset reach on SQuAD?",
     "BM25+DPR (under Single), SQuAD: 36.7"),
    (DPR, 8, "What end-to-end exact match does BM25+DPR trained on multiple datasets reach on CuratedTREC?",
     "BM25+DPR (under Multi), CuratedTREC (TREC): 50.6"),
    # columns named in two words each ("Retrieved Chunk Ground-truth Chunk"), by their first
    (MULTIHOP, 7, "What accuracy did GPT-4 reach when given the ground-truth evidence?",
     "GPT-4, ground-truth (Ground-truth Chunk): 0.89"),
    (MULTIHOP, 7, "What accuracy did GPT-4 reach with retrieved chunks?",
     "GPT-4, retrieved (Retrieved Chunk): 0.56"),
])
def test_the_cell_at_the_named_row_and_column(name, page, question, cell):
    assert benchmark_cells(_page(name, page), question)[0][0] == cell


def test_no_cell_when_two_columns_are_named_or_none_is():
    text = _page(LEWIS, 6)
    assert benchmark_cells(text, "What does RAG-Sequence get on TQA and on CuratedTrec?") == []
    assert benchmark_cells(text, "How fast is RAG-Sequence?") == []  # no column named
    assert benchmark_cells(text, "Who wrote RAG-Sequence?") == []  # not a question about a figure


@pytest.mark.parametrize(("column", "name", "named"), [
    ("CT", "CuratedTrec", True), ("WQ", "WebQuestions", True), ("NQ", "Natural Questions", True),
    ("NQ", "Natural", False), ("ARC", "ARC-Challenge", True), ("# params", "parameters", True),
    ("TQA", "TriviaQA", True), ("Dev", "development", False), ("Top-20", "top-20", True),
    ("Top-20", "Top-100", False),
])
def test_what_a_column_name_stands_for(column, name, named):
    assert names_column(column, name) is named


def test_a_chunk_that_opens_inside_a_table_is_read_with_the_header_before_it(four_papers_kb):  # noqa: F811
    rows = [c for c in four_papers_kb.iter_chunks() if c.text.startswith("Our SELF-RAG 13B 55.8")]
    assert rows, "the Self-RAG paper's table 2 ends at a chunk's start"
    question = "What accuracy does Self-RAG 13B reach on ARC-Challenge?"
    assert benchmark_cells(rows[0].text, question) == []  # no header: which column, its text does not say
    widened = with_table_headers(four_papers_kb, rows)[0]
    assert widened.id == rows[0].id and widened.text.endswith(rows[0].text)
    assert "PopQA TQA Pub ARC Bio ASQA" in widened.text
    assert benchmark_cells(widened.text, question)[0][0] == "Our SELF-RAG 13B, ARC-Challenge (ARC, acc): 73.1"


def test_full_corrects_its_way_to_the_cell_where_naive_rag_does_not(four_papers_kb):  # noqa: F811
    ctx = make_context(four_papers_kb.settings, four_papers_kb)
    question = "What accuracy does Self-RAG 13B reach on ARC-Challenge?"
    naive = run_question(question, ctx, preset_options("naive"))
    full = run_question(question, ctx, preset_options("full"))
    assert "73.1" not in naive.answer
    assert "rewrite_query" in full.path and full.path[-1] == "finalize", full.path
    assert full.answer.splitlines()[1].startswith("Our SELF-RAG 13B, ARC-Challenge (ARC, acc): 73.1")


def test_a_name_whose_stem_stems_again_is_still_found_in_the_knowledge_base(four_papers_kb):  # noqa: F811
    # route_question looked a name up by its stems, which the index stemmed again ("freebas" -> "freeba"), so
    # "Freebase" (and the 10-K's "Occidental") counted as never mentioned and the question went to the web
    from rag.graph.route import _lacking

    ctx = make_context(four_papers_kb.settings, four_papers_kb)
    assert _lacking(four_papers_kb, ctx.engine, "Did Freebase win the Zorblax Prize?") == ["Zorblax Prize"]
