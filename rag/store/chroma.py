"""The knowledge base (one Chroma collection per knowledge base).

Crash safety (completion records, incomplete documents and their repair) is described in
:mod:`rag.store.records`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from chromadb.api import ClientAPI
from chromadb.api.types import EmbeddingFunction

from rag.config import DEFAULT_COLLECTION, Settings
from rag.models import Chunk
from rag.store.bm25 import keyword_index
from rag.store.client import (
    EmbeddingMismatch,
    KnowledgeBaseNotFound,
    StoreError,
    StoreUnavailable,
    is_unreachable,
    list_knowledge_bases,
    make_client,
    not_found_message,
    server_address,
    translate_unreachable,
    unreachable_message,
    validate_collection_name,
)
from rag.store.dense import nearest_complete
from rag.store.embeddings import (
    QueryVectors,
    embedding_function_for,
    embedding_identity,
    make_embedding_function,
)
from rag.store.kbs import names, open_collection, recorded_embedding
from rag.store.records import (
    COMPLETE_KEY,
    PAGE_SIZE,
    RECORDS_FLAG,
    ChunkRecord,
    DocumentInfo,
    document_lines,
    document_statuses,
    pages_of,
    read_complete,
    read_documents,
    to_chunk,
)
from rag.store.writer import document_rows, store_rows, stream_rows

__all__ = [  # the store's public names, importable from here as before the split
    "COMPLETE_KEY", "PAGE_SIZE", "RECORDS_FLAG", "DocumentInfo", "EmbeddingMismatch", "KnowledgeBase",
    "KnowledgeBaseNotFound",
    "StoreError", "StoreUnavailable", "document_lines", "is_unreachable", "list_knowledge_bases",
    "make_client", "open_knowledge_base", "server_address", "unreachable_message", "validate_collection_name",
]


FINGERPRINT_TTL_S = 1.0
"""Seconds a knowledge base's fingerprint is reused in a process (see :meth:`KnowledgeBase.fingerprint`)."""
_FINGERPRINTS: dict[str, tuple[float, tuple[str, int, int]]] = {}  # collection id -> (monotonic s, value)
_FINGERPRINTS_LOCK = threading.Lock()


