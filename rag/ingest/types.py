"""Records passed between loaders, the chunker and the pipeline.

:class:`ChunkRecord`, the chunker's output, is the store's input: it is defined by :mod:`rag.store.records`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rag.store.records import ChunkRecord

__all__ = ["ChunkRecord", "Page"]


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
