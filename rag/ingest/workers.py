"""What runs in the ingest worker processes (:mod:`rag.ingest.parallel` starts them and hands them ranges).

Each worker prepares a range of a PDF's pages: text (PDFium), OCR of scanned pages, their chunks and, for a
local embedding function, the chunks' vectors. Workers never outlive the process that started them: on
Linux each asks the kernel for SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``), and on every
platform a watchdog thread ends the worker within :data:`WATCHDOG_SECONDS` of its parent's process id
changing.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time

from rag.ingest import ocr as ocr_engine
from rag.ingest import pdf as pdf_loader
from rag.ingest.chunking import chunk_document
from rag.ingest.loaders import LoadedDocument
from rag.ingest.pdf import _load_pdf_range
from rag.text import terms

WATCHDOG_SECONDS = 1.0
"""How often a worker checks that its parent is still alive."""

_progress_queue = None  # set in each worker by init_worker
_inherited_engine = None  # the parent's OCR engine in a forked worker: kept, never used


def _die_with_parent(parent_pid: int) -> None:
    """Make this worker process end when ``parent_pid`` does (see the module docstring)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            # The signal comes when the thread that forked this worker ends; the pool is made
            # and shut down by the thread that runs ingest_files, so that is the parent's life.
            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except Exception:  # no libc prctl: the watchdog below still works
            pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)

    def watchdog() -> None:
        while True:
            time.sleep(WATCHDOG_SECONDS)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watchdog, name="parent-watchdog", daemon=True).start()


def init_worker(parent_pid: int, pypdf_log_level: int, queue) -> None:
    """Set up a worker: end it with its parent, pypdf's log level, the progress ``queue``, fresh locks."""
    global _progress_queue
    _die_with_parent(parent_pid)
    logging.getLogger("pypdf").setLevel(pypdf_log_level)
    _progress_queue = queue
    # A forked child inherits the parent's module state: a PDFium lock another thread held at
    # the fork, and an OCR engine whose onnxruntime threads did not survive it. That engine
    # must never be freed here (its destructor waits on those threads forever): it is kept
    # referenced, the worker builds its own, and the worker leaves through os._exit.
    pdf_loader._PDFIUM_LOCK = threading.RLock()
    global _inherited_engine
    _inherited_engine = ocr_engine._engine
    ocr_engine._engine = None
    ocr_engine._engine_lock = threading.Lock()


_RangeChunk = tuple[str, int, dict]
"""One chunk a worker made: ``(text, page, extra metadata)`` (see :func:`prepare_range`)."""


def prepare_range(key: str, data: bytes, password: str | None, first: int, last: int,
                   ocr: bool, chunk_size: int, chunk_overlap: int, embed
                   ) -> tuple[list[tuple], list[str], list[_RangeChunk], list | None, list[str] | None]:
    """Worker task.

    Pages ``first..last`` (1-based, inclusive) as ``(number, text, ocr, layer, lines)`` tuples, their
    warnings, their chunks as ``(text, page, extra)`` (``extra``: the metadata :func:`chunk_document` gives
    beyond what :func:`chunk_record` sets for the whole document; chunks never span pages,
    so the document's chunks are the ranges' in order), and when ``embed`` is given the chunks' vectors and
    their :func:`rag.text.terms` joined by spaces (tokenised once, for the vectors and the keyword index).
    Sends ``(key, number, ocr)`` on the progress queue after each page.
    """
    def on_page(done: int, total: int, used_ocr: bool) -> None:
        if _progress_queue is not None:
            _progress_queue.put((key, first + done - 1, used_ocr))

    pages, warnings = _load_pdf_range(data, password, first, last, ocr=ocr, on_page=on_page)
    chunks: list[tuple[str, int, dict]] = []
    vectors = joined = None
    if pages:
        part = LoadedDocument(filename="part", pages=pages, page_count=last, warnings=[])
        for c in chunk_document(part, doc_sha="0" * 64, chunk_size=chunk_size, chunk_overlap=chunk_overlap):
            chunks.append((c.text, c.page, {k: v for k, v in c.metadata.items() if k not in _NOT_EXTRA}))
    if embed is not None and chunks:
        toks = [terms(t) for t, _, _ in chunks]
        embed_terms = getattr(embed, "embed_terms", None)
        vectors = ([embed_terms(t) for t in toks] if embed_terms is not None
                   else list(embed([t for t, _, _ in chunks])))
        joined = [" ".join(t) for t in toks]
    return [(p.number, p.text, p.ocr, p.layer, p.lines) for p in pages], warnings, chunks, vectors, joined


_NOT_EXTRA = ("source", "page", "chunk_index", "doc_sha")
"""Chunk metadata :func:`rag.ingest.chunking.chunk_record` sets itself when the ranges are joined."""
