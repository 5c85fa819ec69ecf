"""The keyword (BM25) index of a knowledge base and the corpus statistics the offline engine needs.

:class:`KeywordIndex` keeps it as posting lists in SQL (:mod:`rag.store.keyword_db`): a SQLite file under
the data directory, or, with ``RAG_DATABASE_URL``, the shared database every replica reads and writes. It is
updated incrementally by every ingest and delete in the same crash-safe step as the document's completion
record (:mod:`rag.store.records`). :class:`LexicalIndex` (in :mod:`rag.store.lexical`, importable from
here) is the same ranking built whole in memory with bm25s: the reference the incremental index is tested
and benchmarked against.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
from sqlalchemy import Connection

from rag.models import Chunk
from rag.store import postings
from rag.store.client import test_kill_in_keywords
from rag.store.keyword_db import KeywordStore, execute_rows, sql
from rag.store.lexical import LexicalIndex, LexicalStats, bm25_top, build_postings
from rag.store.records import read_document_texts
from rag.text import terms

__all__ = ["INDEX_FORMAT", "KeywordIndex", "LexicalIndex", "LexicalStats", "index_path", "keyword_index",
           "lexical_index", "lexical_stats"]

INDEX_FORMAT = 7
"""Version of the keyword index layout and of the tokenizer (:func:`rag.text.terms`) it was built with
(5: posting lists in SQLite, complete documents only; 6: the same in SQLAlchemy Core tables keyed by index,
SQLite or PostgreSQL; 7: each posting list in segments, :mod:`rag.store.postings`): an index saved under
another version is emptied and rebuilt from the store."""


class KeywordIndex:
    """The persistent, incremental BM25 index of one knowledge base: an inverted index in SQL.

    Each chunk's :func:`rag.text.terms` (stems, CJK bigrams) are stored with it, and each term has one
    posting list (int32 (chunk row, term frequency, chunk length) triples, in a few segments:
    :mod:`rag.store.postings`) that adds append to (nothing is read back) and deletes rewrite. A question
    reads the posting lists of its terms only and scores every chunk they hold with numpy: bm25s' Lucene
    BM25 (k1 = :data:`K1`, b = :data:`B`, idf ln(1 + (N - df + 0.5) / (df + 0.5))), exactly, over all matches.
    (SQLite FTS5 was measured first: its ``bm25()`` ranking of an OR query took 2.5 s at 100,000 chunks,
    where common terms match 40% of the chunks, and its vocabulary lookups 15 ms a term.)

    Documents are added and deleted whole, each call in one transaction (atomic even under SIGKILL: a
    reader sees a document with all its chunks or not at all). :class:`KnowledgeBase` writes a document
    here just before its completion record and deletes it just after removing that record;
    :func:`lexical_index` reconciles the two after a crash between them (see :meth:`sync`).
    ``path`` None (and no ``url``) keeps the index in memory; ``url`` (``RAG_DATABASE_URL``) keeps it in
    that database as the index ``name``, shared with every process using the same URL. Raises
    sqlalchemy.exc.SQLAlchemyError when the index cannot be written, OSError for an unusable URL.
    """

    FILE = "keyword.sqlite"
    def __init__(self, path: Path | None, *, url: str | None = None, name: str = "") -> None:
        """Open (creating) the index in the folder ``path`` (``keyword.sqlite``), in memory, or at ``url``."""
        if path is not None and url is None:
            Path(path).mkdir(parents=True, exist_ok=True)
            for old in ("meta.json", "ids.json"):  # the bm25s index of format 2, now unused
                (Path(path) / old).unlink(missing_ok=True)
            shutil.rmtree(Path(path) / "bm25s", ignore_errors=True)
        self.store = KeywordStore(None if path is None else Path(path) / self.FILE, url=url, ix=name)
        self.ix = {"ix": self.store.ix}
        self._lock = threading.RLock()
        self.synced: tuple | None = None
        """The knowledge base fingerprint this index was last reconciled with (per process)."""
        self._stats: tuple[int, LexicalStats] | None = None
        with self._write() as db:
            if self._meta(db, "format") != str(INDEX_FORMAT):  # another layout: start afresh
                for table in ("keyword_docs", "keyword_chunks", "keyword_segments", "keyword_meta"):
                    db.execute(sql(f"DELETE FROM {table} WHERE ix = :ix"), self.ix)
                self._set_meta(db, "format", INDEX_FORMAT)

    # -- plumbing ------------------------------------------------------------------------
    @contextlib.contextmanager
    def _write(self) -> Iterator[Connection]:
        with self._lock, self.store.write() as db:
            yield db

    @contextlib.contextmanager
    def _read(self) -> Iterator[Connection]:
        """Reads of a local index wait for this process's writes (as they always have); shared ones do not."""
        with contextlib.nullcontext() if self.store.shared else self._lock, self.store.read() as db:
            yield db

    def _meta(self, db: Connection, key: str) -> str | None:
        value = db.execute(sql("SELECT value FROM keyword_meta WHERE ix = :ix AND key = :key"),
                           {**self.ix, "key": key}).scalar()
        return None if value is None else str(value)

    def _set_meta(self, db: Connection, key: str, value: object) -> None:
        db.execute(sql("INSERT INTO keyword_meta(ix, key, value) VALUES (:ix, :key, :value) "
                       "ON CONFLICT (ix, key) DO UPDATE SET value = excluded.value"),
                   {**self.ix, "key": key, "value": str(value)})

    def _clear(self, db: Connection) -> None:
        for table in ("keyword_docs", "keyword_chunks", "keyword_segments"):
            db.execute(sql(f"DELETE FROM {table} WHERE ix = :ix"), self.ix)
        db.execute(sql("DELETE FROM keyword_meta WHERE ix = :ix AND key IN ('chunks', 'length')"), self.ix)
        self._bump(db)

    def _bump(self, db: Connection) -> None:
        self._set_meta(db, "generation", int(self._meta(db, "generation") or 0) + 1)

    def close(self) -> None:
        """Release the index (an in-memory one is dropped)."""
        with self._lock:
            self.store.close()

    # -- writes --------------------------------------------------------------------------
    def bind(self, collection_id: str) -> None:
        """Tie the index to one Chroma collection.

        An index left by another collection (a deleted and recreated knowledge base of the same name) is
        emptied first.
        """
        with self._read() as db:
            if self._meta(db, "collection_id") == collection_id:
                return
        with self._write() as db:
            if self._meta(db, "collection_id") != collection_id:  # still, now that the lock is held
                self._clear(db)
                self._set_meta(db, "collection_id", collection_id)
        self.synced = None

    def add(self, documents: Iterable[tuple[str, Sequence[tuple[str, str]]]]) -> int:
        """Index whole documents, each ``(doc_sha, [(chunk id, text), ...])``, in one transaction.

        A document already indexed is replaced. Returns the number of chunks indexed.
        """
        rows = [(sha, [(cid, terms(text or "")) for cid, text in chunks]) for sha, chunks in documents]
        return self.add_terms(rows)

    def add_terms(self, documents: Iterable[tuple[str, Sequence[tuple[str, list[str]]]]]) -> int:
        """:meth:`add` for chunks already tokenised with :func:`rag.text.terms` (``(chunk id, terms)``)."""
        docs = list(documents)
        if not docs:
            return 0
        with self._write() as db:
            self._delete(db, [sha for sha, _ in docs])
            n = int(self._meta(db, "chunks") or 0)
            length = int(self._meta(db, "length") or 0)
            row = int(db.execute(sql("SELECT coalesce(max(row), 0) FROM keyword_chunks WHERE ix = :ix"),
                                 self.ix).scalar() or 0)
            chunks = [(sha, cid, toks) for sha, part in docs for cid, toks in part]
            terms_, bounds, triples = build_postings([toks for _, _, toks in chunks], row + 1)
            ix, now = self.store.ix, time.time()
            execute_rows(db, "INSERT INTO keyword_docs(ix, doc_sha, chunks, indexed_at) VALUES (?, ?, ?, ?)",
                         [(ix, sha, len(part), now) for sha, part in docs])
            execute_rows(db, "INSERT INTO keyword_chunks(ix, row, chunk_id, doc_sha, length, terms) "
                             "VALUES (?, ?, ?, ?, ?, ?)",
                         [(ix, row + i, cid, sha, len(toks), " ".join(toks))
                          for i, (sha, cid, toks) in enumerate(chunks, 1)])
            test_kill_in_keywords("mid")
            self._merge(db, terms_, bounds, triples)
            self._set_meta(db, "chunks", n + len(chunks))
            self._set_meta(db, "length", length + sum(len(toks) for _, _, toks in chunks))
            self._bump(db)
        test_kill_in_keywords("after")
        return len(chunks)

    def delete(self, doc_shas: Iterable[str]) -> int:
        """Remove these documents (unknown ones are ignored) in one transaction; returns chunks removed."""
        shas = list(doc_shas)
        if not shas:
            return 0
        with self._write() as db:
            removed = self._delete(db, shas)
            if removed:
                self._bump(db)
        return removed

    def _delete(self, db: Connection, shas: list[str]) -> int:
        removed = 0
        for start in range(0, len(shas), 500):
            part = shas[start:start + 500]
            rows = db.execute(sql("SELECT row, length, terms FROM keyword_chunks "
                                  "WHERE ix = :ix AND doc_sha IN :shas", "shas"),
                              {**self.ix, "shas": part}).all()
            if rows:
                self._unpost(db, np.array([r[0] for r in rows], dtype=np.int32),
                             {t for r in rows for t in r[2].split()})
                db.execute(sql("DELETE FROM keyword_chunks WHERE ix = :ix AND doc_sha IN :shas", "shas"),
                           {**self.ix, "shas": part})
                self._set_meta(db, "chunks", int(self._meta(db, "chunks") or 0) - len(rows))
                self._set_meta(db, "length", int(self._meta(db, "length") or 0) - sum(r[1] for r in rows))
                removed += len(rows)
            db.execute(sql("DELETE FROM keyword_docs WHERE ix = :ix AND doc_sha IN :shas", "shas"),
                       {**self.ix, "shas": part})
        return removed

    def _merge(self, db: Connection, terms_: list[str], bounds: np.ndarray, triples: np.ndarray) -> None:
        """Append new postings to their terms' lists (the arguments: :func:`build_postings`'s result).

        Each term gets a new segment (:func:`rag.store.postings.append`): no list is read back or rewritten
        whole, which made every ingest cost more as the knowledge base grew.
        """
        if len(triples):
            postings.append(db, self.store, terms_, bounds, triples, int(triples[:, 0].min()))

    def _unpost(self, db: Connection, rowids: np.ndarray, affected: set[str]) -> None:
        postings.remove_rows(db, self.store, rowids, affected)

    def sync(self, complete: dict[str, int], read: Callable[[list[str]], Iterator[tuple[str, list]]]
             ) -> tuple[int, int]:
        """Make the indexed documents exactly ``complete`` (doc_sha -> chunk count, the completion records).

        Documents indexed but not complete (a crash between this index's write and the completion
        record, or a delete elsewhere) are removed; complete documents missing here (an older index, a
        crash after the record, another writer) are read with ``read(shas)``, which yields ``(doc_sha,
        [(chunk id, text), ...])``, and added in batches. Returns ``(added, removed)`` documents.

        In a shared index a document indexed in the last :data:`SHARED_GRACE_S` seconds is not removed:
        another replica may be about to write its completion record.
        """
        have = self.documents()
        stale = [s for s, n in have.items() if complete.get(s) != n]
        if stale and self.store.shared:
            recent = self._indexed_since(time.time() - SHARED_GRACE_S)
            stale = [s for s in stale if s not in recent]
        missing = [s for s, n in complete.items() if have.get(s) != n]
        self.delete(stale)
        for start in range(0, len(missing), SYNC_BATCH):
            self.add(read(missing[start:start + SYNC_BATCH]))
        return len(missing), len(stale)

    # -- reads ---------------------------------------------------------------------------
    def _indexed_since(self, at: float) -> set[str]:
        with self._read() as db:
            return set(db.execute(sql("SELECT doc_sha FROM keyword_docs WHERE ix = :ix AND indexed_at > :at"),
                                  {**self.ix, "at": at}).scalars())

    def documents(self) -> dict[str, int]:
        """doc_sha -> chunk count of every indexed document."""
        with self._read() as db:
            return {r[0]: int(r[1]) for r in db.execute(
                sql("SELECT doc_sha, chunks FROM keyword_docs WHERE ix = :ix"), self.ix)}

    @property
    def ids(self) -> list[str]:
        """The ids of every indexed chunk, in index order."""
        with self._read() as db:
            return list(db.execute(sql("SELECT chunk_id FROM keyword_chunks WHERE ix = :ix ORDER BY row"),
                                   self.ix).scalars())

    def _totals(self, db: Connection) -> tuple[int, int]:
        got: dict[str, str] = dict(db.execute(sql("SELECT key, value FROM keyword_meta WHERE ix = :ix "
                                  "AND key IN ('chunks', 'length')"), self.ix).all())
        return int(got.get("chunks") or 0), int(got.get("length") or 0)

    @property
    def stats(self) -> LexicalStats:
        """Document frequencies of every indexed term (posting list lengths), cached until the next write."""
        with self._lock, self._read() as db:
            generation = int(self._meta(db, "generation") or 0)
            if self._stats is None or self._stats[0] != generation:
                df = postings.document_frequencies(db, self.store.ix)
                self._stats = (generation, LexicalStats(n_docs=self._totals(db)[0], df=df))
            return self._stats[1]

    def search_ids(self, query: str, k: int) -> list[tuple[str, float]]:
        """The ``k`` best ``(chunk id, BM25 score)`` pairs for ``query``, best first; only scores > 0.

        Scores are bm25s' Lucene BM25 (see the class docstring), rounded to 4 places; ties keep index
        order.
        """
        q = terms(query)
        if not q or k <= 0:
            return []
        weight = Counter(q)  # a repeated question term counts once per repetition, as in bm25s
        with self._read() as db:
            got = postings.read(db, self.store.ix, list(weight))
            n, length = self._totals(db)
            if not got or n <= 0:
                return []
            order, acc = bm25_top(list(got.values()), [weight[t] for t in got], n, length / n, k)
            if not order:
                return []
            names = {int(r): cid for r, cid in db.execute(
                sql("SELECT row, chunk_id FROM keyword_chunks WHERE ix = :ix AND row IN :rows", "rows"),
                {**self.ix, "rows": order})}
        return [(names[r], round(float(acc[r]), 4)) for r in order if r in names]

    def search(self, kb, query: str, k: int) -> list[Chunk]:
        """The ``k`` best chunks of ``kb`` by BM25, best first; ``score`` is the raw BM25 score (> 0).

        Chunks deleted from ``kb`` meanwhile are left out.
        """
        hits = self.search_ids(query, k)
        if not hits:
            return []
        scores = dict(hits)
        return [c.model_copy(update={"score": scores[c.id]}) for c in kb.get_chunks(scores)]


