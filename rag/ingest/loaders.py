"""Read one uploaded file.

(PDF, Word .docx, HTML, plain text or Markdown) into normalised 1-based pages of text.

PDFs are read with pypdfium2 (PDFium), page by page; a page with no text layer, or too little text
for its area while an image covers most of it, is rendered and read by OCR
(:mod:`rag.ingest.ocr`). pypdf takes over when PDFium cannot open a file (damaged files PDFium
refuses, encryption it does not support, a PDF opened by an empty owner password) and gives the
messages for corrupt and encrypted files.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

import pypdf
from pypdf.errors import DependencyError

from rag.ingest.errors import (
    CorruptFile,
    EmptyFile,
    IngestError,
    MissingDependency,
    NoExtractableText,
    PasswordRequired,
    TooLarge,
    UnsupportedType,
    WrongPassword,
)
from rag.ingest.types import Page

log = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = (".pdf", ".txt", ".md", ".markdown", ".docx", ".html", ".htm")

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

    NFKC (ligatures become letters), rejoin words hyphenated across line ends, turn control characters other
    than newline and tab into spaces, collapse runs of spaces and tabs to one space, cap blank lines at one
    (three or more newlines become two), strip.
    """
    s = unicodedata.normalize("NFKC", s)
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


PageCallback = Callable[[int, int, bool], None]
"""``on_page(done, total, ocr)``: after each PDF page, the pages done so far and the page count
(1-based counts), and whether that page was read by OCR."""


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
    (0 bytes, or a text file with no text); then for PDFs :class:`CorruptFile`,
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
        from rag.ingest.office import load_docx

        return load_docx(filename, data)
    if suffix in (".html", ".htm"):
        from rag.ingest.office import load_html

        return load_html(filename, data)
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


def _load_pdf(filename: str, data: bytes, password: str | None, *, ocr: bool = True,
              on_page: PageCallback | None = None) -> LoadedDocument:
    pdf = _open_pdfium(data, password)
    if pdf is None:  # PDFium cannot open it: pypdf gives the error, or the text
        reader = open_pdf(data, password)
        page_count = len(reader.pages)
        pages, warnings = extract_pages(reader, range(1, page_count + 1), on_page=on_page)
        return assemble_pdf(filename, pages, page_count, warnings,
                            hint="scanned? PDFium cannot render this file for OCR" if ocr else None)
    with _PDFIUM_LOCK:
        try:
            page_count = len(pdf)
            pages, warnings = extract_pages_pdfium(pdf, range(1, page_count + 1), ocr=ocr,
                                                   on_page=on_page,
                                                   fallback=_PypdfPages(data, password))
        finally:
            pdf.close()
    return assemble_pdf(filename, pages, page_count, warnings, ocr=ocr)


def _load_pdf_range(data: bytes, password: str | None, first: int, last: int, *, ocr: bool = True,
                    on_page: PageCallback | None = None) -> tuple[list[Page], list[str]]:
    """Pages ``first..last``.

    (1-based, inclusive) of a PDF that PDFium opens, as :func:`extract_pages_pdfium` gives them (for worker
    processes). Raises :class:`CorruptFile` when PDFium cannot open it.
    """
    pdf = _open_pdfium(data, password)
    if pdf is None:
        raise CorruptFile("corrupt or unreadable PDF: PDFium cannot open it")
    with _PDFIUM_LOCK:
        try:
            return extract_pages_pdfium(pdf, range(first, last + 1), ocr=ocr, on_page=on_page,
                                        fallback=_PypdfPages(data, password))
        finally:
            pdf.close()


_PDFIUM_LOCK = threading.RLock()
"""PDFium is not thread-safe: every call into it, from any thread, holds this lock."""

# Right-to-left scripts (Hebrew, Arabic, Syriac, Thaana, NKo, Samaritan, presentation forms).
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")


class _PypdfPages:
    """pypdf's text of single pages of a PDF, opened on first use.

    PDFium returns right-to-left scripts in visual (reversed) order, pypdf in logical order.
    """

    def __init__(self, data: bytes, password: str | None) -> None:
        self._data, self._password, self._reader = data, password, None

    def __call__(self, number: int) -> str:
        if self._reader is None:
            self._reader = open_pdf(self._data, self._password)
        pages, _ = extract_pages(self._reader, [number])
        return pages[0].text if pages else ""


