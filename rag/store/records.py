"""Completion records and document listings of a knowledge base (:mod:`rag.store.chroma`).

Crash safety: a document counts as indexed only once its *completion record* is stored. The
record is the metadata key ``doc_chunks`` (the document's chunk count) carried by the document's
last chunk in its last upsert, after every other chunk is stored and the document is in the keyword
index. It is honoured only when the document has exactly that many chunks stored. It lives in
the collection itself, so an embedded store and a Chroma server (``CHROMA_HOST``), every client
of that server and any data directory see the same state, and deleting the collection deletes
the records with it. A document whose chunks are stored without that record (an ingest killed
with SIGKILL, or a Chroma server that died mid-write) is *incomplete*: :meth:`KnowledgeBase.has_document` is
false for it, :meth:`KnowledgeBase.documents` lists it with ``status="incomplete"``, BM25 and
dense retrieval leave its chunks out, and the next ingest of the same bytes deletes and
re-stores it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from rag.models import Chunk
from rag.terminal import printable

PAGE_SIZE = 2000  # rows per Chroma get(); keeps memory flat on large collections

COMPLETE_KEY = "doc_chunks"
"""Chunk metadata key of the completion record: set on a document's last chunk, in its last upsert
(documents stored before this layout, and legacy records, carry it on their first chunk)."""
TEXT_KEY = "text"
"""Chunk metadata key of the chunk's text. Chroma's embedded store builds a trigram full-text index over
every ``documents`` entry, which Retrace never queries (its keyword index is BM25 in SQLite, see
:mod:`rag.store.bm25`); as metadata the text costs about half as much to store (an upsert of the 1,808
chunks of ``bench ingest``'s papers: 1.9 s against 3.3 s). Chunks stored before keep their text as
their Chroma document: :func:`row_text` reads either."""
RECORDS_FLAG = "completion_records"
"""Collection metadata flag: the collection's documents carry completion records (collections
made before them are given records for the documents they hold, once, on first open)."""


def chunk_id(doc_sha: str, index: int) -> str:
    """The id of chunk ``index`` (0-based) of the document ``doc_sha``: ``"{doc_sha[:16]}-{index:05d}"``."""
    return f"{id_prefix(doc_sha)}{index:05d}"


def id_prefix(doc_sha: str) -> str:
    """What the id of every chunk of the document ``doc_sha`` starts with: ``"{doc_sha[:16]}-"``."""
    return f"{doc_sha[:16]}-"


@dataclass(frozen=True)
class ChunkRecord:
    """One chunk ready for the store.

    ``id`` is :func:`chunk_id`, so the same bytes always give the same ids.
    ``index`` is 0-based over the whole document; ``page`` is 1-based.
    """

    id: str
    text: str
    source: str
    page: int
    index: int
    doc_sha: str
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class DocumentInfo:
    """One stored document.

    ``pages`` counts all pages of the file; ``chunks`` those stored.

    ``status`` is ``complete`` (its completion record is stored: every chunk is there) or
    ``incomplete`` (chunks without a completion record: an interrupted ingest, left out of
    retrieval; ingesting the same file again repairs it).
    """

    doc_sha: str
    source: str
    pages: int
    chunks: int
    size_bytes: int
    added_at: float
    """UNIX time in seconds."""
    status: str = "complete"
    ocr_pages: int = 0
    """How many of its pages were read by OCR (their chunks carry ``ocr: true``)."""

    @property
    def complete(self) -> bool:
        """True when every chunk of the document is stored and its completion record written."""
        return self.status == "complete"


def pages_of(get: Callable[..., dict], **query) -> Iterator[dict]:
    """What a Chroma ``get`` returns for ``query``, a page of PAGE_SIZE rows at a time, until none is left."""
    offset = 0
    while True:
        got = get(limit=PAGE_SIZE, offset=offset, **query)
        if not got["ids"]:
            return
        yield got
        offset += len(got["ids"])


def add_legacy_records(col) -> None:
    """Give a collection made before completion records existed a record for each document it holds.

    (they were reported as indexed before, so they are trusted), then flag it.
    """
    first: dict[str, tuple[int, str]] = {}
    counts: dict[str, int] = {}
    for got in pages_of(col.get, include=["metadatas"]):
        for cid, meta in zip(got["ids"], got["metadatas"], strict=False):
            sha = str((meta or {}).get("doc_sha", ""))
            idx = int((meta or {}).get("chunk_index", 0))
            counts[sha] = counts.get(sha, 0) + 1
            if sha not in first or idx < first[sha][0]:
                first[sha] = (idx, cid)
    shas = list(first)
    for start in range(0, len(shas), 1000):
        part = shas[start:start + 1000]
        col.update(ids=[first[s][1] for s in part],
                   metadatas=[{COMPLETE_KEY: counts[s]} for s in part])
    meta = dict(col.metadata or {})
    meta[RECORDS_FLAG] = 1
    meta["revision"] = int(meta.get("revision", 0)) + 1
    col.modify(metadata=meta)


def read_complete(col) -> dict[str, int]:
    """doc_sha -> chunk count of every document of the collection ``col`` that has a completion record."""
    return {str(meta.get("doc_sha", "")): int(meta[COMPLETE_KEY])
            for got in pages_of(col.get, where={COMPLETE_KEY: {"$gt": 0}}, include=["metadatas"])
            for meta in got["metadatas"]}


def read_document_texts(get: Callable[..., dict],
                        shas: list[str]) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """``(doc_sha, [(chunk id, text), ...])`` of these documents in chunk order, read with ``get``.

    ``get`` is a collection's ``get`` (Chroma's keyword arguments), pages of PAGE_SIZE rows at a time.
    """
    by_doc: dict[str, list[tuple[int, str, str]]] = {s: [] for s in shas}
    for got in pages_of(get, where={"doc_sha": {"$in": shas}}, include=["documents", "metadatas"]):
        for cid, text, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=False):
            meta = meta or {}
            by_doc.setdefault(str(meta.get("doc_sha", "")), []).append(
                (int(meta.get("chunk_index", 0)), cid, row_text(text, meta)))
    for sha in shas:
        yield sha, [(cid, text) for _, cid, text in sorted(by_doc.get(sha, []))]


def read_documents(col) -> list[DocumentInfo]:
    """Every document of the collection ``col``, newest first, from its chunks' metadata (pages of PAGE_SIZE).

    A document is ``complete`` when its completion record counts exactly the chunks stored.
    """
    docs: dict[str, dict] = {}
    records: dict[str, int] = {}
    ocr_pages: dict[str, set] = {}
    for got in pages_of(col.get, include=["metadatas"]):
        for meta in got["metadatas"]:
            sha = meta.get("doc_sha", "")
            d = docs.setdefault(sha, {"source": meta.get("source", "?"),
                                      "pages": int(meta.get("pages", 0)), "chunks": 0,
                                      "size_bytes": int(meta.get("size_bytes", 0)),
                                      "added_at": float(meta.get("added_at", 0.0))})
            d["chunks"] += 1
            if meta.get("ocr"):
                ocr_pages.setdefault(sha, set()).add(meta.get("page"))
            if meta.get(COMPLETE_KEY):
                records[sha] = int(meta[COMPLETE_KEY])
    infos = [DocumentInfo(doc_sha=sha, **d, ocr_pages=len(ocr_pages.get(sha, ())),
                          status="complete" if records.get(sha) == d["chunks"] else "incomplete")
             for sha, d in docs.items()]
    return sorted(infos, key=lambda d: (-d.added_at, d.source))


def document_statuses(col, shas: list[str], status_of: Callable[[str], str]) -> dict[str, str]:
    """``status_of(sha)`` (``complete``, ``incomplete`` or ``absent``) for each of ``shas``, in few reads.

    One read (per 500 documents) of their completion records and one of whether any of the others has a
    chunk: when none has, they are all ``absent`` without asking ``status_of`` (new files: two reads in
    all, where asking each costs one or two); the rest are asked one by one. ``col`` is the Chroma
    collection. Raises what its reads raise.
    """
    out: dict[str, str] = {}
    for start in range(0, len(shas), 500):
        part = shas[start:start + 500]
        where: dict = {"doc_sha": part[0]} if len(part) == 1 else {"doc_sha": {"$in": part}}
        got = col.get(where={"$and": [where, {COMPLETE_KEY: {"$gt": 0}}]}, include=["metadatas"])
        recorded = {(m or {}).get("doc_sha") for m in got["metadatas"]}
        rest = [s for s in part if s not in recorded]
        if rest:
            where = {"doc_sha": rest[0]} if len(rest) == 1 else {"doc_sha": {"$in": rest}}
            if not col.get(where=where, include=[], limit=1)["ids"]:
                out.update(dict.fromkeys(rest, "absent"))
        out.update({s: status_of(s) for s in part if s not in out})
    return out


class Listed(Protocol):
    """What lists its documents: a :class:`rag.store.chroma.KnowledgeBase`."""

    def documents(self) -> list[DocumentInfo]:
        """The stored documents, newest first."""
        ...


def document_lines(kb: Listed, docs: list[DocumentInfo] | None = None) -> list[str]:
    """One line per stored document for a listing (``python -m rag kb show``), newest first.

    Status, pages, chunks, OCR'd pages, file name and sha256 prefix; an incomplete document says how to
    repair it. ``docs`` defaults to ``kb.documents()``. Raises StoreUnavailable when the server cannot be
    reached.
    """
    lines = []
    for d in kb.documents() if docs is None else docs:
        mark = "ok        " if d.complete else "INCOMPLETE"
        fix = "" if d.complete else "  (interrupted ingest: ingest the same file again to repair it)"
        lines.append(f"{mark} {d.pages:>5} pages {d.chunks:>6} chunks {d.ocr_pages:>4} OCR'd  "
                     f"{printable(d.source)}  {d.doc_sha[:12]}{fix}")
    return lines


def row_text(document: str | None, meta: Mapping[str, Any] | None) -> str:
    """A stored chunk's text: its Chroma document (chunks stored before :data:`TEXT_KEY`) or its metadata."""
    return document or str((meta or {}).get(TEXT_KEY) or "")


def row_meta(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """A stored chunk's metadata without its text (:data:`TEXT_KEY`)."""
    return {k: v for k, v in (meta or {}).items() if k != TEXT_KEY}


def to_chunk(cid: str, text: str | None, meta: Mapping[str, Any] | None, score: float = 0.0) -> Chunk:
    """A :class:`Chunk` from one Chroma row (id, document, metadata); ``score`` rounded to 4 places.

    The text is the row's document or, for chunks stored since :data:`TEXT_KEY`, its metadata.
    """
    text = row_text(text, meta)
    meta = meta or {}
    return Chunk(id=cid, text=text, source=str(meta.get("source", "?")),
                 page=int(meta.get("page", 0)), index=int(meta.get("chunk_index", 0)),
                 doc_sha=str(meta.get("doc_sha", "")), score=round(score, 4), ocr=bool(meta.get("ocr")))
