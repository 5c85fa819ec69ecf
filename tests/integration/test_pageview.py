"""The cited passage on its page: spans stored at ingest, the PDF kept, the chunk's characters highlighted.

Real Chroma in a temp dir, real papers from ../shared/data, PDFium's own character boxes as the reference.
"""

from __future__ import annotations

import hashlib
import io
import json

import pypdfium2 as pdfium
import pytest
from PIL import Image

from rag.ingest.pageview import PageView, PassageUnavailable, TextView, open_passage, render_page
from rag.ingest.pipeline import ingest_files
from rag.store import sources
from tests.conftest import LEWIS, TRICKY


def _inside(x: float, y: float, boxes) -> bool:
    return any(left - 1 <= x <= right + 1 and top - 1 <= y <= bottom + 1
               for left, top, right, bottom in boxes)


def _char_centres(pdf_bytes: bytes, page: int, start: int, end: int,
                  scale: float) -> list[tuple[float, float]]:
    """Pixel centres (top-left origin) of PDFium's boxes of the text indices ``start:end`` of a page."""
    pdf = pdfium.PdfDocument(pdf_bytes)
    try:
        pg = pdf[page - 1]
        height = pg.get_height()
        tp = pg.get_textpage()
        centres = []
        for t in range(start, end):
            c = pdfium.raw.FPDFText_GetCharIndexFromTextIndex(tp, t)
            ch = tp.get_text_range(c, 1)
            if c < 0 or not ch.strip():
                continue
            left, bottom, right, top = tp.get_charbox(c)
            if right - left <= 0 or top - bottom <= 0:
                continue
            centres.append(((left + right) / 2 * scale, (height - (bottom + top) / 2) * scale))
        return centres
    finally:
        pdf.close()


def test_a_cited_chunk_is_highlighted_over_its_own_characters(kb) -> None:
    reports = ingest_files(kb, [LEWIS], workers=1)
    assert reports[0].status == "ingested"
    data = LEWIS.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    kept = sources.find(kb.data_dir, kb.name, sha)
    assert kept is not None and kept.read_bytes() == data  # the original is kept, content-addressed

    chunks = kb.document_chunks(sha)
    chunk = next(c for c in chunks if c.page == 3 and len(c.text) > 600)
    row = kb.collection.get(ids=[chunk.id], include=["metadatas"])["metadatas"][0]
    view = open_passage(kb, chunk.id)
    assert isinstance(view, PageView) and view.page == 3 and view.boxes and not view.note
    image = Image.open(io.BytesIO(view.png))
    assert image.size == (view.width, view.height)

    scale = view.height / 792.0  # US Letter, portrait: the height is the longer side
    mine = _char_centres(data, 3, row["pdf_start"], row["pdf_end"], scale)
    assert len(mine) > 400
    covered = sum(_inside(x, y, view.boxes) for x, y in mine)
    assert covered == len(mine), f"{len(mine) - covered} of the chunk's characters are not highlighted"

    # Text of the page outside the chunk is mostly not highlighted (boxes are lines, so a little is).
    pdf = pdfium.PdfDocument(data)
    n = pdf[2].get_textpage().count_chars()
    pdf.close()
    others = (_char_centres(data, 3, 0, row["pdf_start"], scale)
              + _char_centres(data, 3, row["pdf_end"], n, scale))
    stray = sum(_inside(x, y, view.boxes) for x, y in others)
    assert others and stray < 0.1 * len(others)

    # The highlight is drawn: a box's pixels are tinted compared with the plain page.
    plain = Image.open(io.BytesIO(render_page(kept, 3, ocr_boxes=None, text="").png)).convert("RGB")
    left, top, right, bottom = view.boxes[0]
    x, y = (left + right) // 2, top + 1
    assert plain.getpixel((x, y)) != image.convert("RGB").getpixel((x, y))


def test_an_ocr_chunk_has_line_boxes_and_says_ocr(kb, settings) -> None:
    scan = TRICKY / "ocrmypdf__c02-22.pdf"
    [report] = ingest_files(kb, [scan], workers=1)
    assert report.status == "ingested" and report.ocr_pages == 1
    chunk = kb.document_chunks(report.doc_sha)[0]
    meta = kb.collection.get(ids=[chunk.id], include=["metadatas"])["metadatas"][0]
    assert meta["ocr"] is True and chunk.ocr
    boxes = json.loads(meta["ocr_boxes"])
    assert boxes and all(0 <= b[0] < b[2] <= 1 and 0 <= b[1] < b[3] <= 1 for b in boxes)
    view = open_passage(kb, chunk.id)
    assert isinstance(view, PageView) and view.ocr and len(view.boxes) == len(boxes)

    # Asked about, the scan is cited as "(OCR)" in the run and in its trace's generate step.
    from rag.config import Options
    from rag.run import make_context, run_question
    from rag.trace import views

    run = run_question("What is at the end of the widow's garden?", make_context(settings, kb), Options())
    assert run.citations and all(c.ocr and c.label().endswith("p.1 (OCR)") for c in run.citations)
    generate = next(e for e in run.events if e.node == "generate")
    items = views.view("generate").items(generate.detail)
    assert items and all(item.endswith(f"{scan.name} p.1 (OCR)") for item in items)


