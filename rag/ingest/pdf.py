"""PDF files: text by pypdfium2 (PDFium) page by page, OCR for pages without a text layer, pypdf as fallback.

A page with no text layer, or too little text for its area while an image covers most of it, is
rendered and read by OCR (:mod:`rag.ingest.ocr`). pypdf takes over when PDFium cannot open a file
(damaged files PDFium refuses, encryption it does not support, a PDF opened by an empty owner
password) and gives the messages for corrupt and encrypted files.
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import re
import threading
from collections.abc import Callable, Iterable

import pypdf
from pypdf.errors import DependencyError

from rag.ingest import ocr as ocr_engine  # called as ocr_engine.ocr_page: a replaced ocr_page is used
from rag.ingest.errors import (
    CorruptFile,
    IngestError,
    MissingDependency,
    NoExtractableText,
    PasswordRequired,
    WrongPassword,
)
from rag.ingest.inflation import check_inflation
from rag.ingest.scans import image_cover, needs_ocr
from rag.ingest.text import LoadedDocument, _short_reason, normalize_text
from rag.ingest.types import Page

log = logging.getLogger(__name__)

PageCallback = Callable[[int, int, bool], None]
"""``on_page(done, total, ocr)``: after each PDF page, the pages done so far and the page count
(1-based counts), and whether that page was read by OCR."""


def _missing_crypto(exc: DependencyError) -> MissingDependency:
    return MissingDependency(
        "this PDF needs a library that is not installed "
        f"({_short_reason(exc)}); for encrypted (AES) PDFs run: pip install cryptography"
    )


def _load_pdf(filename: str, data: bytes, password: str | None, *, ocr: bool = True,
              on_page: PageCallback | None = None) -> LoadedDocument:
    check_inflation(data)  # TooLarge before any parser inflates a bomb
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
        self._data, self._password = data, password
        self._reader: pypdf.PdfReader | None = None

    def __call__(self, number: int) -> str:
        if self._reader is None:
            self._reader = open_pdf(self._data, self._password)
        pages, _ = extract_pages(self._reader, [number])
        return pages[0].text if pages else ""


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


def _text_layer(page, number: int, fallback: Callable[[int], str] | None) -> tuple[str, str]:
    """Normalised text layer of a ``pypdfium2.PdfPage`` (page ``number``, 1-based), and PDFium's raw text.

    The raw text is what chunk spans are mapped back to (:attr:`Page.layer`). A page in a right-to-left script
    comes from ``fallback(number)`` (pypdf) when that gives text; its raw text is then "" (pypdf's offsets
    are not PDFium's).
    """
    textpage = page.get_textpage()
    try:
        layer = textpage.get_text_range()
    finally:
        textpage.close()
    text = normalize_text(layer)
    if fallback is not None and _RTL.search(text):
        with contextlib.suppress(IngestError):  # keep PDFium's text
            if read := fallback(number):
                return read, ""
    return text, layer


def _maybe_ocr(page, number: int, text: str, warnings: list[str]) -> tuple[str, bool, str, tuple]:
    """``(text, ocr, layer, lines)`` of a page whose text layer is ``text``.

    OCR's text when the page :func:`needs_ocr` and OCR reads more, with OCR's raw text and line boxes
    (:func:`rag.ingest.ocr.read_page`); else ``text``, False, and "" and () (the caller keeps its layer). A
    failed OCR adds to ``warnings``. Raises :class:`MissingDependency` when rapidocr is missing.
    """
    width, height = page.get_size()
    if not needs_ocr(text, width, height, lambda: image_cover(page)):
        return text, False, "", ()
    try:
        raw, lines = ocr_engine.read_page(page)
        read = normalize_text(raw)
    except IngestError:
        raise
    except Exception as exc:
        warnings.append(f"page {number}: OCR failed: {_short_reason(exc)}")
        return text, False, "", ()
    return (read, True, raw, lines) if len(read) > len(text) else (text, False, "", ())


def _page_needs_ocr(page, number: int, fallback: Callable[[int], str] | None) -> bool:
    """:func:`needs_ocr` on page ``number`` (1-based) of a PDF: its text layer, then its images if need be."""
    text, _ = _text_layer(page, number, fallback)
    width, height = page.get_size()
    return needs_ocr(text, width, height, functools.partial(image_cover, page))


def ocr_candidates(data: bytes, password: str | None = None) -> list[int]:
    """The pages (1-based) of a PDF that ingestion with OCR on hands to OCR, none of them read.

    :func:`extract_pages_pdfium`'s decision (:func:`needs_ocr` on each page's text layer and images), for the
    OCR benchmark's baseline to read the same pages; [] when PDFium cannot open the file (pypdf then reads it,
    with no OCR). A page whose text layer cannot be read is left out, as ingestion leaves it out.
    """
    pdf = _open_pdfium(data, password)
    if pdf is None:
        return []
    fallback = _PypdfPages(data, password)
    numbers: list[int] = []
    with _PDFIUM_LOCK:
        try:
            for number in range(1, len(pdf) + 1):
                page = pdf[number - 1]
                try:
                    if _page_needs_ocr(page, number, fallback):
                        numbers.append(number)
                except Exception as exc:  # ingestion warns and goes on
                    log.debug("page %d: %s", number, exc)
                finally:
                    page.close()
        finally:
            pdf.close()
    return numbers


SCAN_SAMPLE = 6
"""Pages :func:`scanned_share` looks at in a document whose middle page looks scanned, spread over it."""


def scanned_share(pdf) -> float:
    """Estimated share (0-1) of an open ``pypdfium2.PdfDocument``'s pages that ingestion will read by OCR.

    For scheduling only (:mod:`rag.ingest.parallel`): the middle page gets :func:`ocr_candidates`' decision
    first, and 0.0 is returned when it is text; else :data:`SCAN_SAMPLE` pages spread over the document do
    (a page that cannot be read counts as text). A text PDF costs one page's text (3-10 ms here), a scan well
    under 1 ms a page. Call it holding :data:`_PDFIUM_LOCK`.
    """
    count = len(pdf)

    def scanned(index: int) -> bool:
        page = pdf[index]
        try:
            return _page_needs_ocr(page, index + 1, None)
        except Exception:  # unreadable here: ingestion warns about it, scheduling ignores it
            return False
        finally:
            page.close()

    if not count or not scanned(count // 2):
        return 0.0
    sample = sorted({round(i * (count - 1) / (SCAN_SAMPLE - 1)) for i in range(SCAN_SAMPLE)})
    return sum(scanned(i) for i in sample) / len(sample)


def extract_pages_pdfium(pdf, numbers: Iterable[int], *, ocr: bool = True,
                         on_page: PageCallback | None = None,
                         fallback: Callable[[int], str] | None = None
                         ) -> tuple[list[Page], list[str]]:
    """Normalised text of the pages ``numbers`` (1-based) of an open ``pypdfium2.PdfDocument``.

    The pages that have text, in order, and one-line warnings (a page whose extraction or OCR failed; one bad
    page never loses the whole file). With ``ocr``, pages that :func:`needs_ocr` are read by OCR too, and
    OCR's text replaces the text layer's when it is longer (the page is then marked ``ocr=True``). Each page
    keeps its raw text (PDFium's, or OCR's with its line boxes) in ``Page.layer``/``Page.lines``. A page in a
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
        layer, lines = "", ()
        try:
            page = pdf[number - 1]
            text, layer = _text_layer(page, number, fallback)
            if ocr:
                text, used_ocr, read, lines = _maybe_ocr(page, number, text, warnings)
                layer = read if used_ocr else layer
        except IngestError:
            raise
        except Exception as exc:
            warnings.append(f"page {number}: text extraction failed: {_short_reason(exc)}")
            text = ""
        finally:
            if page is not None:
                page.close()
        if text:
            pages.append(Page(number=number, text=text, ocr=used_ocr, layer=layer, lines=lines))
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

