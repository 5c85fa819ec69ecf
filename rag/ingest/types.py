"""Records passed between loaders, the chunker and the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Page:
    """Text of one page.

    ``number`` is 1-based; text files are a single page 1. ``ocr`` is True when the text was read by OCR from
    the rendered page.
    """

    number: int
    text: str
    ocr: bool = False


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
