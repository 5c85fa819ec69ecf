"""Prepare PDFs ahead of the pipeline in worker processes, page range by page range.

Text (PDFium), OCR of scanned pages, and, for a local embedding function, the chunks' vectors. The pipeline
then only chunks (cheap) and writes to the store while the workers prepare the next files, so both cores work.

This module is the parent's side (what to prepare, where, and taking the results back); what runs in the
workers, and how they never outlive this process, is :mod:`rag.ingest.workers`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import NamedTuple

from rag.ingest import pdf as pdf_loader
from rag.ingest.chunking import chunk_record
from rag.ingest.errors import IngestError
from rag.ingest.inflation import check_inflation
from rag.ingest.loaders import LoadedDocument, _suffix, assemble_pdf, load_document
from rag.ingest.types import ChunkRecord, Page
from rag.ingest.workers import init_worker, prepare_range

log = logging.getLogger(__name__)

PAGES_PER_TASK = 16
"""Pages one worker prepares per task: small enough that a 143-page filing spreads over every
core, large enough that re-opening the PDF per task stays cheap (a few ms with PDFium)."""
STREAM_MIN_RANGES = 4
"""A file prepared in at least this many ranges is stored range by range as they finish (its chunks
are then likely to fill several upserts), so that little of it is left to store once the workers are done."""
MIN_PARALLEL_PAGES = 32
"""Below this many PDF pages to prepare (and fewer than :data:`MIN_PARALLEL_SCANS` scanned ones), starting
worker processes costs more than it saves."""
MIN_PARALLEL_SCANS = 2
"""From this many scanned pages (estimated with :func:`rag.ingest.pdf.scanned_share`), workers are started
however few pages the batch has: each such page takes seconds of OCR, a worker's start about half a second."""
OCR_PAGES_PER_TASK = 1
"""Pages per task in a file that is mostly scanned, so every core reads pages until the last one (17 scanned
pages in 7 files, ``bench ingest --ocr-files``: 8.8 s, against 10.0 s with this batch read in one process
and 12.0 s with ranges of 16 pages and one recognition thread a worker)."""
OCR_TASK_BYTES = 16 << 20
"""Each task sends the whole file to its worker: a scanned file gets one more page per task for every this
many bytes it has (up to :data:`PAGES_PER_TASK`), so a 200 MB scan is not copied once per page."""
SCAN_ESTIMATES = 32
"""At most this many files of a batch get :func:`rag.ingest.pdf.scanned_share` (3-10 ms a text PDF): the
others are scheduled as text, so a batch of a thousand papers does not wait seconds before its workers start
(their scanned pages are read by OCR all the same, in ranges of :data:`PAGES_PER_TASK`)."""
OCR_PAGE_COST = 500
"""A page read by OCR costs about as much as this many text pages (1-7 s against 3-10 ms here): the weight
that orders files for the workers, costliest first."""
TEST_HOOK_ENV = "RETRACE_TEST_PAUSE_AFTER_WORKERS_START"
"""Test hook: when set to a file path, the parent writes its workers' process ids there once
they have started, then sleeps (at most 120 s) so a test can kill it at a known point."""


def _pages(got: list[tuple]) -> list[Page]:
    """A range's pages from the ``(number, text, ocr, layer, lines)`` tuples of :func:`prepare_range`."""
    return [Page(number=n, text=t, ocr=o, layer=raw, lines=lines) for n, t, o, raw, lines in got]


def _report_rest(done: int, total: int, on_page: Callable[[int, int, bool], None] | None) -> None:
    """Report pages ``done + 1 .. total``, whose events are still in flight, once every range is back."""
    if on_page:
        for n in range(done + 1, total + 1):
            on_page(n, total, False)


class WorkerFailed(RuntimeError):
    """A worker process failed on a range (not the file's fault): load the file in this process instead."""


