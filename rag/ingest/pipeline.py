"""The ingestion pipeline: files -> pages -> chunks -> store, with one report line per file."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from rag.ingest.chunking import (
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    chunk_document,
)
from rag.ingest.errors import IngestError
from rag.ingest.loaders import LoadedDocument, _suffix, load_document
from rag.ingest.parallel import PrefetchingLoader, RangeStream, WorkerFailed
from rag.ingest.reports import GROUP_CHUNKS, STORE_BATCH, FileReport, Prepared, StoreGroup, ingested
from rag.ingest.types import Page
from rag.secrets import scrub
from rag.store import sources
from rag.store.chroma import StoreUnavailable
from rag.store.embeddings import HashingEmbeddingFunction
from rag.text import terms

log = logging.getLogger(__name__)
FileInput = str | Path | tuple[str, bytes]


@dataclass(frozen=True)
class ChunkSettings:
    """Chunk size and overlap in characters."""

    chunk_size: int = DEFAULT_CHUNK_SIZE
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP


def _read(item: FileInput) -> tuple[str, bytes | None, str | None]:
    if isinstance(item, tuple):
        return item[0], item[1], None
    path = Path(item)
    try:
        return path.name, path.read_bytes(), None
    except OSError as exc:
        return path.name, None, f"cannot read file: {exc.strerror or exc}"


def ingest_files(kb, files: Iterable[FileInput], *, chunking: ChunkSettings = ChunkSettings(),
                 passwords: dict[str, str] | None = None, password: str | None = None,
                 max_bytes: int | None = None,
                 on_progress: Callable[[int, int, str], None] | None = None,
                 workers: int | None = None, ocr: bool = True,
                 on_page: Callable[[str, int, int, bool], None] | None = None) -> list[FileReport]:
    """Ingest each file into ``kb`` and report on each; one bad file never stops the batch.

    ``files`` are paths or ``(name, bytes)`` pairs. ``passwords`` maps file names to PDF
    passwords; ``password`` is tried for any encrypted file without its own. A file's chunks
    are stored all or not at all. The same bytes twice (even under another name) are
    ``already indexed``. ``on_progress(done, total, filename)`` is called before each file, and
    ``on_page(filename, done, total, ocr)`` after each page of a PDF (``done`` and ``total``
    count pages, ``ocr`` says whether that page was read by OCR, which takes seconds).
    ``ocr`` (default on) reads pages with no text layer, or too little text for their area,
    by OCR; their chunks carry ``ocr: True``. PDFs are prepared ahead (text, OCR, and the
    vectors of a local embedding function) in ``workers`` processes (default: one per core;
    1 does everything here) while earlier files are chunked and stored; consecutive files
    that are ready together go to the store in one write (up to :data:`GROUP_CHUNKS` chunks),
    each under its own completion record. Re-ingesting unchanged files costs only hashing.
    A file whose chunks are stored without their completion record (an ingest that was
    killed) is stored again from scratch and reported as ``ingested``.
    Raises ValueError for invalid chunk settings and StoreError (EmbeddingMismatch) when the
    knowledge base cannot take these files, both before touching any file, and
    StoreUnavailable (with ``reports``: the reports so far, the interrupted file's last) when
    the Chroma server is lost; the interrupted document is repaired by the next ingest.
    Messages never hold a key (:func:`rag.secrets.scrub`).
    """
    items = list(files)
    _ = kb.collection  # raises StoreError (e.g. EmbeddingMismatch) before any file is touched
    chunk_document(_probe_doc(), doc_sha="0" * 64, chunk_size=chunking.chunk_size,
                   chunk_overlap=chunking.chunk_overlap)  # validates the settings up front
    slots: list[FileReport | None] = [None] * len(items)  # per file, in the order given; None until reported
    seen: dict[str, str] = {}
    reads = [_read(item) for item in items]
    shas = [hashlib.sha256(data).hexdigest() if data is not None else "" for _, data, _ in reads]
    group = StoreGroup(kb, slots)

    statuses = _statuses(kb, [sha for sha in shas if sha])

    def password_for(name: str) -> str | None:
        return (passwords or {}).get(name) or password

    def indexed(sha: str) -> bool:
        return (statuses.get(sha) or kb.document_status(sha)) == "complete"

    with PrefetchingLoader([(name, data) for name, data, _ in reads if data is not None],
                           password_for, indexed, workers=workers,
                           max_bytes=max_bytes, ocr=ocr, embed=_local_embedding(kb),
                           chunking=(chunking.chunk_size, chunking.chunk_overlap)) as loader:
        order = _order(reads, shas, loader)
        try:
            for n, i in enumerate(order):
                name, data, read_error = reads[i]
                if on_progress:
                    on_progress(n, len(items), name)
                started = time.perf_counter()
                if read_error:
                    slots[i] = FileReport(name, "failed", read_error, code="unreadable")
                    continue
                assert data is not None  # read_error is set whenever data is None
                if loader.streams(name, shas[i]):
                    group.store()  # the files before it are stored first
                try:
                    got = _prepare_one(kb, name, data, chunking, password_for(name), max_bytes,
                                       seen, loader, on_page, statuses.pop(shas[i], None))
                except StoreUnavailable as exc:
                    slots[i] = FileReport(name, "failed", str(exc), code="store_unavailable",
                                          seconds=round(time.perf_counter() - started, 3))
                    raise
                if isinstance(got, FileReport):
                    got.seconds = round(time.perf_counter() - started, 3)
                    slots[i] = got
                    continue
                group.add(i, got, time.perf_counter() - started)
                later = next(((reads[j][0], shas[j]) for j in order[n + 1:]
                              if reads[j][1] is not None and shas[j] not in seen), None)
                if group.chunks >= GROUP_CHUNKS or later is None or not loader.ready(*later):
                    group.store()  # else the next file is ready too: store them together
            group.store()
        except StoreUnavailable as exc:
            group.fail(str(exc))
            exc.reports = [r for r in (slots[j] for j in order) if r is not None]  # the interrupted file last
            raise
    if on_progress:
        on_progress(len(items), len(items), "")
    return [r for r in slots if r is not None]


def _statuses(kb, shas: list[str]) -> dict[str, str]:
    """Each document's status before the ingest, asked all at once (see ``KnowledgeBase.document_statuses``).

    Empty for a knowledge base without that method: each file's status is then asked as it comes.
    """
    lookup = getattr(kb, "document_statuses", None)
    return dict(lookup(shas)) if lookup is not None and shas else {}


def _order(reads: list, shas: list[str], loader: PrefetchingLoader) -> list[int]:
    """The order to take the files in (indexes into ``reads``).

    First the files this process loads itself (while the workers start), then the workers' files in the
    order they take them (largest first); a copy of a file comes right after it.
    """
    queue: dict[str, int] = {}  # sha -> where the workers take it (a file unread has no sha: "")
    for (name, _, _), sha in zip(reads, shas, strict=True):
        position = loader.position(name, sha)
        if position is not None:
            queue.setdefault(sha, position)

    def key(i: int) -> tuple[int, int, int]:
        return (1, queue[shas[i]], i) if shas[i] in queue else (0, i, 0)

    return sorted(range(len(reads)), key=key)


def _probe_doc():
    return LoadedDocument(filename="probe", pages=[Page(1, "probe")], page_count=1, warnings=[])


def _local_embedding(kb):
    """``kb``'s embedding function when it runs locally and can be sent to worker processes.

    (the hashing embeddings); None for one that calls a service (it runs in this process).
    """
    ef = getattr(kb, "embedding_function", None)
    return ef if isinstance(ef, HashingEmbeddingFunction) else None


def _prepare_one(kb, name: str, data: bytes, chunking: ChunkSettings, password: str | None,
                 max_bytes: int | None, seen: dict[str, str], loader=None,
                 on_page: Callable[[str, int, int, bool], None] | None = None,
                 status: str | None = None) -> FileReport | Prepared:
    """Load and chunk one file for the store, or its report when there is nothing to store.

    (already indexed, or failed). ``status`` is its :meth:`KnowledgeBase.document_status` when known
    already. Raises StoreUnavailable when the store cannot be asked about it.
    """
    sha = hashlib.sha256(data).hexdigest()
    if sha in seen:
        return FileReport(name, "already indexed",
                          f"already indexed (same content as {seen[sha]})", doc_sha=sha)
    try:
        status = status or kb.document_status(sha)
        if status == "complete":
            seen[sha] = name
            _keep_original(kb, name, sha, data)  # indexed before originals were kept: keep it now
            return FileReport(name, "already indexed", "already indexed", doc_sha=sha)
        page_cb = (lambda done, total, ocr: on_page(name, done, total, ocr)) if on_page else None
        if loader is not None and loader.streams(name, sha):
            try:
                return _stream_one(kb, name, data, sha, status, loader.stream(name, sha, page_cb), seen)
            except WorkerFailed as exc:  # load it here instead: the result is the same
                log.warning("%s; loading it in this process", exc)
        doc, chunks = _load_and_chunk(name, data, sha, chunking, password, max_bytes, loader, page_cb)
        if not chunks:
            return FileReport(name, "failed", "no extractable text", code="no_extractable_text",
                              doc_sha=sha)
        if problem := _keep_original(kb, name, sha, data):
            doc = LoadedDocument(doc.filename, doc.pages, doc.page_count, [*doc.warnings, problem],
                                 doc.ocr_pages)
        prepared = loader.prepared(sha, [c.text for c in chunks]) if loader is not None else None
        local = _local_embedding(kb)
        if prepared is None and local is not None:  # tokenise once, here, for vectors and keywords
            terms_ = [terms(c.text) for c in chunks]
            prepared = [local.embed_terms(t) for t in terms_], terms_
    except IngestError as exc:
        return FileReport(name, "failed", scrub(exc.message), code=exc.code, doc_sha=sha)
    except StoreUnavailable:
        raise  # no later file can be stored either: the caller says so in one line
    except Exception as exc:  # a parser bug: report it on this file, keep the batch going
        return FileReport(name, "failed",
                          scrub(f"unexpected error: {type(exc).__name__}: {exc}")[:300],
                          code="error", doc_sha=sha)
    seen[sha] = name
    if prepared is None:
        return Prepared(name, sha, len(data), doc, chunks, None, None, status)
    return Prepared(name, sha, len(data), doc, chunks, prepared[0], prepared[1], status)


def _stream_one(kb, name: str, data: bytes, sha: str, status: str, stream: RangeStream,
                seen: dict[str, str]) -> FileReport:
    """Store a large prefetched PDF range by range as the workers finish (see ``add_document_stream``)."""
    problem = _keep_original(kb, name, sha, data)
    chunks: list = []

    def parts():
        for part in stream.parts():
            chunks.extend(part[0])
            yield part

    kb.add_document_stream(parts(), pages=stream.page_count, size_bytes=len(data), batch_size=STORE_BATCH)
    doc = stream.document()  # raises NoExtractableText when no page had text (nothing was stored then)
    if not chunks:
        return FileReport(name, "failed", "no extractable text", code="no_extractable_text", doc_sha=sha)
    if problem:
        doc = LoadedDocument(doc.filename, doc.pages, doc.page_count, [*doc.warnings, problem], doc.ocr_pages)
    seen[sha] = name
    return ingested(Prepared(name, sha, len(data), doc, chunks, None, None, status))


def _load_and_chunk(name: str, data: bytes, sha: str, chunking: ChunkSettings, password: str | None,
                    max_bytes: int | None, loader, page_cb) -> tuple[LoadedDocument, list]:
    """The file's document and its chunks: made by the loader's workers when they prepared it, else here."""
    if loader is None:
        doc = load_document(name, data, password=password, max_bytes=max_bytes, on_page=page_cb)
        chunks = None
    else:
        doc = loader.load(name, data, password=password, max_bytes=max_bytes, on_page=page_cb)
        chunks = loader.chunk_records(name, sha)
    if chunks is None:
        chunks = chunk_document(doc, doc_sha=sha, chunk_size=chunking.chunk_size,
                                chunk_overlap=chunking.chunk_overlap)
    return doc, chunks


def _keep_original(kb, name: str, sha: str, data: bytes) -> str | None:
    """Keep a PDF's bytes in the data directory for the page view of its citations (:mod:`.sources`).

    Returns a one-line warning when it cannot be kept (the document is indexed all the same), else None.
    """
    data_dir = getattr(kb, "data_dir", None)
    if data_dir is None or _suffix(name) != ".pdf":
        return None
    try:
        sources.keep(data_dir, kb.name, sha, data)
    except (OSError, ValueError) as exc:
        return scrub(f"its pages cannot be shown with citations: the file could not be kept ({exc})")[:300]
    return None