SYNC_BATCH = 200
"""Documents read back from the store per transaction when the index catches up with it."""
SHARED_GRACE_S = 60.0
"""Seconds a document just written to a shared index is kept by :meth:`KeywordIndex.sync` before its
completion record is seen (another replica writes the record just after the index)."""

_lock = threading.Lock()

def index_path(kb) -> Path | None:
    """Where ``kb``'s keyword index persists when it has no database URL (``kb.database_url``).

    The directory ``<data_dir>/bm25/<name>/`` (the SQLite file ``keyword.sqlite`` in it), or None when
    the knowledge base has no data directory (the index is then kept in memory).
    """
    data_dir = getattr(kb, "data_dir", None)
    return None if data_dir is None else Path(data_dir) / "bm25" / kb.name


def keyword_index(kb) -> KeywordIndex:
    """``kb``'s keyword index, opened once per knowledge base object and bound to its collection.

    Not reconciled with the store: writers use it as it is; readers use :func:`lexical_index`.
    """
    with _lock:
        index = getattr(kb, "_keyword_index", None)
        if index is None:
            url = getattr(kb, "database_url", None)
            index = KeywordIndex(None if url else index_path(kb), url=url, name=kb.name)
            kb._keyword_index = index
    index.bind(str(kb.collection.id))
    return index


def lexical_index(kb) -> KeywordIndex:
    """``kb``'s keyword (BM25) index over the chunks of its complete documents, consistent with the store.

    Ingests and deletes update it as they go (:class:`KeywordIndex`), so this only checks, once per change
    of the store's fingerprint, that the indexed documents are exactly the complete ones, and catches up
    when they are not (a crash between the two writes, another process writing to a Chroma server, an
    index from before this format: then every document is read back and indexed once).
    """
    index = keyword_index(kb)
    key = kb.fingerprint()
    if index.synced != key:
        index.sync(kb.complete_documents(), lambda shas: read_document_texts(kb._get_page, shas))
        index.synced = key
    return index


def lexical_stats(kb) -> LexicalStats:
    """Term statistics of ``kb``'s complete documents (see :func:`lexical_index`)."""
    return lexical_index(kb).stats
