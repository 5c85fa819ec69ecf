"""Records passed between loaders, the chunker and the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Page:
    """Text of one page.

    ``number`` is 1-based; text files are a single page 1. ``ocr`` is True when the text was read by OCR from
    the rendered page. ``layer`` is the text before normalisation as PDFium's text page gives it
    (``PdfTextPage.get_text_range()``) or as OCR read it, "" when there is none to map back to (other file
    types, a page taken from pypdf); ``lines`` are, for an OCR'd page, where each line of ``layer`` is on the
    page (:data:`rag.ingest.ocr.OcrLine`). Chunks locate themselves on the page with both
    (:mod:`rag.ingest.spans`).
    """

    number: int
    text: str
    ocr: bool = False
    layer: str = field(default="", repr=False, compare=False)
    lines: tuple[tuple[int, int, float, float, float, float], ...] = field(default=(), repr=False,
                                                                          compare=False)


@dataclass(frozen=True)
class ChunkRecord:
    """One chunk ready for the store.

    ``id`` is ``"{doc_sha[:16]}-{index:05d}"``, so the same bytes always give the same ids.
    ``index`` is 0-based over the whole document; ``page`` is 1-based.
    """

    id: str
    text: str
    source: str
    page: int
    index: int
    doc_sha: str
    metadata: dict = field(default_factory=dict)
