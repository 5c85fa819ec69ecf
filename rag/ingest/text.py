"""Plain text and Markdown files, and what every loader shares.

:class:`LoadedDocument` (the text of one file in 1-based pages) and :func:`normalize_text`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from rag.ingest.errors import (
    CorruptFile,
    EmptyFile,
)
from rag.ingest.types import Page

_BINARY_SNIFF_BYTES = 8192
_REASON_MAX_CHARS = 160

# A word broken across a line end: "retrie-\nval" -> "retrieval" (only when a lowercase letter follows).
_HYPHEN_BREAK = re.compile(r"([^\W\d_])[-\u2010][ \t]*\n[ \t]*(?=[^\W\d_])")
# Unicode category Cc except \t and \n, plus lone surrogates (which cannot be encoded as UTF-8).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_SPACES = re.compile(r"[ \t]{2,}|\t")  # a run of spaces and tabs (a lone space is left as it is)
_TRAILING_SPACES = re.compile(r"[ \t]+\n")
_MANY_NEWLINES = re.compile(r"\n{3,}")


@dataclass(frozen=True)
class LoadedDocument:
    """Text of one file.

    ``pages`` holds only the pages that have text, each keeping the 1-based number it has in the
    original file (so page 3 may follow page 1). ``page_count`` counts every page, including the
    empty ones; a text file is always one page, number 1. ``warnings`` are one-line notes for a
    person (for example a page whose text could not be extracted). ``ocr_pages`` are the
    1-based numbers of the pages whose text was read by OCR.
    """

    filename: str
    pages: list[Page]
    page_count: int
    warnings: list[str]
    ocr_pages: tuple[int, ...] = ()


def normalize_text(s: str) -> str:
    """Clean extracted text.

    Drop trademark and service-mark signs (NFKC would glue "TM" to the name: "SquishmallowsTM"), NFKC
    (ligatures become letters), rejoin words hyphenated across line ends, turn control characters other
    than newline and tab into spaces, collapse runs of spaces and tabs to one space, cap blank lines at one
    (three or more newlines become two), strip.
    """
    s = unicodedata.normalize("NFKC", s.replace("\u2122", "").replace("\u2120", ""))
    s = s.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n\n")
    # Soft hyphens and byte-order marks carry no text.
    # PDFium marks a word hyphenated across a line end with U+FFFE and drops the line end.
    s = s.replace("\u00ad", "").replace("\ufeff", "").replace("\ufffe", "")
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


def _short_reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if not text:
        return type(exc).__name__
    if len(text) > _REASON_MAX_CHARS:
        text = text[: _REASON_MAX_CHARS - 3] + "..."
    return text



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