MIN_TEXT_CHARS = 50
"""A page with fewer characters than this in its text layer is "too little text" for OCR."""
MIN_CHARS_PER_SQ_INCH = 5.0
"""A page whose text layer has fewer characters per square inch (A4 has 96.7) is too sparse."""
MIN_IMAGE_COVER = 0.5
"""OCR a page with some text only when images cover at least this share of it (a scan)."""


def _open_pdfium(data: bytes, password: str | None):
    """The ``pypdfium2.PdfDocument`` of ``data``, or None when PDFium cannot open it.

    (damaged, encrypted without a password it accepts, unsupported security handler): the caller then hands
    the file to pypdf. A password that fails on a file that opens without one is ignored, as in
    :func:`open_pdf`.
    """
    import pypdfium2 as pdfium

    with _PDFIUM_LOCK:
        for attempt in ((password, None) if password else (None,)):
            try:
                return pdfium.PdfDocument(data, password=attempt)
            except pdfium.PdfiumError as exc:
                log.debug("PDFium cannot open the file (password %s): %s",
                          "given" if attempt else "none", exc)
                if getattr(exc, "err_code", None) != pdfium.raw.FPDF_ERR_PASSWORD:
                    return None
            except Exception as exc:  # anything else from the binding: pypdf decides
                log.debug("PDFium failed to open the file: %s", exc)
                return None
    return None


def _image_cover(page) -> float:
    """Share (0-1) of ``page``'s area covered by image objects (bounding boxes, summed, capped)."""
    import pypdfium2 as pdfium

    width, height = page.get_size()
    area = max(width * height, 1e-9)
    covered = 0.0
    for obj in page.get_objects(filter=(pdfium.raw.FPDF_PAGEOBJ_IMAGE,), max_depth=3):
        left, bottom, right, top = obj.get_bounds()
        w = max(0.0, min(right, width) - max(left, 0.0))
        h = max(0.0, min(top, height) - max(bottom, 0.0))
        covered += w * h
    return min(1.0, covered / area)


def needs_ocr(text: str, width_pt: float, height_pt: float,
              image_cover: float | Callable[[], float]) -> bool:
    """Whether a page whose text layer is ``text``.

    (normalised), of ``width_pt`` x ``height_pt`` points with images covering ``image_cover`` (0-1) of it,
    should be read by OCR: it has no text and some image (10% of the page or more), or images cover at least
    :data:`MIN_IMAGE_COVER` of it and its text is under :data:`MIN_TEXT_CHARS` characters or
    :data:`MIN_CHARS_PER_SQ_INCH` per square inch. A page with no image is never OCR'd (a blank page or one
    drawn with vector graphics has nothing to read). ``image_cover`` may be a function, called only when the
    text alone does not settle it (it walks the page's objects, which is slow on text-heavy pages).
    """
    chars = len(text)
    sq_inches = (width_pt / 72.0) * (height_pt / 72.0)
    if chars >= MIN_TEXT_CHARS and chars >= MIN_CHARS_PER_SQ_INCH * sq_inches:
        return False
    cover = image_cover() if callable(image_cover) else image_cover
    return cover >= (0.1 if chars == 0 else MIN_IMAGE_COVER)


def _text_layer(page, number: int, fallback: Callable[[int], str] | None) -> str:
    """Normalised text layer of a ``pypdfium2.PdfPage`` (page ``number``, 1-based).

    A page in a right-to-left script comes from ``fallback(number)`` (pypdf) when that gives text.
    """
    textpage = page.get_textpage()
    try:
        text = normalize_text(textpage.get_text_range())
    finally:
        textpage.close()
    if fallback is not None and _RTL.search(text):
        with contextlib.suppress(IngestError):  # keep PDFium's text
            text = fallback(number) or text
    return text


def _maybe_ocr(page, number: int, text: str, warnings: list[str]) -> tuple[str, bool]:
    """``(text, ocr)`` of a page whose text layer is ``text``.

    OCR's text when the page :func:`needs_ocr` and OCR reads more, else ``text``. A failed OCR adds to
    ``warnings``. Raises :class:`MissingDependency` when rapidocr is missing.
    """
    width, height = page.get_size()
    if not needs_ocr(text, width, height, lambda: _image_cover(page)):
        return text, False
    from rag.ingest.ocr import ocr_page

    try:
        read = normalize_text(ocr_page(page))
    except IngestError:
        raise
    except Exception as exc:
        warnings.append(f"page {number}: OCR failed: {_short_reason(exc)}")
        return text, False
    return (read, True) if len(read) > len(text) else (text, False)


