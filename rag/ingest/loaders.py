"""Read one uploaded file (PDF, plain text or Markdown) into normalised 1-based pages of text."""

from __future__ import annotations

import io
import re
import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Iterable

import pypdf
from pypdf.errors import DependencyError

from rag.ingest.errors import (
    CorruptFile,
    EmptyFile,
    MissingDependency,
    NoExtractableText,
    PasswordRequired,
    TooLarge,
    UnsupportedType,
    WrongPassword,
)
from rag.ingest.types import Page

SUPPORTED_SUFFIXES = (".pdf", ".txt", ".md", ".markdown")

_MB = 1_000_000  # MB as in Settings.max_upload_mb (10^6 bytes)
_BINARY_SNIFF_BYTES = 8192
_REASON_MAX_CHARS = 160

# A word broken across a line end: "retrie-\nval" -> "retrieval" (only when a lowercase letter follows).
_HYPHEN_BREAK = re.compile(r"([^\W\d_])[-\u2010][ \t]*\n[ \t]*(?=[^\W\d_])")
# Unicode category Cc except \t and \n, plus lone surrogates (which cannot be encoded as UTF-8).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_SPACES = re.compile(r"[ \t]+")
_TRAILING_SPACES = re.compile(r"[ \t]+\n")
_MANY_NEWLINES = re.compile(r"\n{3,}")


@dataclass(frozen=True)
class LoadedDocument:
    """Text of one file.

    ``pages`` holds only the pages that have text, each keeping the 1-based number it has in the
    original file (so page 3 may follow page 1). ``page_count`` counts every page, including the
    empty ones; a text file is always one page, number 1. ``warnings`` are one-line notes for a
    person (for example a page whose text could not be extracted).
    """

    filename: str
    pages: list[Page]
    page_count: int
    warnings: list[str]


def normalize_text(s: str) -> str:
    """Clean extracted text: NFKC (ligatures become letters), rejoin words hyphenated across line
    ends, turn control characters other than newline and tab into spaces, collapse runs of spaces
    and tabs to one space, cap blank lines at one (three or more newlines become two), strip."""
    s = unicodedata.normalize("NFKC", s)
    s = s.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n\n")
    # Soft hyphens and byte-order marks carry no text.
    s = s.replace("\u00ad", "").replace("\ufeff", "")
    s = _CONTROL.sub(" ", s)
    s = _SPACES.sub(" ", s)
    s = _TRAILING_SPACES.sub("\n", s)
    s = _HYPHEN_BREAK.sub(_join_hyphenated, s)
    s = _MANY_NEWLINES.sub("\n\n", s)
    return s.strip()


def _join_hyphenated(m: re.Match[str]) -> str:
    following = m.string[m.end()]
    if following.islower():
        return m.group(1)
    return m.group(0)


