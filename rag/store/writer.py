"""Writing chunks to a knowledge base batch by batch, each document complete only with its completion record.

The order of writes is what makes an ingest crash-safe (see :mod:`rag.store.records`): before a document's
first upsert, whatever an interrupted ingest left of it is deleted; just before the upsert that holds its
last chunk, the whole document goes to the keyword index (one transaction); that chunk carries the
completion record. A process killed at any point leaves the document without a record: incomplete, invisible
to retrieval, and repaired by the next ingest.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rag.ingest.types import ChunkRecord
from rag.store.client import test_hook_after_batch

if TYPE_CHECKING:
    from rag.store.chroma import KnowledgeBase

Row = tuple[ChunkRecord, int, int, Any, "list[str] | None", bool]
"""One chunk to store: ``(chunk, pages, size_bytes, vector or None, terms or None, last of its document)``.

A document's rows are consecutive, in chunk order."""


class RowWriter:
    """Upserts batches of :data:`Row` into ``kb`` in the crash-safe order of the module docstring."""

    def __init__(self, kb: KnowledgeBase) -> None:
        """Start writing to ``kb``; nothing is written before :meth:`flush`."""
        self.kb = kb
        self.open_docs: dict[str, list[ChunkRecord]] = {}  # doc_sha -> its chunks so far, until complete
        self.counts: dict[str, int] = {}  # doc_sha -> chunk count, once complete
        self.toks: dict[str, list[str]] = {}  # chunk id -> terms, until its document is in the keyword index
        self.now = time.time()
        self.stored = 0
        self.leftovers = 0

    def flush(self, part: list[Row]) -> None:
        """Upsert ``part`` (one Chroma call), completing the documents whose last chunk it holds."""
        kb = self.kb
        new = list(dict.fromkeys(c.doc_sha for c, *_ in part if c.doc_sha not in self.open_docs))
        self.leftovers += kb._delete_leftovers(new)
        for c, _, _, _, t, _ in part:
            self.open_docs.setdefault(c.doc_sha, []).append(c)
            if t is not None:
                self.toks[c.id] = t
        plain = [(c, p, b) for c, p, b, *_ in part]
        kb._tokenise(plain, self.toks)
        finished = [c.doc_sha for c, *rest in part if rest[-1]]
        if finished:  # their keywords first; the upsert then carries their completion records
            kb._index_keywords([self.open_docs[sha] for sha in finished], self.toks)
        vectors = [v for _, _, _, v, _, _ in part]
        if any(v is None for v in vectors):  # not computed by the caller: embed them here
            vectors = kb._vectors([c for c, _, _ in plain], self.toks)
        kb._upsert_rows(plain, self.now, vectors,
                        {self.open_docs[sha][-1].id: len(self.open_docs[sha]) for sha in finished})
        for sha in finished:
            chunks = self.open_docs.pop(sha)
            self.counts[sha] = len(chunks)
            for c in chunks:
                self.toks.pop(c.id, None)
        self.stored += len(part)
        test_hook_after_batch()

    def abort(self, unwritten: list[Row]) -> None:
        """After an exception: delete the documents started but not complete (best effort)."""
        partial = list(dict.fromkeys([*self.open_docs, *(c.doc_sha for c, *_ in unwritten)]))
        self.kb._unindex_keywords(partial)
        try:
            self.kb._delete_leftovers(partial)
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