def extract_pages_pdfium(pdf, numbers: Iterable[int], *, ocr: bool = True,
                         on_page: PageCallback | None = None,
                         fallback: Callable[[int], str] | None = None
                         ) -> tuple[list[Page], list[str]]:
    """Normalised text of the pages ``numbers`` (1-based) of an open ``pypdfium2.PdfDocument``.

    The pages that have text, in order, and one-line warnings (a page whose extraction or OCR failed; one bad
    page never loses the whole file). With ``ocr``, pages that :func:`needs_ocr` are read by OCR too, and
    OCR's text replaces the text layer's when it is longer (the page is then marked ``ocr=True``). A page in a
    right-to-left script is taken from ``fallback(number)`` (pypdf) when that gives text. Call with
    :data:`_PDFIUM_LOCK` held. Raises :class:`MissingDependency` when OCR is needed but rapidocr is not
    installed.
    """
    numbers = list(numbers)
    pages: list[Page] = []
    warnings: list[str] = []
    for done, number in enumerate(numbers, start=1):
        used_ocr = False
        page = None
        try:
            page = pdf[number - 1]
            text = _text_layer(page, number, fallback)
            if ocr:
                text, used_ocr = _maybe_ocr(page, number, text, warnings)
        except IngestError:
            raise
        except Exception as exc:
            warnings.append(f"page {number}: text extraction failed: {_short_reason(exc)}")
            text = ""
        finally:
            if page is not None:
                page.close()
        if text:
            pages.append(Page(number=number, text=text, ocr=used_ocr))
        if on_page:
            on_page(done, len(numbers), used_ocr)
    return pages, warnings


def quiet_pypdf_logging() -> None:
    """Keep pypdf's warnings ("invalid pdf header", "EOF marker not found", font notes) in the log.

    With no handler configured anywhere, Python's last-resort handler would print each one on stderr. A
    NullHandler on the ``pypdf`` logger stops that; records still propagate to any handler the application
    configures. Idempotent.
    """
    logger = logging.getLogger("pypdf")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


def open_pdf(data: bytes, password: str | None = None) -> pypdf.PdfReader:
    """Open (and decrypt) a PDF from its bytes.

    Raises :class:`CorruptFile`, :class:`PasswordRequired`, :class:`WrongPassword` or
    :class:`MissingDependency`, as :func:`load_document` documents.
    """
    quiet_pypdf_logging()
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        # A password that fails on a file that opens without one (empty user or owner
        # password) is not an error: a batch-wide password must not break such files.
        if reader.is_encrypted and not reader.decrypt(password or "") and not (
                password and reader.decrypt("")):
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


def extract_pages(reader: pypdf.PdfReader, numbers: Iterable[int], *,
                  on_page: PageCallback | None = None) -> tuple[list[Page], list[str]]:
    """Normalised text of the pages ``numbers`` (1-based) of an opened PDF.

    The pages that have text, in order, and one warning per page whose extraction failed (one bad page must
    not lose the whole file). Raises :class:`MissingDependency` (AES without ``cryptography``).
    """
    numbers = list(numbers)
    pages: list[Page] = []
    warnings: list[str] = []
    for done, number in enumerate(numbers, start=1):
        try:
            raw = reader.pages[number - 1].extract_text() or ""
        except DependencyError as exc:
            raise _missing_crypto(exc) from exc
        except Exception as exc:
            warnings.append(f"page {number}: text extraction failed: {_short_reason(exc)}")
            raw = ""
        text = normalize_text(raw)
        if text:
            pages.append(Page(number=number, text=text))
        if on_page:
            on_page(done, len(numbers), False)
    return pages, warnings


def assemble_pdf(filename: str, pages: list[Page], page_count: int,
                 warnings: list[str], *, ocr: bool = False, hint: str | None = None) -> LoadedDocument:
    """The :class:`LoadedDocument` of a PDF from its extracted ``pages`` (in page order).

    ``ocr`` says whether OCR was tried on pages without text, which changes the advice given about pages with
    no text (``hint`` replaces it).

    Raises :class:`NoExtractableText` when no page has text.
    """
    hint = hint or ("no text found by OCR either" if ocr else "scanned? turn OCR on")
    if not pages:
        noun = "page" if page_count == 1 else "pages"
        raise NoExtractableText(f"no extractable text ({page_count} {noun}; {hint})")
    warnings = list(warnings)
    empty = page_count - len(pages)
    if empty:
        warnings.append(f"{empty} of {page_count} pages have no extractable text ({hint})")
    return LoadedDocument(filename=filename, pages=pages, page_count=page_count, warnings=warnings,
                          ocr_pages=tuple(p.number for p in pages if p.ocr))


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