class KnowledgeBase:
    """A named knowledge base: one Chroma collection with a fixed embedding function.

    The collection's metadata records the embedding model that built it (``embedding``) and a
    ``revision`` counter raised on every change, so caches derived from its contents
    (lexical statistics) know when to rebuild. ``data_dir`` is where such derived indexes
    persist (the BM25 index under ``bm25/<name>/``, or in the ``database_url`` database when set); None
    keeps them in memory only.
    Every method raises StoreUnavailable when the Chroma server cannot be reached.
    """

    def __init__(self, client: ClientAPI, name: str, embedding_function: EmbeddingFunction,
                 *, data_dir: Path | None = None, database_url: str | None = None) -> None:
        """Open the knowledge base ``name`` (created on first write). Raises ValueError for a bad name.

        ``database_url`` (``RAG_DATABASE_URL``) holds its keyword index, shared with other replicas.
        """
        self.client = client
        self.name = validate_collection_name(name)
        self.embedding_function = embedding_function
        self.data_dir = data_dir
        self.database_url = database_url
        self._collection: Any = None
        self._complete_cache: tuple | None = None
        self._documents_cache: tuple | None = None
        self._max_batch: int | None = None
        self.embed_query = QueryVectors(embedding_function)  # dense retrieval and the semantic cache

    @property
    @translate_unreachable
    def collection(self):
        """The Chroma collection, created on first use.

        Raises EmbeddingMismatch when it holds chunks embedded by another model (an empty
        collection is simply rebuilt for the current one).
        """
        if self._collection is None:
            self._collection = open_collection(self.client, self.name, self.embedding_function)
        return self._collection

    # -- state ---------------------------------------------------------------------------
    @property
    def embedding(self) -> str:
        """The identity of the embedding model this knowledge base embeds with (e.g. ``openai/<model>``)."""
        return embedding_identity(self.embedding_function)

    @translate_unreachable
    def count(self) -> int:
        """Number of stored chunks (those of incomplete documents included)."""
        return self.collection.count()

    @translate_unreachable
    def revision(self) -> int:
        """A counter raised on every add or delete (0 for a new knowledge base)."""
        _ = self.collection  # created (and its embedding checked) on first use
        meta = self.client.get_collection(self.name,
                                          embedding_function=self.embedding_function).metadata
        return int((meta or {}).get("revision", 0))

    def fingerprint(self) -> tuple[str, int, int]:
        """(name, revision, chunk count): changes whenever the contents change.

        Reused for :data:`FINGERPRINT_TTL_S` by every knowledge base object of this process on the same
        collection, and forgotten as soon as one of them writes: a question asks for it several times
        (dense retrieval, the keyword index, the retrieval cache), and Chroma counts 100,000 chunks in
        about 15 ms. A write by another process (a CLI ingest into the app's store, another client of a
        Chroma server) is seen within that time.
        """
        key = str(self.collection.id)
        now = time.monotonic()
        with _FINGERPRINTS_LOCK:
            got = _FINGERPRINTS.get(key)
        if got is not None and now - got[0] < FINGERPRINT_TTL_S:
            return got[1]
        fresh = (self.name, self.revision(), self.count())
        with _FINGERPRINTS_LOCK:
            _FINGERPRINTS[key] = (now, fresh)
        return fresh

    def forget_fingerprint(self) -> None:
        """Make the next :meth:`fingerprint` ask the store again (as it does FINGERPRINT_TTL_S later)."""
        with _FINGERPRINTS_LOCK:
            _FINGERPRINTS.pop(str(self.collection.id), None)

    def _bump(self) -> None:
        col = self.client.get_collection(self.name, embedding_function=self.embedding_function)
        meta = dict(col.metadata or {})
        meta["revision"] = int(meta.get("revision", 0)) + 1
        meta.setdefault("embedding", embedding_identity(self.embedding_function))
        col.modify(metadata=meta)
        self.forget_fingerprint()

    def _carry_complete(self, added: dict[str, int], removed: list[str], chunk_delta: int) -> None:
        """Carry the complete-documents cache across this object's own write (already bumped).

        Only when nothing else changed the store since the cache was filled (its revision is exactly one
        behind, its chunk count exactly ``chunk_delta`` off), so the next question does not re-read every
        completion record; otherwise the next :meth:`complete_documents` re-reads them.
        """
        cache = self._complete_cache
        if cache is None:
            return
        with contextlib.suppress(Exception):
            name, rev, count = cache[0]
            after = self.fingerprint()
            if after == (name, rev + 1, count + chunk_delta):
                docs = {s: n for s, n in cache[1].items() if s not in removed}
                docs.update(added)
                self._complete_cache = (after, docs)

    @translate_unreachable
    def complete_documents(self) -> dict[str, int]:
        """doc_sha -> chunk count of every complete document (one completion record each).

        Cached until the knowledge base changes (revision or chunk count).
        """
        key = self.fingerprint()
        if self._complete_cache and self._complete_cache[0] == key:
            return self._complete_cache[1]
        out = read_complete(self.collection)
        self._complete_cache = (key, out)
        return out

    @translate_unreachable
    def document_status(self, doc_sha: str) -> str:
        """``complete``.

        (its completion record is stored and all its chunks are there), ``incomplete`` (chunks without a valid
        record: an interrupted ingest) or ``absent``.
        """
        ids = self.collection.get(where={"doc_sha": doc_sha}, include=[])["ids"]
        if not ids:
            return "absent"
        record = self.collection.get(
            where={"$and": [{"doc_sha": doc_sha}, {COMPLETE_KEY: {"$gt": 0}}]}, limit=1,
            include=["metadatas"])
        if record["ids"] and int(record["metadatas"][0][COMPLETE_KEY]) == len(ids):
            return "complete"
        return "incomplete"

    @translate_unreachable
    def document_statuses(self, shas: Iterable[str]) -> dict[str, str]:
        """:meth:`document_status` of each of ``shas`` (sha -> status), in two reads when none is stored."""
        return document_statuses(self.collection, list(dict.fromkeys(shas)), self.document_status)

    # -- writes --------------------------------------------------------------------------
    def has_document(self, doc_sha: str) -> bool:
        """True when the document with this sha256 is completely stored.

        (its completion record is written and all its chunks are there); False for an incomplete one.
        """
        return self.document_status(doc_sha) == "complete"

    @translate_unreachable
    def add_document(self, chunks: list[ChunkRecord], *, pages: int, size_bytes: int,
                     batch_size: int = 256, embeddings: list | None = None,
                     terms: dict[str, list[str]] | None = None) -> int:
        """Store all ``chunks`` of one document; its last chunk carries the completion record.

        :meth:`add_documents` for one document: chunks left by an earlier, interrupted ingest of it are
        deleted first; the chunks go to Chroma in upserts of ``batch_size``; the keyword index gets the
        whole document in one transaction just before the last upsert, whose last chunk carries the
        completion record. ``embeddings`` may carry precomputed vectors (one per chunk, in order) and
        ``terms`` maps chunk ids to their :func:`rag.text.terms`. On an exception the chunks already
        written are deleted again and the error is re-raised; if the process dies instead (SIGKILL, power
        loss, the server gone), the chunks stay without a completion record: the document is incomplete
        and the next ingest repairs it. Returns the number of chunks stored.
        """
        vectors = None if embeddings is None else dict(zip((c.id for c in chunks), embeddings, strict=True))
        return self.add_documents([(chunks, pages, size_bytes)], batch_size=batch_size, embeddings=vectors,
                                  terms=terms)

    @translate_unreachable
    def add_documents(self, documents: Iterable[tuple[list[ChunkRecord], int, int]], *,
                      batch_size: int = 1024, embeddings: dict[str, Any] | None = None,
                      terms: dict[str, list[str]] | None = None) -> int:
        """Store many documents at once, each given as ``(chunks, pages, size_bytes)``.

        Chunks left by an earlier, interrupted ingest of any of them are deleted first. Chunks go to
        Chroma in upserts of ``batch_size`` that may span documents: each upsert costs Chroma tens of
        ms whatever its size, so a batch of small documents (a corpus of paragraphs, a folder of
        papers) is stored much faster than one document at a time. The documents whose last chunk an
        upsert stores are added to the keyword index just before it (one transaction), and the upsert
        carries their completion records (on their last chunks). ``embeddings`` (chunk id -> vector)
        and ``terms`` (chunk id -> :func:`rag.text.terms`) may carry what the caller computed already.
        On an exception the documents not completely written are deleted again, the complete ones
        stay, and the error is re-raised. Returns the number of chunks stored.
        """
        return store_rows(self, document_rows(documents, embeddings or {}, terms or {}), batch_size)

    @translate_unreachable
    def add_document_stream(self, parts: Iterable[tuple[list[ChunkRecord], list | None, list | None]], *,
                            pages: int, size_bytes: int, batch_size: int = 256) -> int:
        """Store one document whose chunks come in parts, as they are made; its last chunk carries the record.

        ``parts`` yields ``(chunks, vectors, terms)`` in document order (``vectors`` and ``terms``: one per
        chunk, or None). Full batches are upserted while later parts are still being made (by the ingest
        workers), so the document's last upsert is all that is left when its last part comes; the keyword
        index gets the whole document just before it. If ``parts`` raises (a page that fails), the chunks
        written so far are deleted again and the error is re-raised; a process killed meanwhile leaves
        the document incomplete, repaired by the next ingest. Returns the number of chunks stored.
        """
        return store_rows(self, stream_rows(parts, pages, size_bytes), batch_size)

    @translate_unreachable
    def max_batch_size(self) -> int:
        """The most records one Chroma upsert may hold (the client's ``get_max_batch_size()``, 5,461 here)."""
        if self._max_batch is None:
            self._max_batch = int(self.client.get_max_batch_size())
        return self._max_batch

    @translate_unreachable
    def delete_document(self, doc_sha: str) -> int:
        """Delete every chunk of a document, complete or not; returns how many were deleted (0 if unknown).

        The completion record goes first, then the document leaves the keyword index (one transaction), so
        an interrupted delete leaves an incomplete document, never a complete one with chunks missing.
        """
        got = self.collection.get(where={"doc_sha": doc_sha}, include=["metadatas"])
        ids = got["ids"]
        if ids:
            marked = [i for i, m in zip(ids, got["metadatas"], strict=False) if (m or {}).get(COMPLETE_KEY)]
            if marked:
                self.collection.update(ids=marked, metadatas=[{COMPLETE_KEY: 0}] * len(marked))
            keyword_index(self).delete([doc_sha])
            self.collection.delete(ids=ids)
            self._bump()
            self._carry_complete({}, [doc_sha], -len(ids))
        return len(ids)

    # -- reads ---------------------------------------------------------------------------
    def iter_chunks(self, *, where: dict | None = None,
                    complete_only: bool = False) -> Iterator[Chunk]:
        """Every stored chunk (optionally filtered), fetched in pages of PAGE_SIZE rows.

        ``complete_only`` leaves out the chunks of incomplete documents.
        """
        complete = self.complete_documents() if complete_only else None
        for got in pages_of(self._get_page, where=where, include=["documents", "metadatas"]):
            for cid, text, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=False):
                if complete is None or (meta or {}).get("doc_sha") in complete:
                    yield to_chunk(cid, text, meta)

    @translate_unreachable
    def documents(self) -> list[DocumentInfo]:
        """The stored documents, newest first, each ``complete`` or ``incomplete``.

        Reads every chunk's metadata (10 s for 100,000 chunks), so the list is kept until the knowledge
        base's :meth:`fingerprint` changes: a page that lists documents on every rerun reads them once.
        """
        key = self.fingerprint()
        if self._documents_cache is not None and self._documents_cache[0] == key:
            return list(self._documents_cache[1])
        infos = self._read_documents()
        self._documents_cache = (key, infos)
        return list(infos)

    def _read_documents(self) -> list[DocumentInfo]:
        return read_documents(self.collection)

    @translate_unreachable
    def _get_page(self, **kwargs) -> dict:
        return self.collection.get(**kwargs)

    def document_chunks(self, doc_sha: str) -> list[Chunk]:
        """All chunks of one document in reading order (by chunk index)."""
        return sorted(self.iter_chunks(where={"doc_sha": doc_sha}), key=lambda c: c.index)

    @translate_unreachable
    def get_chunks(self, ids: Iterable[str]) -> list[Chunk]:
        """The chunks with these ids, in the given order (unknown ids left out; a repeated id, each time)."""
        ids = list(ids)
        if not ids:
            return []
        got = self.collection.get(ids=list(dict.fromkeys(ids)), include=["documents", "metadatas"])
        by_id = {cid: to_chunk(cid, t, m)
                 for cid, t, m in zip(got["ids"], got["documents"], got["metadatas"], strict=False)}
        return [by_id[i] for i in ids if i in by_id]

    @translate_unreachable
    def query(self, text: str, k: int, where: dict | None = None) -> list[Chunk]:
        """Dense retrieval: the ``k`` nearest chunks of complete documents to ``text``, best first.

        ``Chunk.score`` is cosine similarity (1 - cosine distance); ``where`` is a Chroma metadata filter.
        Chunks Chroma's approximate index cannot reach are scored exactly (see :mod:`rag.store.dense`).
        """
        n = self.fingerprint()[2]
        if n == 0 or not text.strip():
            return []
        complete = self.complete_documents()
        return nearest_complete(self.collection, self.embed_query(text), k, n, complete, where)


