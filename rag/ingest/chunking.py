"""Split a loaded document into page-bounded, overlapping chunks with stable ids."""

from __future__ import annotations

import json

from langchain_text_splitters import RecursiveCharacterTextSplitter

from rag.ingest.loaders import LoadedDocument
from rag.ingest.spans import Span, map_spans, piece_spans
from rag.ingest.types import ChunkRecord, Page
from rag.store.records import chunk_id

DEFAULT_CHUNK_SIZE = 1000  # characters
DEFAULT_CHUNK_OVERLAP = 150  # characters
MIN_CHUNK_SIZE = 50  # characters


def chunk_document(
    doc: LoadedDocument,
    *,
    doc_sha: str,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
) -> list[ChunkRecord]:
    """Split ``doc`` into chunks of at most ``chunk_size`` characters.

    Consecutive chunks of a page sharing up to ``chunk_overlap`` characters.

    Pages are split one at a time, so a chunk never spans two pages; ``ChunkRecord.page`` is the
    1-based page number. ``index`` is 0-based and runs over the whole document, and ``id`` is
    ``f"{doc_sha[:16]}-{index:05d}"``, so the same bytes and settings give the same ids.
    ``metadata`` holds ``source``, ``page``, ``chunk_index`` and ``doc_sha`` (str and int, as
    the vector store requires), plus ``ocr: True`` on chunks of a page read by OCR, and where the
    chunk is on its page (:func:`position_metadata`). Whitespace-only chunks are dropped.

    Raises ``ValueError`` if ``chunk_size`` < 50, ``chunk_overlap`` < 0,
    ``chunk_overlap`` >= ``chunk_size``, or ``doc_sha`` is empty.
    """
    _validate(chunk_size, chunk_overlap, doc_sha)
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        length_function=len,
    )
    records: list[ChunkRecord] = []
    for page in doc.pages:
        pieces = splitter.split_text(page.text)
        for piece, where in zip(pieces, position_metadata(page, pieces), strict=True):
            text = piece.strip()
            if not text:
                continue
            records.append(chunk_record(doc_sha, doc.filename, len(records), text, page.number,
                                        {**({"ocr": True} if page.ocr else {}), **where}))
    return records


def chunk_record(doc_sha: str, source: str, index: int, text: str, page: int, extra: dict) -> ChunkRecord:
    """Chunk ``index`` (0-based over the document) of the file ``source``, on its 1-based ``page``.

    Its id is ``f"{doc_sha[:16]}-{index:05d}"``; its metadata ``source``, ``page``, ``chunk_index`` and
    ``doc_sha``, then ``extra`` (``ocr`` and where it is on its page: :func:`position_metadata`).
    """
    return ChunkRecord(id=chunk_id(doc_sha, index), text=text, source=source, page=page, index=index,
                       doc_sha=doc_sha, metadata={"source": source, "page": page, "chunk_index": index,
                                                  "doc_sha": doc_sha, **extra})


def position_metadata(page: Page, pieces: list[str]) -> list[dict]:
    """Where each of ``pieces`` (a splitter's output for ``page.text``, in order) is on its page, as metadata.

    ``span_start``/``span_end``: character offsets of the stripped piece in ``page.text`` (the normalised
    page text). On a PDF page with a text layer, ``pdf_start``/``pdf_end``: its offsets in PDFium's text of
    the page (``PdfTextPage.get_text_range()``, :attr:`Page.layer`), from which the page view takes the
    characters' boxes. On a page read by OCR, ``ocr_boxes``: a JSON list of ``[left, top, right, bottom]``
    boxes (fractions 0-1 of the rendered page, top-left origin), one per OCR line the piece covers, cut
    where it starts or ends within a line. A key is left out when it cannot be found (see
    :func:`rag.ingest.spans.map_spans`).
    """
    spans = piece_spans(page.text, pieces)
    mapped: list[Span | None] = map_spans(page.layer, page.text, spans) if page.layer else [None] * len(spans)
    out: list[dict] = []
    for span, at in zip(spans, mapped, strict=True):
        meta: dict = {} if span is None else {"span_start": span[0], "span_end": span[1]}
        if at is not None and page.ocr:
            if boxes := _line_boxes(page.lines, at):
                meta["ocr_boxes"] = json.dumps(boxes, separators=(",", ":"))
        elif at is not None:
            meta["pdf_start"], meta["pdf_end"] = at
        out.append(meta)
    return out


def _line_boxes(lines, span: Span) -> list[list[float]]:
    """Boxes of the OCR ``lines`` that ``span`` (offsets in the OCR text) covers.

    A line covered only in part is cut in proportion to its characters.
    """
    start, end = span
    boxes = []
    for a, b, left, top, right, bottom in lines:
        if b <= start or a >= end or b <= a:
            continue
        width = right - left
        lo = left + width * max(0, start - a) / (b - a)
        hi = left + width * (min(end, b) - a) / (b - a)
        boxes.append([round(lo, 4), top, round(hi, 4), bottom])
    return boxes


def _validate(chunk_size: int, chunk_overlap: int, doc_sha: str) -> None:
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int):
        raise ValueError(f"chunk_size must be an integer number of characters, got {chunk_size!r}")
    if isinstance(chunk_overlap, bool) or not isinstance(chunk_overlap, int):
        raise ValueError(f"chunk_overlap must be an integer number of characters, got {chunk_overlap!r}")
    if chunk_size < MIN_CHUNK_SIZE:
        raise ValueError(f"chunk_size must be at least {MIN_CHUNK_SIZE} characters, got {chunk_size}")
    if chunk_overlap < 0:
        raise ValueError(f"chunk_overlap must be 0 or more characters, got {chunk_overlap}")
    if chunk_overlap >= chunk_size:
        raise ValueError(
            f"chunk_overlap ({chunk_overlap}) must be smaller than chunk_size ({chunk_size})"
        )
    if not isinstance(doc_sha, str) or not doc_sha:
        raise ValueError("doc_sha must be a non-empty string (the document's SHA-256 hex digest)")
