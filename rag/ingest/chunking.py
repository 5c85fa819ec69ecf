"""Split a loaded document into page-bounded, overlapping chunks with stable ids."""

from __future__ import annotations

from langchain_text_splitters import RecursiveCharacterTextSplitter

from rag.ingest.loaders import LoadedDocument
from rag.ingest.types import ChunkRecord

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
    the vector store requires), plus ``ocr: True`` on chunks of a page read by OCR.
    Whitespace-only chunks are dropped.

    Raises ``ValueError`` if ``chunk_size`` < 50, ``chunk_overlap`` < 0,
    ``chunk_overlap`` >= ``chunk_size``, or ``doc_sha`` is empty.
    """
    _validate(chunk_size, chunk_overlap, doc_sha)
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        length_function=len,
    )
    prefix = doc_sha[:16]
    records: list[ChunkRecord] = []
    for page in doc.pages:
        for piece in splitter.split_text(page.text):
            text = piece.strip()
            if not text:
                continue
            index = len(records)
            records.append(
                ChunkRecord(
                    id=f"{prefix}-{index:05d}",
                    text=text,
                    source=doc.filename,
                    page=page.number,
                    index=index,
                    doc_sha=doc_sha,
                    metadata={
                        "source": doc.filename,
                        "page": page.number,
                        "chunk_index": index,
                        "doc_sha": doc_sha,
                        **({"ocr": True} if page.ocr else {}),
                    },
                )
            )
    return records


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
