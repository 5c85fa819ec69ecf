"""The Documents page's pieces: report lines, the documents table, and the confirm step before a delete."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from app_pages import _tables
from app_pages._safe import safe
from rag.ingest.eta import format_eta, with_eta
from rag.ingest.pipeline import FileReport
from rag.store.records import DocumentInfo
from rag.trace import formats

REPORTS = "docs_reports"
"""Session-state key of the report lines of the last upload (a list of FileReport)."""
LOCKED = "docs_locked"
"""Session-state key of the files waiting for a password: file name -> uploaded bytes (nothing is lost)."""
LOCKED_CODES = ("password_required", "wrong_password")


def report_line(r: FileReport) -> str:
    """``lewis.pdf: ingested 19 pages (2 by OCR), 1 chunk`` (plain text), counts pluralised as they should.

    A failed or skipped file keeps the library's own line.
    """
    if r.status != "ingested":
        return r.line()
    ocr = f" ({formats.count(r.ocr_pages)} by OCR)" if r.ocr_pages else ""
    warn = f" ({formats.plural(len(r.warnings), 'warning')})" if r.warnings else ""
    rest = r.message.partition(";")[2]  # a repaired copy says so after a semicolon
    return (f"{r.filename}: ingested {formats.plural(r.pages, 'page')}{ocr}, "
            f"{formats.plural(r.chunks, 'chunk')}{warn}" + (f";{rest}" if rest else ""))


def file_report(report: FileReport) -> None:
    """One line per file: ingested green (with its warnings), already indexed blue, else red."""
    alert = {"ingested": st.success, "already indexed": st.info}.get(report.status, st.error)
    alert(safe(report_line(report)))
    for w in report.warnings if report.status == "ingested" else ():
        st.caption(safe(f"{report.filename}: {w}"))


def page_progress(bar, position: dict[str, int],
                  clock: Callable[[], float] | None = None) -> Callable[[str, int, int, bool], None]:
    """An ``on_page(name, done, total, ocr)`` callback for ``ingest_files``, moving ``bar`` (``st.progress``).

    ``position`` holds ``file`` (0-based, the file being read) and ``files``; the bar shows page ``done`` of
    ``total`` of that file, read by OCR when ``ocr``, and once known the file's expected time left
    (:mod:`rag.ingest.eta`, as the command line shows it). ``clock``: monotonic seconds (a test's own).
    """
    def show(name: str, done: int, total: int, ocr: bool, eta_s: float | None) -> None:
        if not total or not position["files"]:
            return
        share = (position["file"] + done / total) / position["files"]
        how = " by OCR" if ocr else ""
        left = f" · {format_eta(eta_s)}" if eta_s and done < total else ""
        bar.progress(min(share, 1.0), text=f"Indexing {safe(name)}: page {done} of {total} read{how}{left}")

    return with_eta(show, clock)


def forget_reports() -> None:
    """Clear the report lines of the earlier upload (a new one is being chosen).

    Files waiting for a password keep theirs, so their password can still be typed.
    """
    reports: list[FileReport] = st.session_state.get(REPORTS, [])
    locked: dict[str, bytes] = st.session_state.get(LOCKED, {})
    reports[:] = [r for r in reports if r.code in LOCKED_CODES and r.filename in locked]


def table_rows(docs: list[DocumentInfo]) -> list[dict]:
    """One row per document (cells are plain text or numbers): file, pages, pages read by OCR, chunks, ..."""
    return [{"File": d.source, "Pages": d.pages, "OCR pages": d.ocr_pages, "Chunks": d.chunks,
             "Status": "complete" if d.complete else "incomplete: upload it again to repair",
             "Size": formats.size(d.size_bytes), "Added": _tables.when(d.added_at)} for d in docs]


def confirm(key: str) -> bool:
    """The confirm step before a delete: a box to tick, keyed ``key``; True once ticked.

    Its label holds no data (an input's label is also its accessible name, where Markdown escapes show).
    """
    return st.checkbox("Yes, delete it. This cannot be undone.", key=key)
