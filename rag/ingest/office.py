"""Word (.docx, with python-docx) and HTML (.html/.htm, with html-text on lxml) files into text.

Neither format has pages a reader can rely on, so each file is one page, number 1, like a text
file. Errors are the ones :func:`rag.ingest.loaders.load_document` documents.
"""

from __future__ import annotations

import codecs
import io
import re
import zipfile

from rag.ingest.errors import CorruptFile, EmptyFile, MissingDependency
from rag.ingest.text import LoadedDocument, _short_reason, normalize_text
from rag.ingest.types import Page

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # legacy .doc, or an encrypted Office file
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_SNIFF_BYTES = 4096


def load_docx(filename: str, data: bytes) -> LoadedDocument:
    """Text of a Word ``.docx`` file.

    Its paragraphs and tables in document order (a table row becomes one line, cells separated by `` | ``), as
    one page, number 1. Headers, footers and comments are left out.

    Raises :class:`CorruptFile` (not a .docx: a legacy .doc, a password-protected file, a broken
    archive), :class:`EmptyFile` (no text), :class:`MissingDependency` (python-docx missing).
    """
    try:
        import docx
        from docx.opc.exceptions import PackageNotFoundError
    except ImportError as exc:
        raise MissingDependency(f"Word files need python-docx ({exc}); run: pip install python-docx") from exc
    if data.startswith(_OLE_MAGIC):
        raise CorruptFile("not a .docx file: a legacy .doc or a password-protected Word file "
                          "(save it as .docx without a password)")
    try:
        document = docx.Document(io.BytesIO(data))
        blocks: list[str] = []
        for item in document.iter_inner_content():
            if hasattr(item, "rows"):  # a table
                for row in item.rows:
                    cells: list[str] = []
                    for cell in row.cells:
                        text = " ".join(cell.text.split())
                        if text and (not cells or cells[-1] != text):  # merged cells repeat
                            cells.append(text)
                    if cells:
                        blocks.append(" | ".join(cells))
            else:
                blocks.append(item.text)
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise CorruptFile(f"corrupt or unreadable Word file: {_short_reason(exc)}") from exc
    except Exception as exc:  # lxml and zip raise many types on broken files
        raise CorruptFile(f"corrupt or unreadable Word file: {_short_reason(exc)}") from exc
    text = normalize_text("\n\n".join(blocks))
    if not text:
        raise EmptyFile("no text in file")
    return LoadedDocument(filename=filename, pages=[Page(number=1, text=text)], page_count=1,
                          warnings=[])


def _decode_html(data: bytes) -> tuple[str, list[str]]:
    """Decode HTML bytes.

    A byte-order mark, else the ``<meta charset>`` it declares, else UTF-8, else Windows-1252 with a warning.
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16"), []
        except UnicodeDecodeError as exc:
            raise CorruptFile(f"invalid UTF-16 text: {_short_reason(exc)}") from exc
    if data.startswith(codecs.BOM_UTF8):
        return data.decode("utf-8-sig", errors="replace"), []
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise CorruptFile("binary data in an HTML file")
    declared = _CHARSET.search(data[:_SNIFF_BYTES])
    if declared:
        name = declared.group(1).decode("ascii", errors="ignore")
        try:
            codecs.lookup(name)
        except LookupError:
            pass
        else:
            return data.decode(name, errors="replace"), []
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError:
        return (data.decode("cp1252", errors="replace"),
                ["not valid UTF-8; read as Windows-1252 (cp1252), some characters may be wrong"])


def load_html(filename: str, data: bytes) -> LoadedDocument:
    """Visible text of an HTML file.

    (title, headings, paragraphs, lists, tables; no scripts, styles or comments), with block elements on lines
    of their own, as one page, number 1.

    Raises :class:`CorruptFile` (binary data), :class:`EmptyFile` (no visible text),
    :class:`MissingDependency` (html-text missing).
    """
    try:
        import html_text
    except ImportError as exc:
        raise MissingDependency(f"HTML files need html-text ({exc}); run: pip install html-text") from exc
    decoded, warnings = _decode_html(data)
    try:
        raw = html_text.extract_text(decoded)
    except Exception as exc:  # lxml gives up on some inputs
        raise CorruptFile(f"corrupt or unreadable HTML: {_short_reason(exc)}") from exc
    text = normalize_text(raw)
    if not text:
        raise EmptyFile("no text in file")
    return LoadedDocument(filename=filename, pages=[Page(number=1, text=text)], page_count=1,
                          warnings=warnings)
