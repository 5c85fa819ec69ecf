"""Writing chunks to a knowledge base batch by batch, each document complete only with its completion record.

The order of writes is what makes an ingest crash-safe (see :mod:`rag.store.records`): before a document's
first upsert, whatever an interrupted ingest left of it is deleted; just before the upsert that holds its
last chunk, the whole document goes to the keyword index (one transaction); that chunk carries the
completion record. A process killed at any point leaves the document without a record: incomplete, invisible
to retrieval, and repaired by the next ingest.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from typing import Any

from rag.store.bm25 import keyword_index
from rag.store.client import test_hook_after_batch
from rag.store.records import COMPLETE_KEY, TEXT_KEY, ChunkRecord
from rag.text import terms as text_terms

Row = tuple[ChunkRecord, int, int, Any, "list[str] | None", bool]
"""One chunk to store: ``(chunk, pages, size_bytes, vector or None, terms or None, last of its document)``.

A document's rows are consecutive, in chunk order."""


def document_rows(documents: Iterable[tuple[list[ChunkRecord], int, int]], vectors: dict[str, Any],
                  terms: dict[str, list[str]]) -> Iterator[Row]:
    """The rows of whole documents given as ``(chunks, pages, size_bytes)``.

    ``vectors`` and ``terms`` map chunk ids to what the caller computed already (the others get None).
    """
    for chunks, pages, size_bytes in documents:
        for n, c in enumerate(chunks, 1):
            yield c, pages, size_bytes, vectors.get(c.id), terms.get(c.id), n == len(chunks)


def stream_rows(parts: Iterable[tuple[list[ChunkRecord], list | None, list | None]], pages: int,
                size_bytes: int) -> Iterator[Row]:
    """The rows of one document whose chunks come in parts ``(chunks, vectors or None, terms or None)``."""
    held: Row | None = None  # one chunk held back: the last one is only known at the end
    for chunks, vectors, toks in parts:
        for i, c in enumerate(chunks):
            if held is not None:
                yield held
            held = (c, pages, size_bytes, None if vectors is None else vectors[i],
                    None if toks is None else toks[i], False)
    if held is not None:
        yield (*held[:5], True)


def store_rows(kb, rows: Iterable[Row], batch_size: int) -> int:
    """Upsert ``rows`` into ``kb`` (a :class:`rag.store.chroma.KnowledgeBase`) in the crash-safe order.

    Batches hold ``batch_size`` rows, never more than one Chroma upsert may hold (``kb.max_batch_size()``,
    5,461 here), so documents of any size stored together never fail for their number. On an exception the
    documents not completely written are deleted again (the complete ones stay) and the error is
    re-raised. Returns the number of chunks stored.
    """
    batch_size = max(1, min(batch_size, kb.max_batch_size()))
    writer = RowWriter(kb)
    batch: list[Row] = []
    try:
        for row in rows:
            batch.append(row)
            if len(batch) == batch_size:
                writer.flush(batch)
                batch = []
        if batch:
            writer.flush(batch)
    except BaseException:
        writer.abort(batch)
        raise
    return writer.finish()


def delete_leftovers(collection, shas: list[str]) -> int:
    """Delete the chunks an interrupted ingest left of these documents; returns how many were deleted."""
    removed = 0
    for start in range(0, len(shas), 500):
        part = shas[start:start + 500]
        where = {"doc_sha": part[0]} if len(part) == 1 else {"doc_sha": {"$in": part}}
        ids = collection.get(where=where, include=[])["ids"]
        if ids:
            collection.delete(ids=ids)
            removed += len(ids)
    return removed