def open_knowledge_base(settings: Settings, name: str = DEFAULT_COLLECTION,
                        embedding_function: EmbeddingFunction | None = None,
                        client: ClientAPI | None = None, *, must_exist: bool = False) -> KnowledgeBase:
    """Open (creating on first write) the knowledge base ``name`` for ``settings``.

    It embeds with ``embedding_function`` when given, else with the model recorded by the knowledge base
    (whatever key or model ``settings`` configure now: see :mod:`rag.store.kbs`), else, for a new one, with
    the configured model. With ``must_exist`` (for asking, never for ingesting) a knowledge base that does
    not exist is not created: KnowledgeBaseNotFound (a ValueError whose one line lists those that do).
    Raises ValueError for a bad name, EmbeddingKeyMissing (one line) when the recorded model needs an
    OpenAI key ``settings`` lack, StoreUnavailable when the server cannot be reached.
    """
    client = client or make_client(settings)
    if must_exist:
        existing = names(client)
        if validate_collection_name(name) not in existing:
            raise KnowledgeBaseNotFound(not_found_message(name, existing))
    ef = embedding_function
    if ef is None:
        recorded = recorded_embedding(client, validate_collection_name(name))
        ef = (embedding_function_for(recorded[0], settings, base_url=recorded[1], kb_name=name)
              if recorded else make_embedding_function(settings))
    return KnowledgeBase(client, name, ef, data_dir=settings.data_dir, database_url=settings.database_url)