def test_text_files_show_the_chunk_between_its_neighbours(kb, tmp_path) -> None:
    words = " ".join(f"word{i}" for i in range(900))
    path = tmp_path / "notes.md"
    path.write_text(f"# Notes\n\n{words}\n", encoding="utf-8")
    [report] = ingest_files(kb, [path], workers=1)
    chunks = kb.document_chunks(report.doc_sha)
    assert len(chunks) >= 5
    middle = chunks[2]
    view = open_passage(kb, middle.id)
    assert isinstance(view, TextView) and view.passage == middle.text
    assert chunks[1].text[:30] in view.before and chunks[3].text[-30:] in view.after
    page = (view.before + view.passage + view.after).split()
    assert page == sorted(page, key=lambda w: int(w[4:]) if w.startswith("word") and w[4:].isdigit() else -1)
    assert sources.find(kb.data_dir, kb.name, report.doc_sha) is None  # only PDFs are kept


def test_deleting_a_document_forgets_its_file_and_a_gone_chunk_says_so(kb) -> None:
    [report] = ingest_files(kb, [LEWIS], workers=1)
    chunk = kb.document_chunks(report.doc_sha)[0]
    assert sources.find(kb.data_dir, kb.name, report.doc_sha)
    kb.delete_document(report.doc_sha)
    assert sources.forget(kb.data_dir, kb.name, report.doc_sha)
    assert sources.find(kb.data_dir, kb.name, report.doc_sha) is None
    with pytest.raises(PassageUnavailable, match="no longer in the knowledge base"):
        open_passage(kb, chunk.id)


def test_source_paths_stay_in_their_folder(tmp_path) -> None:
    with pytest.raises(ValueError):
        sources.source_path(tmp_path, "../x", "a" * 64)
    with pytest.raises(ValueError):
        sources.source_path(tmp_path, "kb", "../../etc/passwd")


def test_ocr_citations_say_so_in_labels_and_exports() -> None:
    from rag.config import Options
    from rag.models import Citation, Run
    from rag.trace.export import run_html

    scan = Citation(n=1, chunk_id="a-00000", source="scan.pdf", page=2, text="the widow's garden", ocr=True)
    text = Citation(n=2, chunk_id="b-00000", source="paper.pdf", page=3, text="retrieval")
    assert scan.label() == "scan.pdf p.2 (OCR)" and text.label() == "paper.pdf p.3"
    run = Run(question="q", options=Options(), engine="local", answer="a [1] [2]", citations=[scan, text])
    page = run_html(run)
    assert "scan.pdf p.2 (OCR)" in page and "paper.pdf p.3 (OCR)" not in page


def test_reingesting_keeps_a_missing_original_and_an_encrypted_pdf_says_why(kb) -> None:
    [first] = ingest_files(kb, [LEWIS], workers=1)
    kept = sources.find(kb.data_dir, kb.name, first.doc_sha)
    assert kept is not None
    kept.unlink()  # as for a document indexed before originals were kept
    [again] = ingest_files(kb, [LEWIS], workers=1)
    assert again.status == "already indexed" and sources.find(kb.data_dir, kb.name, first.doc_sha)
    assert not list(kept.parent.glob(".tmp-*"))  # no temporary file left behind

    encrypted = TRICKY / "pypdf__encryption__r4-aes-user-password.pdf"
    [report] = ingest_files(kb, [encrypted], password="asdfzxcv", workers=1)
    assert report.status == "ingested"
    chunk = kb.document_chunks(report.doc_sha)[0]
    with pytest.raises(PassageUnavailable, match="the PDF is encrypted, and Retrace keeps no password"):
        open_passage(kb, chunk.id)


def test_worker_processes_store_the_same_positions(kb) -> None:
    """PDFs prepared in worker processes (a batch over 32 pages) carry their spans and offsets too."""
    from rag.ingest.chunking import chunk_document
    from rag.ingest.loaders import load_document
    from tests.conftest import SELF_RAG

    reports = ingest_files(kb, [LEWIS, SELF_RAG], workers=2)
    assert [r.status for r in reports] == ["ingested", "ingested"]
    for path, report in zip([LEWIS, SELF_RAG], reports, strict=True):
        expected = chunk_document(load_document(path.name, path.read_bytes()), doc_sha=report.doc_sha)
        got = kb.collection.get(where={"doc_sha": report.doc_sha}, include=["metadatas"])
        stored = {m["chunk_index"]: m for m in got["metadatas"]}
        for c in expected:
            for k in ("span_start", "span_end", "pdf_start", "pdf_end"):
                assert stored[c.index][k] == c.metadata[k]