class RangeStream:
    """One prefetched file's chunks, range by range in page order, as the workers finish them.

    Iterate :meth:`parts` (each ``(chunks, vectors, terms)``: :class:`ChunkRecord` numbered across the
    whole file, and the workers' vectors and :func:`rag.text.terms`, or None without a local embedding),
    then :meth:`document` gives the :class:`LoadedDocument` (raises NoExtractableText when no page had
    text). The chunks are exactly :func:`chunk_document`'s for the whole file. A range's IngestError is
    raised as it is; any other worker failure raises :class:`WorkerFailed`.
    """

    def __init__(self, loader: PrefetchingLoader, filename: str, sha: str, pending: _Pending,
                 on_page: Callable[[int, int, bool], None] | None) -> None:
        """Follow ``pending`` (the file's ranges); ``on_page(done, total, ocr)`` after each page."""
        self.loader, self.filename, self.sha = loader, filename, sha
        self.page_count = pending.page_count
        self._futures = pending.futures
        self._on_page = on_page
        self._pages: list[Page] = []
        self._warnings: list[str] = []
        self._done = 0

    def parts(self) -> Iterator[tuple[list[ChunkRecord], list | None, list[list[str]] | None]]:
        """Yield each range's ``(chunks, vectors, terms)`` once it is prepared, in page order."""
        index = 0
        for future in self._futures:
            while not future.done():
                wait([future], timeout=0.25)
                self._done = self.loader._report(self.sha, self._done, self.page_count, self._on_page)
            try:
                got, warned, chunks, vectors, joined = future.result()
            except IngestError:
                raise
            except Exception as exc:
                raise WorkerFailed(f"worker failed on {self.filename}: {exc}") from exc
            self._done = self.loader._report(self.sha, self._done, self.page_count, self._on_page)
            self._pages += _pages(got)
            self._warnings += warned
            records = [chunk_record(self.sha, self.filename, index + i, text, page, extra)
                       for i, (text, page, extra) in enumerate(chunks)]
            index += len(records)
            yield records, vectors, None if joined is None else [j.split() for j in joined]

    def document(self) -> LoadedDocument:
        """The file's document, once :meth:`parts` is exhausted."""
        _report_rest(self._done, self.page_count, self._on_page)
        self._done = self.page_count
        return assemble_pdf(self.filename, self._pages, self.page_count, self._warnings,
                            ocr=self.loader._ocr)


class _Plan(NamedTuple):
    """A PDF the workers will prepare: its page count and estimated scanned pages decide its ranges."""

    name: str
    sha: str
    data: bytes
    password: str | None
    pages: int
    scans: int


class _Pending:
    def __init__(self, sha: str, page_count: int, futures: list[Future]) -> None:
        self.sha = sha
        self.page_count = page_count
        self.futures = futures


