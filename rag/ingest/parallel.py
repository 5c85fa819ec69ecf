"""Parse PDFs ahead of the pipeline in a process pool, page range by page range, so text
extraction (pypdf, pure Python, the slow stage) uses every core while the pipeline chunks,
embeds and stores the files already parsed."""

from __future__ import annotations

import hashlib
import logging
import os
from concurrent.futures import Future
from typing import Callable, Optional

from rag.ingest.errors import IngestError
from rag.ingest.loaders import (
    LoadedDocument,
    _suffix,
    assemble_pdf,
    extract_pages,
    load_document,
    open_pdf,
)
from rag.ingest.types import Page

PAGES_PER_TASK = 16
"""Pages one worker extracts per task: small enough that a 143-page filing spreads over
every core, large enough that re-opening the PDF per task stays cheap (about 20 ms)."""
MIN_PARALLEL_PAGES = 32
"""Below this many PDF pages to parse, starting worker processes costs more than it saves."""


def _init_worker(pypdf_log_level: int) -> None:
    logging.getLogger("pypdf").setLevel(pypdf_log_level)


def _extract_range(data: bytes, password: Optional[str], first: int, last: int
                   ) -> tuple[list[tuple[int, str]], list[str]]:
    """Worker task: text of pages ``first..last`` (1-based, inclusive) as plain tuples."""
    reader = open_pdf(data, password)
    pages, warnings = extract_pages(reader, range(first, last + 1))
    return [(p.number, p.text) for p in pages], warnings


class _Pending:
    def __init__(self, sha: str, page_count: int, futures: list[Future]) -> None:
        self.sha = sha
        self.page_count = page_count
        self.futures = futures


class PrefetchingLoader:
    """A drop-in for :func:`load_document` that has already started parsing the PDFs of a
    batch in worker processes.

    Construct it with the batch's ``(name, bytes)`` pairs, the per-name password lookup, and
    ``skip(sha)`` telling which contents need no parsing (already indexed). PDFs that open
    are split into ranges of :data:`PAGES_PER_TASK` pages and submitted at once, in batch
    order; :meth:`load` then returns a file's document from its ranges, or parses it in this
    process when it was not prefetched (text files, skipped or broken ones, a small batch,
    a single core) or when a worker failed. Errors are the ones :func:`load_document` raises,
    at the same point. Use it as a context manager: leaving it stops the workers.
    """

    def __init__(self, files: list[tuple[str, bytes]], password_for: Callable[[str], Optional[str]],
                 skip: Callable[[str], bool], *, workers: Optional[int] = None,
                 max_bytes: Optional[int] = None) -> None:
        self._pending: dict[tuple[str, str], _Pending] = {}
        self._pool = None
        workers = workers if workers is not None else (os.cpu_count() or 1)
        if workers < 2:
            return
        plans = []
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
                page_count = len(open_pdf(data, password_for(name)).pages)
            except IngestError:
                continue  # load() raises the same error, in order
            plans.append((name, sha, data, password_for(name), page_count))
        if sum(p[4] for p in plans) < MIN_PARALLEL_PAGES:
            return
        import multiprocessing
        import sys
        from concurrent.futures import ProcessPoolExecutor

        # fork where it exists: spawn and forkserver re-run the caller's __main__ in every
        # worker, which breaks any script without a main guard. The workers only run pypdf
        # on bytes they are handed, never a lock, client or thread inherited from the parent.
        ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
        self._pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=ctx, initializer=_init_worker,
            initargs=(logging.getLogger("pypdf").getEffectiveLevel(),))
        for name, sha, data, password, page_count in plans:
            futures = [self._pool.submit(_extract_range, data, password, first,
                                         min(first + PAGES_PER_TASK - 1, page_count))
                       for first in range(1, page_count + 1, PAGES_PER_TASK)]
            self._pending[(name, sha)] = _Pending(sha, page_count, futures)

    @property
    def parallel(self) -> bool:
        """True when worker processes are parsing this batch."""
        return self._pool is not None

    def load(self, filename: str, data: bytes, *, password: Optional[str] = None,
             max_bytes: Optional[int] = None) -> LoadedDocument:
        """Same contract as :func:`rag.ingest.loaders.load_document`."""
        sha = hashlib.sha256(data).hexdigest()
        pending = self._pending.pop((filename, sha), None)
        if pending is not None:
            pages: list[Page] = []
            warnings: list[str] = []
            try:
                for future in pending.futures:
                    got, warned = future.result()
                    pages += [Page(number=n, text=t) for n, t in got]
                    warnings += warned
            except IngestError:
                raise
            except Exception:  # a crashed worker: parse here instead, the result is the same
                return load_document(filename, data, password=password, max_bytes=max_bytes)
            return assemble_pdf(filename, pages, pending.page_count, warnings)
        return load_document(filename, data, password=password, max_bytes=max_bytes)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._pending.clear()

    def __enter__(self) -> "PrefetchingLoader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

