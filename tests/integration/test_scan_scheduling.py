"""Scanned PDFs are shared out page by page among the ingest workers, however small the batch.

Real scans from the shared data, real worker processes (PDFium and RapidOCR in them); no timing is asserted
(speed is measured by ``bench ingest --ocr-files``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from rag.ingest import parallel
from rag.ingest.chunking import chunk_document
from rag.ingest.loaders import load_document
from rag.ingest.parallel import PrefetchingLoader
from rag.ingest.pdf import scanned_share

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
TRICKY = SHARED / "tricky-pdfs"
MULTIPAGE = TRICKY / "ocrmypdf__multipage.pdf"  # 6 scanned pages, no text layer
LINN = TRICKY / "ocrmypdf__linn.pdf"  # 1 scanned page
TEXT = TRICKY / "pypdf-sample-files__004-pdflatex-4-pages__pdflatex-4-pages.pdf"  # 4 pages of text


def _share(path: Path) -> float:
    pdf = pdfium.PdfDocument(path.read_bytes())
    try:
        return scanned_share(pdf)
    finally:
        pdf.close()


def test_the_scanned_share_tells_scans_from_text() -> None:
    assert _share(MULTIPAGE) == 1.0
    assert _share(LINN) == 1.0
    assert _share(TEXT) == 0.0
    assert _share(SHARED / "papers" / "2005.11401v4_lewis_rag.pdf") == 0.0  # figures, but text on the page


def _loader(paths: list[Path], **kwargs) -> tuple[PrefetchingLoader, list[tuple[str, bytes]], list[str]]:
    data = [(p.name, p.read_bytes()) for p in paths]
    shas = [hashlib.sha256(d).hexdigest() for _, d in data]
    return PrefetchingLoader(data, lambda name: None, lambda sha: False, workers=2, **kwargs), data, shas


def test_a_small_batch_of_scans_starts_workers_and_splits_them_page_by_page() -> None:
    loader, data, shas = _loader([LINN, MULTIPAGE])
    with loader:
        assert loader.parallel  # 7 pages, under MIN_PARALLEL_PAGES, but all of them scanned
        positions = [loader.position(n, s) for (n, _), s in zip(data, shas, strict=True)]
        assert positions == [1, 0]  # the costliest first
        pending = loader._pending[(MULTIPAGE.name, shas[1])]
        assert len(pending.futures) == -(-6 // parallel.OCR_PAGES_PER_TASK)
        assert loader.streams(MULTIPAGE.name, shas[1])  # 6 ranges: stored range by range
        stream = loader.stream(MULTIPAGE.name, shas[1])
        parts = list(stream.parts())
        doc = stream.document()
    here = load_document(MULTIPAGE.name, data[1][1])
    assert doc == here and doc.ocr_pages == here.ocr_pages and len(doc.ocr_pages) >= 5
    assert [c for part in parts for c in part[0]] == chunk_document(here, doc_sha=shas[1])


@pytest.mark.parametrize("ocr", [False, True])
def test_a_small_batch_of_text_or_with_ocr_off_stays_in_this_process(ocr: bool) -> None:
    paths = [TEXT] if ocr else [LINN, MULTIPAGE]
    loader, _, _ = _loader(paths, ocr=ocr)
    with loader:
        assert not loader.parallel


def test_only_the_first_files_of_a_batch_are_estimated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "SCAN_ESTIMATES", 1)
    loader, _, _ = _loader([LINN, MULTIPAGE])  # LINN estimated (1 scanned page), MULTIPAGE taken as text
    with loader:
        assert not loader.parallel  # 7 pages, 1 of them known to be scanned: under both thresholds
    monkeypatch.setattr(parallel, "SCAN_ESTIMATES", 2)
    loader, _, _ = _loader([LINN, MULTIPAGE])
    with loader:
        assert loader.parallel