class PrefetchingLoader:
    """A drop-in for :func:`load_document` that has started preparing a batch's PDFs in worker processes.

    Construct it with the batch's ``(name, bytes)`` pairs, the per-name password lookup, and
    ``skip(sha)`` telling which contents need no parsing (already indexed). PDFs that open
    are split into ranges of :data:`PAGES_PER_TASK` pages (:data:`OCR_PAGES_PER_TASK` in a
    mostly scanned one) and submitted at once, costliest file first; :meth:`load` then returns
    a file's document from its ranges, or loads it in this process when it was not prefetched
    (other types, skipped or broken files, a small batch with fewer than
    :data:`MIN_PARALLEL_SCANS` scanned pages, a single core) or when a worker failed. Errors are
    the ones :func:`load_document` raises, at the same point. ``ocr`` is passed on to
    :func:`load_document`. With ``embed`` (a local, picklable embedding function) and
    ``chunking`` (``(chunk_size, chunk_overlap)``), workers also embed the chunks:
    :meth:`embeddings` returns them. Use it as a context manager: leaving it stops the workers.
    """

    def __init__(self, files: list[tuple[str, bytes]], password_for: Callable[[str], str | None],
                 skip: Callable[[str], bool], *, workers: int | None = None,
                 max_bytes: int | None = None, ocr: bool = True, embed=None,
                 chunking: tuple[int, int] = (1000, 150)) -> None:
        """Start preparing the batch's PDFs in worker processes (see the class docstring)."""
        self._pending: dict[tuple[str, str], _Pending] = {}
        self._queue_position: dict[tuple[str, str], int] = {}  # (name, sha) -> where the workers take it
        self._vectors: dict[str, tuple[list[str], list, list[str]]] = {}
        self._chunks: dict[str, list[tuple[str, int, dict]]] = {}
        self._events: dict[str, list[tuple[int, bool]]] = {}
        self._pool = None
        self._queue = None
        self._ocr = ocr
        workers = workers if workers is not None else (os.cpu_count() or 1)
        if workers < 2:
            return
        plans: list[_Plan] = []
        seen: set[str] = set()
        for name, data in files:
            if data is None or _suffix(name) != ".pdf" or (max_bytes is not None and len(data) > max_bytes):
                continue
            sha = hashlib.sha256(data).hexdigest()
            try:
                if sha in seen or skip(sha):
                    continue
            except Exception:  # a store error: the pipeline reports it on this file itself
                continue
            seen.add(sha)
            try:
                check_inflation(data)
            except IngestError:  # loaded in this process, which refuses it in one line
                continue
            pdf = pdf_loader._open_pdfium(data, password_for(name))
            if pdf is None:  # pypdf's fallback (or its error): loaded in this process, in order
                continue
            with pdf_loader._PDFIUM_LOCK:
                page_count = len(pdf)
                scans = round(pdf_loader.scanned_share(pdf) * page_count) \
                    if ocr and len(plans) < SCAN_ESTIMATES else 0
                pdf.close()
            plans.append(_Plan(name, sha, data, password_for(name), page_count, scans))
        if (sum(p.pages for p in plans) < MIN_PARALLEL_PAGES
                and sum(p.scans for p in plans) < MIN_PARALLEL_SCANS):
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # fork where it exists: spawn and forkserver re-run the caller's __main__ in every
        # worker, which breaks any script without a main guard. The workers only run PDFium,
        # OCR and the local embedding on bytes they are handed, never a lock, client or thread
        # inherited from the parent (init_worker resets the ones the ingest modules hold).
        ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
        self._queue = ctx.SimpleQueue()
        self._pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=ctx, initializer=init_worker,
            initargs=(os.getpid(), logging.getLogger("pypdf").getEffectiveLevel(), self._queue))
        size, overlap = chunking
        # The costliest files first (longest-processing-time-first order): their ranges are stored as they
        # finish while the workers prepare the small files, which then leave little to store at the end.
        plans.sort(key=lambda p: -(p.pages - p.scans + p.scans * OCR_PAGE_COST))
        for name, sha, data, password, page_count, scans in plans:
            step = (min(PAGES_PER_TASK, OCR_PAGES_PER_TASK + len(data) // OCR_TASK_BYTES)
                    if scans * 2 >= page_count else PAGES_PER_TASK)
            futures = [self._pool.submit(prepare_range, sha, data, password, first,
                                         min(first + step - 1, page_count), ocr, size, overlap, embed)
                       for first in range(1, page_count + 1, step)]
            self._pending[(name, sha)] = _Pending(sha, page_count, futures)
            self._queue_position[(name, sha)] = len(self._queue_position)
        self._test_pause()

    def _test_pause(self) -> None:
        path = os.environ.get(TEST_HOOK_ENV)
        if not path or self._pool is None:
            return
        pids = sorted(getattr(self._pool, "_processes", {}) or {})
        with open(path + ".tmp", "w") as fh:
            fh.write(" ".join(map(str, pids)))
        os.replace(path + ".tmp", path)
        time.sleep(120)

    @property
    def parallel(self) -> bool:
        """True when worker processes are preparing this batch."""
        return self._pool is not None

    def ready(self, filename: str, sha: str) -> bool:
        """True unless the workers are still preparing the file ``filename`` (with sha256 ``sha``).

        A file they never took (another type, a small batch) is ready: :meth:`load` reads it here.
        """
        pending = self._pending.get((filename, sha))
        return pending is None or all(f.done() for f in pending.futures)

    def position(self, filename: str, sha: str) -> int | None:
        """Where the workers take this file in their queue (0 first; None when they do not take it).

        Files are taken largest first; process them in this order.
        """
        return self._queue_position.get((filename, sha))

    def streams(self, filename: str, sha: str) -> bool:
        """True when the file is prepared in at least :data:`STREAM_MIN_RANGES` ranges: :meth:`stream` it."""
        pending = self._pending.get((filename, sha))
        return pending is not None and len(pending.futures) >= STREAM_MIN_RANGES

    def stream(self, filename: str, sha: str,
               on_page: Callable[[int, int, bool], None] | None = None) -> RangeStream:
        """The chunks of the file ``filename`` (sha256 ``sha``) range by range, as the workers finish them.

        See :class:`RangeStream`. Only for a file that :meth:`streams`; raises KeyError for another.
        """
        return RangeStream(self, filename, sha, self._pending.pop((filename, sha)), on_page)

    def _report(self, sha: str, done: int, total: int,
                on_page: Callable[[int, int, bool], None] | None) -> int:
        """Report the pages of the file ``sha`` finished since ``done`` were; returns the new count."""
        self._drain()
        for _number, used_ocr in self._events.pop(sha, []):
            done += 1
            if on_page:
                on_page(done, total, used_ocr)
        return done

    def _drain(self) -> None:
        while self._queue is not None and not self._queue.empty():
            key, number, used_ocr = self._queue.get()
            self._events.setdefault(key, []).append((number, used_ocr))

    def load(self, filename: str, data: bytes, *, password: str | None = None,
             max_bytes: int | None = None,
             on_page: Callable[[int, int, bool], None] | None = None) -> LoadedDocument:
        """Same contract as :func:`rag.ingest.loaders.load_document` (``ocr`` as given to the constructor).

        ``on_page(done, total, ocr)`` is called for each page as workers finish it.
        """
        sha = hashlib.sha256(data).hexdigest()
        pending = self._pending.pop((filename, sha), None)
        if pending is None:
            return load_document(filename, data, password=password, max_bytes=max_bytes,
                                 ocr=self._ocr, on_page=on_page)
        pages: list[Page] = []
        warnings: list[str] = []
        chunks: list[tuple[str, int, dict]] = []
        vectors: list = []
        joined: list[str] = []
        embedded = True
        try:
            done = self._wait(pending, sha, on_page)
            for future in pending.futures:
                got, warned, part_chunks, part_vectors, part_terms = future.result()
                pages += _pages(got)
                warnings += warned
                chunks += part_chunks
                if part_vectors is None or part_terms is None:
                    embedded = embedded and not part_chunks
                else:
                    vectors += part_vectors
                    joined += part_terms
        except IngestError:
            raise
        except Exception as exc:  # a crashed worker: load here instead, the result is the same
            log.warning("worker failed on %s (%s); loading it in this process", filename, exc)
            return load_document(filename, data, password=password, max_bytes=max_bytes,
                                 ocr=self._ocr, on_page=on_page)
        _report_rest(done, pending.page_count, on_page)
        texts = [t for t, _, _ in chunks]
        self._chunks[sha] = chunks
        if embedded:
            self._vectors[sha] = (texts, vectors, joined)
        return assemble_pdf(filename, pages, pending.page_count, warnings, ocr=self._ocr)

    def chunk_records(self, filename: str, doc_sha: str) -> list[ChunkRecord] | None:
        """The chunks the workers made of the document ``doc_sha`` (the file ``filename``), or None.

        Exactly what :func:`rag.ingest.chunking.chunk_document` gives for the document :meth:`load`
        returned (chunks never span pages, so the ranges' chunks, renumbered, are the document's); None
        when it was loaded in this process (the caller chunks it).
        """
        chunks = self._chunks.pop(doc_sha, None)
        if chunks is None:
            return None
        return [chunk_record(doc_sha, filename, i, text, page, extra)
                for i, (text, page, extra) in enumerate(chunks)]

    def _wait(self, pending, sha: str, on_page: Callable[[int, int, bool], None] | None) -> int:
        """Wait for every range of one file, reporting pages as they finish; returns how many were reported.

        Raises a worker's error as soon as its range fails.
        """
        done = 0
        waiting = set(pending.futures)
        while waiting:
            finished, waiting = wait(waiting, timeout=0.25, return_when=FIRST_COMPLETED)
            done = self._report(sha, done, pending.page_count, on_page)
            for future in finished:
                future.result()  # raise a worker's error now
        return done

    def embeddings(self, doc_sha: str, chunk_texts: list[str]) -> list | None:
        """The vectors the workers computed for the chunks of the document ``doc_sha``.

        When they are exactly ``chunk_texts`` (in order); else None (the store embeds them).
        """
        got = self.prepared(doc_sha, chunk_texts)
        return None if got is None else got[0]

    def prepared(self, doc_sha: str, chunk_texts: list[str]) -> tuple[list, list[list[str]]] | None:
        """The vectors and :func:`rag.text.terms` the workers computed for the chunks of ``doc_sha``.

        When they are exactly ``chunk_texts`` (in order); else None (the store embeds and tokenises them).
        """
        texts, vectors, joined = self._vectors.pop(doc_sha, (None, None, None))
        if (texts is None or vectors is None or joined is None or texts != chunk_texts
                or not len(vectors) == len(joined) == len(texts)):
            return None
        return vectors, [j.split() for j in joined]

    def close(self) -> None:
        """Stop the workers and forget what they prepared; safe to call twice."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._queue is not None:
            self._queue.close()
            self._queue = None
        self._pending.clear()
        self._vectors.clear()
        self._chunks.clear()

    def __enter__(self) -> PrefetchingLoader:
        """Use the loader in a ``with`` block; leaving it stops the workers."""
        return self

    def __exit__(self, *exc) -> None:
        """Stop the workers (see :meth:`close`)."""
        self.close()
