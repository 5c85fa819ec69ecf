"""Read one uploaded file.

(PDF, Word .docx, HTML, plain text or Markdown) into normalised 1-based pages of text.

PDFs are read with pypdfium2 (PDFium), page by page; a page with no text layer, or too little text
for its area while an image covers most of it, is rendered and read by OCR
(:mod:`rag.ingest.ocr`). pypdf takes over when PDFium cannot open a file (damaged files PDFium
refuses, encryption it does not support, a PDF opened by an empty owner password) and gives the
messages for corrupt and encrypted files.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from rag.ingest.errors import EmptyFile, TooLarge, UnsupportedType
from rag.ingest.office import load_docx, load_html
from rag.ingest.pdf import (
    PageCallback,
    _load_pdf,
    assemble_pdf,
    extract_pages,
    extract_pages_pdfium,
    open_pdf,
    quiet_pypdf_logging,
)
from rag.ingest.scans import MIN_CHARS_PER_SQ_INCH, MIN_IMAGE_COVER, MIN_TEXT_CHARS, needs_ocr
from rag.ingest.text import LoadedDocument, _load_text, normalize_text

__all__ = [  # the loaders' public names, importable from here as before PDF and text moved out
    "MIN_CHARS_PER_SQ_INCH", "MIN_IMAGE_COVER", "MIN_TEXT_CHARS", "SUPPORTED_SUFFIXES", "LoadedDocument",
    "PageCallback", "assemble_pdf", "extract_pages", "extract_pages_pdfium", "load_document", "needs_ocr",
    "normalize_text", "open_pdf", "quiet_pypdf_logging",
]

SUPPORTED_SUFFIXES = (".pdf", ".txt", ".md", ".markdown", ".docx", ".html", ".htm")

_MB = 1_000_000  # MB as in Settings.max_upload_mb (10^6 bytes)


def load_document(
    filename: str,
    data: bytes,
    *,
    password: str | None = None,
    max_bytes: int | None = None,
    ocr: bool = True,
    on_page: PageCallback | None = None,
) -> LoadedDocument:
    """Read ``data`` (the whole file, in bytes) named ``filename`` into a :class:`LoadedDocument`.

    The type comes from the file name's suffix (case-insensitive): ``.pdf``; ``.docx`` (Word);
    ``.html``, ``.htm`` (HTML, visible text only); or ``.txt``, ``.md``, ``.markdown`` for text
    (UTF-8, with a cp1252 fallback that adds a warning). ``password`` opens an encrypted PDF and
    is ignored otherwise. ``max_bytes`` is a size limit in bytes (``None``: no limit); messages
    show sizes in MB of 10^6 bytes. ``ocr`` (default on) reads PDF pages that have no text
    layer, or too little text for their area, by OCR (1-7 s a page); those pages are marked
    ``Page.ocr`` and listed in ``LoadedDocument.ocr_pages``. ``on_page(done, total, ocr)`` is
    called after each PDF page.

    Raises, checked in this order: :class:`UnsupportedType`, :class:`TooLarge`, :class:`EmptyFile`
    (0 bytes, or a text file with no text); then for PDFs :class:`TooLarge` (a stream that would inflate
    past :data:`rag.ingest.inflation.MAX_STREAM_BYTES`: a decompression bomb), :class:`CorruptFile`,
    :class:`PasswordRequired`, :class:`WrongPassword`, :class:`MissingDependency` (``cryptography``
    missing for AES in the pypdf fallback), :class:`NoExtractableText` (no page has text, e.g. a
    scan with ``ocr=False``); for Word and HTML :class:`CorruptFile` (not such a file) and
    :class:`EmptyFile` (no text); for text files :class:`CorruptFile` (binary data).
    """
    suffix = _suffix(filename)
    if suffix not in SUPPORTED_SUFFIXES:
        supported = ", ".join(SUPPORTED_SUFFIXES)
        if suffix:
            raise UnsupportedType(f"unsupported type '{suffix}' (supported: {supported})")
        raise UnsupportedType(f"unsupported type: no file extension (supported: {supported})")
    size = len(data)
    if max_bytes is not None and size > max_bytes:
        raise TooLarge(_too_large_message(size, max_bytes))
    if size == 0:
        raise EmptyFile("empty file (0 bytes)")
    if suffix == ".pdf":
        return _load_pdf(filename, data, password, ocr=ocr, on_page=on_page)
    if suffix == ".docx":
        return load_docx(filename, data)
    if suffix in (".html", ".htm"):
        return load_html(filename, data)
    return _load_text(filename, data)


def _suffix(filename: str) -> str:
    return PurePosixPath(filename.replace("\\", "/")).suffix.lower()


def _too_large_message(size: int, limit: int) -> str:
    shown, shown_limit = f"{size / _MB:.1f}", f"{limit / _MB:.1f}"
    if shown == shown_limit:  # rounding would hide the difference
        return f"file is {size:,} bytes, over the {limit:,}-byte limit"
    return f"file is {shown} MB, over the {shown_limit} MB limit"