class RowWriter:
    """Upserts :data:`Row` batches into a knowledge base in the crash-safe order of the module docstring."""

    def __init__(self, kb) -> None:
        """Start writing to ``kb`` (a :class:`rag.store.chroma.KnowledgeBase`); nothing is written yet."""
        self.kb = kb
        self.open_docs: dict[str, list[ChunkRecord]] = {}  # doc_sha -> its chunks so far, until complete
        self.counts: dict[str, int] = {}  # doc_sha -> chunk count, once complete
        self.toks: dict[str, list[str]] = {}  # chunk id -> terms, until its document is in the keyword index
        self.now = time.time()
        self.stored = 0
        self.leftovers = 0

    def flush(self, part: list[Row]) -> None:
        """Upsert ``part`` (one Chroma call), completing the documents whose last chunk it holds."""
        new = list(dict.fromkeys(c.doc_sha for c, *_ in part if c.doc_sha not in self.open_docs))
        self.leftovers += delete_leftovers(self.kb.collection, new)
        for c, _, _, _, t, _ in part:
            self.open_docs.setdefault(c.doc_sha, []).append(c)
            if t is not None:
                self.toks[c.id] = t
        self._tokenise([c for c, *_ in part])
        finished = [c.doc_sha for c, *rest in part if rest[-1]]
        if finished:  # their keywords first; the upsert then carries their completion records
            self._index_keywords([self.open_docs[sha] for sha in finished])
        vectors = [v for _, _, _, v, _, _ in part]
        if any(v is None for v in vectors):  # not computed by the caller: embed them here
            vectors = self._vectors([c for c, *_ in part])
        records = {self.open_docs[sha][-1].id: len(self.open_docs[sha]) for sha in finished}
        metadatas = [{**c.metadata, "pages": p, "size_bytes": b, "added_at": self.now, TEXT_KEY: c.text,
                      **({COMPLETE_KEY: records[c.id]} if c.id in records else {})} for c, p, b, *_ in part]
        self.kb.collection.upsert(ids=[c.id for c, *_ in part], metadatas=metadatas, embeddings=vectors)
        for sha in finished:
            chunks = self.open_docs.pop(sha)
            self.counts[sha] = len(chunks)
            for c in chunks:
                self.toks.pop(c.id, None)
        self.stored += len(part)
        test_hook_after_batch()

    def _tokenise(self, chunks: list[ChunkRecord]) -> None:
        """With a local embedding function (hashing): each chunk's terms, for its vector and its keywords."""
        if getattr(self.kb.embedding_function, "embed_terms", None) is not None:
            self.toks.update((c.id, text_terms(c.text)) for c in chunks if c.id not in self.toks)

    def _vectors(self, chunks: list[ChunkRecord]) -> list:
        """The vectors of ``chunks``: from their terms (local embeddings), else embedded."""
        embed_terms = getattr(self.kb.embedding_function, "embed_terms", None)
        if embed_terms is not None and all(c.id in self.toks for c in chunks):
            return [embed_terms(self.toks[c.id]) for c in chunks]
        return list(self.kb.embedding_function([c.text for c in chunks]))

    def _index_keywords(self, docs: list[list[ChunkRecord]]) -> None:
        """Add whole documents to the keyword index (one transaction) just before their completion records."""
        index = keyword_index(self.kb)
        if all(c.id in self.toks for d in docs for c in d):
            index.add_terms([(d[0].doc_sha, [(c.id, self.toks[c.id]) for c in d]) for d in docs])
        else:
            index.add([(d[0].doc_sha, [(c.id, c.text) for c in d]) for d in docs])

    def abort(self, unwritten: list[Row]) -> None:
        """After an exception: delete the documents started but not complete (best effort)."""
        partial = list(dict.fromkeys([*self.open_docs, *(c.doc_sha for c, *_ in unwritten)]))
        with contextlib.suppress(Exception):  # else the next lexical_index() call reconciles it
            keyword_index(self.kb).delete(partial)
        try:
            delete_leftovers(self.kb.collection, partial)
            if self.stored:
                self.kb._bump()
        except Exception:  # the server is gone: those documents stay incomplete
            pass

    def finish(self) -> int:
        """Record the change (revision) and return the number of chunks stored."""
        if self.stored:
            self.kb._bump()
            self.kb._carry_complete(self.counts, [], self.stored - self.leftovers)
        return self.stored