def load_document(
    filename: str,
    data: bytes,
    *,
    password: str | None = None,
    max_bytes: int | None = None,
) -> LoadedDocument:
    """Read ``data`` (the whole file, in bytes) named ``filename`` into a :class:`LoadedDocument`.

    The type comes from the file name's suffix (case-insensitive): ``.pdf``, or ``.txt``, ``.md``,
    ``.markdown`` for text (UTF-8, with a cp1252 fallback that adds a warning). ``password`` opens
    an encrypted PDF and is ignored otherwise. ``max_bytes`` is a size limit in bytes (``None``:
    no limit); messages show sizes in MB of 10^6 bytes.

    Raises, checked in this order: :class:`UnsupportedType`, :class:`TooLarge`, :class:`EmptyFile`
    (0 bytes, or a text file with no text); then for PDFs :class:`CorruptFile`,
    :class:`PasswordRequired`, :class:`WrongPassword`, :class:`MissingDependency` (``cryptography``
    missing for AES), :class:`NoExtractableText` (no page has text, e.g. a scan without OCR); for
    text files :class:`CorruptFile` (binary data).
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
        return _load_pdf(filename, data, password)
    return _load_text(filename, data)


def _suffix(filename: str) -> str:
    return PurePosixPath(filename.replace("\\", "/")).suffix.lower()


def _too_large_message(size: int, limit: int) -> str:
    shown, shown_limit = f"{size / _MB:.1f}", f"{limit / _MB:.1f}"
    if shown == shown_limit:  # rounding would hide the difference
        return f"file is {size:,} bytes, over the {limit:,}-byte limit"
    return f"file is {shown} MB, over the {shown_limit} MB limit"


def _short_reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if not text:
        return type(exc).__name__
    if len(text) > _REASON_MAX_CHARS:
        text = text[: _REASON_MAX_CHARS - 3] + "..."
    return text


def _missing_crypto(exc: DependencyError) -> MissingDependency:
    return MissingDependency(
        "this PDF needs a library that is not installed "
        f"({_short_reason(exc)}); for encrypted (AES) PDFs run: pip install cryptography"
    )


def _load_pdf(filename: str, data: bytes, password: str | None) -> LoadedDocument:
    reader = open_pdf(data, password)
    page_count = len(reader.pages)
    pages, warnings = extract_pages(reader, range(1, page_count + 1))
    return assemble_pdf(filename, pages, page_count, warnings)


def open_pdf(data: bytes, password: str | None = None) -> pypdf.PdfReader:
    """Open (and decrypt) a PDF from its bytes.

    Raises :class:`CorruptFile`, :class:`PasswordRequired`, :class:`WrongPassword` or
    :class:`MissingDependency`, as :func:`load_document` documents.
    """
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            # A password that fails on a file that opens without one (empty user or owner
            # password) is not an error: a batch-wide password must not break such files.
            if not reader.decrypt(password or "") and not (password and reader.decrypt("")):
                if not password:
                    raise PasswordRequired("encrypted: password required")
                raise WrongPassword("wrong password")
        len(reader.pages)  # a broken page tree fails here, not in the page loop
    except DependencyError as exc:
        raise _missing_crypto(exc) from exc
    except (PasswordRequired, WrongPassword):
        raise
    except Exception as exc:  # pypdf raises many types on broken files (PdfReadError, ValueError, ...)
        raise CorruptFile(f"corrupt or unreadable PDF: {_short_reason(exc)}") from exc
    return reader


def extract_pages(reader: pypdf.PdfReader, numbers: Iterable[int]) -> tuple[list[Page], list[str]]:
    """Normalised text of the pages ``numbers`` (1-based) of an opened PDF: the pages that
    have text, in order, and one warning per page whose extraction failed (one bad page
    must not lose the whole file). Raises :class:`MissingDependency` (AES without
    ``cryptography``)."""
    pages: list[Page] = []
    warnings: list[str] = []
    for number in numbers:
        try:
            raw = reader.pages[number - 1].extract_text() or ""
        except DependencyError as exc:
            raise _missing_crypto(exc) from exc
        except Exception as exc:
            warnings.append(f"page {number}: text extraction failed: {_short_reason(exc)}")
            continue
        text = normalize_text(raw)
        if text:
            pages.append(Page(number=number, text=text))
    return pages, warnings


def assemble_pdf(filename: str, pages: list[Page], page_count: int,
                 warnings: list[str]) -> LoadedDocument:
    """The :class:`LoadedDocument` of a PDF from its extracted ``pages`` (in page order).

    Raises :class:`NoExtractableText` when no page has text.
    """
    if not pages:
        noun = "page" if page_count == 1 else "pages"
        raise NoExtractableText(f"no extractable text ({page_count} {noun}; scanned? run OCR first)")
    warnings = list(warnings)
    empty = page_count - len(pages)
    if empty:
        warnings.append(f"{empty} of {page_count} pages have no extractable text (scanned? run OCR first)")
    return LoadedDocument(filename=filename, pages=pages, page_count=page_count, warnings=warnings)


def _load_text(filename: str, data: bytes) -> LoadedDocument:
    warnings: list[str] = []
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 with a byte-order mark (Windows "Unicode")
        try:
            decoded = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise CorruptFile(f"invalid UTF-16 text: {_short_reason(exc)}") from exc
    else:
        if b"\x00" in data[:_BINARY_SNIFF_BYTES]:
            raise CorruptFile("binary data in a text file")
        try:
            decoded = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            decoded = data.decode("cp1252", errors="replace")
            warnings.append("not valid UTF-8; read as Windows-1252 (cp1252), some characters may be wrong")
    text = normalize_text(decoded)
    if not text:
        raise EmptyFile("no text in file")
    return LoadedDocument(
        filename=filename, pages=[Page(number=1, text=text)], page_count=1, warnings=warnings
    )
