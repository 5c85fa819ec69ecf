"""Chroma client factory and the knowledge base (one Chroma collection per knowledge base)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import chromadb
from chromadb.api import ClientAPI
from chromadb.api.types import EmbeddingFunction

from rag.config import DEFAULT_COLLECTION, Settings
from rag.ingest.types import ChunkRecord
from rag.models import Chunk
from rag.store.embeddings import embedding_identity, make_embedding_function

_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,61}[a-zA-Z0-9]$")
PAGE_SIZE = 2000  # rows per Chroma get(); keeps memory flat on large collections


class StoreError(Exception):
    """A knowledge-base operation was refused; the message says what to do."""


class EmbeddingMismatch(StoreError):
    """The collection was built with another embedding model than the one asked for."""


def make_client(settings: Settings) -> ClientAPI:
    """A Chroma client: ``HttpClient`` when ``settings.chroma_host`` is set, else an embedded
    ``PersistentClient`` under ``settings.data_dir / "chroma"``. Telemetry is off."""
    chroma_settings = chromadb.config.Settings(anonymized_telemetry=False, allow_reset=False)
    if settings.chroma_host:
        return chromadb.HttpClient(host=settings.chroma_host, port=settings.chroma_port,
                                   settings=chroma_settings)
    path = settings.data_dir / "chroma"
    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=chroma_settings)


def validate_collection_name(name: str) -> str:
    """Return ``name`` if Chroma accepts it (3-63 chars of letters, digits, ``._-``); else ValueError."""
    if not _NAME.match(name or "") or ".." in name:
        raise ValueError(
            f"invalid knowledge base name {name!r}: use 3-63 letters, digits, '.', '_' or '-', "
            "starting and ending with a letter or digit")
    return name


@dataclass(frozen=True)
class DocumentInfo:
    """One indexed document. ``pages`` counts all pages of the file; ``chunks`` those stored."""

    doc_sha: str
    source: str
    pages: int
    chunks: int
    size_bytes: int
    added_at: float
    """UNIX time in seconds."""


class KnowledgeBase:
    """A named knowledge base: one Chroma collection with a fixed embedding function.

    The collection's metadata records the embedding model that built it (``embedding``) and a
    ``revision`` counter raised on every change, so caches derived from its contents
    (lexical statistics) know when to rebuild. ``data_dir`` is where such derived indexes
    persist (the BM25 index under ``bm25/<name>/``); None keeps them in memory only.
    """

    def __init__(self, client: ClientAPI, name: str, embedding_function: EmbeddingFunction,
                 *, data_dir: Path | None = None) -> None:
        self.client = client
        self.name = validate_collection_name(name)
        self.embedding_function = embedding_function
        self.data_dir = data_dir
        self._collection = None

    @property
    def collection(self):
        """The Chroma collection, created on first use.

        Raises EmbeddingMismatch when it holds chunks embedded by another model (an empty
        collection is simply rebuilt for the current one).
        """
        if self._collection is None:
            ident = embedding_identity(self.embedding_function)
            try:
                col = self.client.get_or_create_collection(
                    self.name, embedding_function=self.embedding_function,
                    metadata={"embedding": ident, "revision": 0})
                built_with = (col.metadata or {}).get("embedding")
            except ValueError as exc:  # Chroma refuses another embedding function's name
                if "conflict" not in str(exc).lower():
                    raise
                col, built_with = None, self._persisted_embedding()
            if (col is None or (built_with and built_with != ident)) and self._is_empty():
                # Nothing is stored yet, so nothing can be mixed: rebuild it for this model.
                self.client.delete_collection(self.name)
                col, built_with = self.client.create_collection(
                    self.name, embedding_function=self.embedding_function,
                    metadata={"embedding": ident, "revision": 0}), ident
            if col is None or (built_with and built_with != ident):
                raise EmbeddingMismatch(
                    f"knowledge base '{self.name}' was built with embeddings '{built_with}', not "
                    f"'{ident}'. Re-index it: delete the knowledge base and ingest its files "
                    "again with the current embedding model, or switch back to the old one.")
            self._collection = col
        return self._collection

    def _is_empty(self) -> bool:
        return self.client.get_collection(self.name).count() == 0

    def _persisted_embedding(self) -> str:
        for col in self.client.list_collections():
            if getattr(col, "name", col) == self.name:
                return str((getattr(col, "metadata", None) or {}).get("embedding", "another model"))
        return "another model"

    # -- state ---------------------------------------------------------------------------
    def count(self) -> int:
        """Number of stored chunks."""
        return self.collection.count()

    def revision(self) -> int:
        """A counter raised on every add or delete (0 for a new knowledge base)."""
        self.collection  # created (and its embedding checked) on first use
        meta = self.client.get_collection(self.name, embedding_function=self.embedding_function).metadata
        return int((meta or {}).get("revision", 0))

    def fingerprint(self) -> tuple[str, int, int]:
        """(name, revision, chunk count): changes whenever the contents change."""
        return (self.name, self.revision(), self.count())

    def _bump(self) -> None:
        col = self.client.get_collection(self.name, embedding_function=self.embedding_function)
        meta = dict(col.metadata or {})
        meta["revision"] = int(meta.get("revision", 0)) + 1
        meta.setdefault("embedding", embedding_identity(self.embedding_function))
        col.modify(metadata=meta)

    # -- writes --------------------------------------------------------------------------
    def has_document(self, doc_sha: str) -> bool:
        """True when any chunk of the document with this sha256 is stored."""
        got = self.collection.get(where={"doc_sha": doc_sha}, limit=1, include=[])
        return bool(got["ids"])

    def add_document(self, chunks: list[ChunkRecord], *, pages: int, size_bytes: int,
                     batch_size: int = 256, embeddings: list | None = None) -> int:
        """Store all ``chunks`` of one document, or none of them.

        ``embeddings`` may carry precomputed vectors (one per chunk). On any failure the
        document's chunks already written are deleted again and the error is re-raised.
        Returns the number of chunks stored.
        """
        if not chunks:
            return 0
        doc_sha = chunks[0].doc_sha
        now = time.time()
        try:
            for start in range(0, len(chunks), batch_size):
                part = chunks[start:start + batch_size]
                kwargs = {}
                if embeddings is not None:
                    kwargs["embeddings"] = embeddings[start:start + batch_size]
                self.collection.upsert(
                    ids=[c.id for c in part],
                    documents=[c.text for c in part],
                    metadatas=[{**c.metadata, "pages": pages, "size_bytes": size_bytes,
                                "added_at": now} for c in part],
                    **kwargs)
        except BaseException:
            self.collection.delete(where={"doc_sha": doc_sha})
            raise
        self._bump()
        return len(chunks)

    def add_documents(self, documents: Iterable[tuple[list[ChunkRecord], int, int]], *,
                      batch_size: int = 1024) -> int:
        """Store many documents at once, each given as ``(chunks, pages, size_bytes)``.

        Chunks go to Chroma in upserts of ``batch_size`` that may span documents, which is
        much faster than :meth:`add_document` for many small documents (a corpus of
        paragraphs). Each document is still stored all or not at all: on a failure the
        documents not completely written are deleted again, the complete ones stay, and the
        error is re-raised. Returns the number of chunks stored.
        """
        rows: list[tuple[ChunkRecord, int, int]] = []
        last_row: dict[str, int] = {}  # doc_sha -> index of its last chunk in ``rows``
        for chunks, pages, size_bytes in documents:
            for c in chunks:
                rows.append((c, pages, size_bytes))
            if chunks:
                last_row[chunks[0].doc_sha] = len(rows) - 1
        if not rows:
            return 0
        now = time.time()
        done = 0
        try:
            for start in range(0, len(rows), batch_size):
                part = rows[start:start + batch_size]
                self.collection.upsert(
                    ids=[c.id for c, _, _ in part],
                    documents=[c.text for c, _, _ in part],
                    metadatas=[{**c.metadata, "pages": p, "size_bytes": b, "added_at": now}
                               for c, p, b in part])
                done = start + len(part)
        except BaseException:
            partial = [sha for sha, last in last_row.items() if last >= done]
            for start in range(0, len(partial), 500):
                self.collection.delete(where={"doc_sha": {"$in": partial[start:start + 500]}})
            if done:
                self._bump()
            raise
        self._bump()
        return len(rows)

    def delete_document(self, doc_sha: str) -> int:
        """Delete every chunk of a document; returns how many were deleted (0 if unknown)."""
        ids = self.collection.get(where={"doc_sha": doc_sha}, include=[])["ids"]
        if ids:
            self.collection.delete(ids=ids)
            self._bump()
        return len(ids)

    # -- reads ---------------------------------------------------------------------------
    def iter_chunks(self, *, where: dict | None = None) -> Iterator[Chunk]:
        """Every stored chunk (optionally filtered), fetched in pages of PAGE_SIZE rows."""
        offset = 0
        while True:
            got = self.collection.get(where=where, limit=PAGE_SIZE, offset=offset,
                                      include=["documents", "metadatas"])
            if not got["ids"]:
                return
            for cid, text, meta in zip(got["ids"], got["documents"], got["metadatas"]):
                yield _to_chunk(cid, text, meta)
            offset += len(got["ids"])

    def documents(self) -> list[DocumentInfo]:
        """The indexed documents, newest first."""
        docs: dict[str, dict] = {}
        offset = 0
        while True:
            got = self.collection.get(limit=PAGE_SIZE, offset=offset, include=["metadatas"])
            if not got["ids"]:
                break
            for meta in got["metadatas"]:
                sha = meta.get("doc_sha", "")
                d = docs.setdefault(sha, {"source": meta.get("source", "?"),
                                          "pages": int(meta.get("pages", 0)), "chunks": 0,
                                          "size_bytes": int(meta.get("size_bytes", 0)),
                                          "added_at": float(meta.get("added_at", 0.0))})
                d["chunks"] += 1
            offset += len(got["ids"])
        infos = [DocumentInfo(doc_sha=sha, **d) for sha, d in docs.items()]
        return sorted(infos, key=lambda d: (-d.added_at, d.source))

    def document_chunks(self, doc_sha: str) -> list[Chunk]:
        """All chunks of one document in reading order (by chunk index)."""
        return sorted(self.iter_chunks(where={"doc_sha": doc_sha}), key=lambda c: c.index)

    def get_chunks(self, ids: Iterable[str]) -> list[Chunk]:
        """The chunks with these ids, in the given order (unknown ids are left out)."""
        ids = list(ids)
        if not ids:
            return []
        got = self.collection.get(ids=ids, include=["documents", "metadatas"])
        by_id = {cid: _to_chunk(cid, t, m)
                 for cid, t, m in zip(got["ids"], got["documents"], got["metadatas"])}
        return [by_id[i] for i in ids if i in by_id]

    def query(self, text: str, k: int) -> list[Chunk]:
        """Dense retrieval: the ``k`` nearest chunks to ``text``, best first.

        ``Chunk.score`` is cosine similarity (1 - cosine distance).
        """
        n = self.count()
        if n == 0 or not text.strip():
            return []
        got = self.collection.query(query_texts=[text], n_results=min(k, n),
                                    include=["documents", "metadatas", "distances"])
        return [_to_chunk(cid, t, m, score=1.0 - float(d))
                for cid, t, m, d in zip(got["ids"][0], got["documents"][0],
                                        got["metadatas"][0], got["distances"][0])]


def _to_chunk(cid: str, text: str, meta: dict, score: float = 0.0) -> Chunk:
    meta = meta or {}
    return Chunk(id=cid, text=text or "", source=str(meta.get("source", "?")),
                 page=int(meta.get("page", 0)), index=int(meta.get("chunk_index", 0)),
                 doc_sha=str(meta.get("doc_sha", "")), score=round(score, 4))


def open_knowledge_base(settings: Settings, name: str = DEFAULT_COLLECTION,
                        embedding_function: EmbeddingFunction | None = None,
                        client: ClientAPI | None = None) -> KnowledgeBase:
    """Open (creating on first write) the knowledge base ``name`` for ``settings``."""
    ef = embedding_function or make_embedding_function(settings)
    return KnowledgeBase(client or make_client(settings), name, ef, data_dir=settings.data_dir)


def list_knowledge_bases(client: ClientAPI) -> list[str]:
    """Names of the knowledge bases (collections) on ``client``, sorted."""
    cols = client.list_collections()
    return sorted(c if isinstance(c, str) else c.name for c in cols)
