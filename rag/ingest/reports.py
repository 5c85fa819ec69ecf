"""What an ingest reports per file, and files waiting to be stored together (:mod:`rag.ingest.pipeline`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

from rag.ingest.loaders import LoadedDocument
from rag.secrets import scrub
from rag.store.chroma import StoreUnavailable
from rag.terminal import printable

Status = Literal["ingested", "already indexed", "failed"]


@dataclass
class FileReport:
    """The outcome for one file.

    ``code`` is the IngestError code when it failed (``password_required``, ``no_extractable_text``, ...);
    ``pages`` counts every page and ``ocr_pages`` those read by OCR; ``seconds`` is wall time.
    """

    filename: str
    status: Status
    message: str
    code: str = ""
    doc_sha: str = ""
    pages: int = 0
    chunks: int = 0
    ocr_pages: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True unless the file failed."""
        return self.status != "failed"

    def line(self) -> str:
        r"""One line a person can read, its control characters escaped (:func:`rag.terminal.printable`).

        For example ``lewis.pdf: ingested 19 pages, 88 chunks`` or
        ``scan.pdf: ingested 3 pages (3 by OCR), 7 chunks``; a file named ``a<ESC>[31m<newline>b.pdf``
        is shown as ``a\x1b[31m\nb.pdf``.
        """
        return printable(f"{self.filename}: {self.message}")


GROUP_CHUNKS = 512
"""At most about this many chunks of consecutive files go to the store together (see :class:`StoreGroup`)."""


@dataclass
class Prepared:
    """A file loaded and chunked, waiting for the store."""

    name: str
    sha: str
    size: int
    doc: LoadedDocument
    chunks: list
    vectors: list | None  # one per chunk when computed already (local embeddings), else None
    toks: list[list[str]] | None  # their rag.text.terms, with the vectors
    status: str  # document_status before this ingest: "absent" or "incomplete"


class StoreGroup:
    """Files prepared for the store, stored together in one :meth:`KnowledgeBase.add_documents` call.

    Each Chroma upsert costs tens of ms whatever its size, and the keyword index one transaction, so files
    whose successors are already prepared wait for them (up to :data:`GROUP_CHUNKS` chunks): the store is
    then written once for all of them. Each file's chunks are still stored all or not at all, under its
    own completion record. ``slots`` receives each file's report at its position.
    """

    def __init__(self, kb, slots: list[FileReport | None]) -> None:
        """Nothing waits yet; reports go to ``slots`` (one per file, in the order given)."""
        self.kb = kb
        self.slots = slots
        self.items: list[tuple[int, Prepared, float]] = []
        self.chunks = 0

    def add(self, slot: int, prepared: Prepared, seconds: float) -> None:
        """Let ``prepared`` wait for the store; its report goes to ``slots[slot]`` (``seconds``: so far)."""
        self.items.append((slot, prepared, seconds))
        self.chunks += len(prepared.chunks)

    def store(self) -> None:
        """Write the waiting files; raises StoreUnavailable (their reports then say so, see :meth:`fail`)."""
        if not self.items:
            return
        started = time.perf_counter()
        vectors: dict[str, object] = {}
        toks: dict[str, list[str]] = {}
        for _, p, _ in self.items:
            if p.vectors is not None and p.toks is not None:
                vectors.update(zip((c.id for c in p.chunks), p.vectors, strict=True))
                toks.update(zip((c.id for c in p.chunks), p.toks, strict=True))
        error = None
        try:
            # several files: one upsert (each costs Chroma tens of ms), split by the store at the most one
            # upsert may hold (KnowledgeBase.max_batch_size); one large file: upserts of STORE_BATCH
            batch = STORE_BATCH if len(self.items) == 1 else max(STORE_BATCH, self.chunks)
            self.kb.add_documents([(p.chunks, p.doc.page_count, p.size) for _, p, _ in self.items],
                                  batch_size=batch, embeddings=vectors or None, terms=toks or None)
        except StoreUnavailable:
            raise
        except Exception as exc:  # a store bug: the files it did not store completely fail, the batch goes on
            error = scrub(f"unexpected error: {type(exc).__name__}: {exc}")[:300]
        share = (time.perf_counter() - started) / max(1, self.chunks)
        for slot, p, seconds in self.items:
            report = ingested(p)
            if error is not None and self._status(p.sha) != "complete":
                report = FileReport(p.name, "failed", error, code="error", doc_sha=p.sha)
            report.seconds = round(seconds + share * len(p.chunks), 3)
            self.slots[slot] = report
        self.items, self.chunks = [], 0

    def _status(self, sha: str) -> str:
        try:
            return str(self.kb.document_status(sha))
        except Exception:
            return "unknown"

    def fail(self, message: str) -> None:
        """The store is gone: every waiting file fails with ``message``."""
        for slot, p, seconds in self.items:
            self.slots[slot] = FileReport(p.name, "failed", message, code="store_unavailable", doc_sha=p.sha,
                                          seconds=round(seconds, 3))
        self.items, self.chunks = [], 0


STORE_BATCH = 256
"""Chunks per Chroma upsert when files are stored (:meth:`KnowledgeBase.add_documents`)."""


def ingested(p: Prepared) -> FileReport:
    """The report of a file stored completely."""
    doc = p.doc
    pages = f"{doc.page_count} page{'s' if doc.page_count != 1 else ''}"
    if doc.ocr_pages:
        pages += f" ({len(doc.ocr_pages)} by OCR)"
    warn = f" ({len(doc.warnings)} warning(s))" if doc.warnings else ""
    repaired = ("; replaced the incomplete copy an interrupted ingest had left"
                if p.status == "incomplete" else "")
    n = len(p.chunks)
    chunks = f"{n} chunk{'s' if n != 1 else ''}"
    return FileReport(p.name, "ingested", f"ingested {pages}, {chunks}{warn}{repaired}",
                      doc_sha=p.sha, pages=doc.page_count, chunks=len(p.chunks),
                      ocr_pages=len(doc.ocr_pages), warnings=list(doc.warnings))
