"""The keyword (BM25) index of a knowledge base and the corpus statistics the offline engine needs.

:class:`KeywordIndex` keeps it in SQLite (posting lists) under the data directory, updated incrementally by
every ingest and delete in the same crash-safe step as the document's completion record
(:mod:`rag.store.records`). :class:`LexicalIndex` (in :mod:`rag.store.lexical`, importable from here) is the
same ranking built whole in memory with bm25s: the reference the incremental index is tested and benchmarked
against.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import sqlite3
import threading
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from rag.models import Chunk
from rag.store.client import test_kill_in_keywords
from rag.store.lexical import LexicalIndex, LexicalStats
from rag.store.records import read_document_texts
from rag.text import terms

__all__ = ["INDEX_FORMAT", "KeywordIndex", "LexicalIndex", "LexicalStats", "index_path", "keyword_index",
           "lexical_index", "lexical_stats"]

INDEX_FORMAT = 5
"""Version of the on-disk keyword index layout and of the tokenizer (:func:`rag.text.terms`) it was
built with (5: posting lists in SQLite, complete documents only): an index saved under another version
is emptied and rebuilt from the store."""


class KeywordIndex:
    """The persistent, incremental BM25 index of one knowledge base: an inverted index in SQLite.

    Each chunk's :func:`rag.text.terms` (stems, CJK bigrams) are stored with it, and each term has one
    posting list (a blob of int32 (chunk row id, term frequency, chunk length) triples) that adds and
    deletes rewrite. A question reads the posting lists of its terms only and scores every chunk they
    hold with numpy: bm25s' Lucene BM25 (k1 = :data:`K1`, b = :data:`B`, idf ln(1 + (N - df + 0.5) /
    (df + 0.5))), exactly, over all matches. (SQLite FTS5 was measured first: its ``bm25()`` ranking of
    an OR query took 2.5 s at 100,000 chunks, where common terms match 40% of the chunks, and its
    vocabulary lookups 15 ms a term.)

    Documents are added and deleted whole, each call in one SQLite transaction (atomic even under
    SIGKILL: a reader sees a document with all its chunks or not at all). :class:`KnowledgeBase` writes
    a document here just before its completion record and deletes it just after removing that record;
    :func:`lexical_index` reconciles the two after a crash between them (see :meth:`sync`).
    ``path`` None keeps the index in memory. Raises sqlite3.Error when the file cannot be written.
    """

    FILE = "keyword.sqlite"

    def __init__(self, path: Path | None) -> None:
        """Open (creating) the index in the directory ``path`` (``keyword.sqlite``), or in memory."""
        if path is not None:
            Path(path).mkdir(parents=True, exist_ok=True)
            for old in ("meta.json", "ids.json"):  # the bm25s index of format 2, now unused
                (Path(path) / old).unlink(missing_ok=True)
            shutil.rmtree(Path(path) / "bm25s", ignore_errors=True)
        target = ":memory:" if path is None else str(Path(path) / self.FILE)
        self._db = sqlite3.connect(target, check_same_thread=False, isolation_level=None, timeout=60)
        self._lock = threading.RLock()
        self.synced: tuple | None = None
        """The knowledge base fingerprint this index was last reconciled with (per process)."""
        self._stats: tuple[int, LexicalStats] | None = None
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL: durable across process crashes
            with self._write():
                self._db.execute(_SCHEMA[0])  # meta
                if self._meta("format") != str(INDEX_FORMAT):  # another layout: start afresh
                    for name in ("terms_vocab", "keywords", "postings", "chunks", "docs"):  # 3: FTS5
                        self._db.execute(f"DROP TABLE IF EXISTS {name}")
                    self._db.execute("DELETE FROM meta")
                for sql in _SCHEMA:
                    self._db.execute(sql)
                if self._meta("format") != str(INDEX_FORMAT):
                    self._set_meta("format", INDEX_FORMAT)

    # -- sqlite plumbing -----------------------------------------------------------------
    @contextlib.contextmanager
    def _write(self) -> Iterator[None]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: object) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, str(value)))

    def _clear(self) -> None:
        for table in ("docs", "chunks", "postings"):
            self._db.execute(f"DELETE FROM {table}")
        self._db.execute("DELETE FROM meta WHERE key IN ('chunks', 'length')")
        self._bump()

    def _bump(self) -> None:
        self._set_meta("generation", int(self._meta("generation") or 0) + 1)

    def close(self) -> None:
        """Close the SQLite connection."""
        with self._lock:
            self._db.close()

    # -- writes --------------------------------------------------------------------------
    def bind(self, collection_id: str) -> None:
        """Tie the index to one Chroma collection.

        An index left by another collection (a deleted and recreated knowledge base of the same name) is
        emptied first.
        """
        with self._lock:
            if self._meta("collection_id") == collection_id:
                return
            with self._write():
                self._clear()
                self._set_meta("collection_id", collection_id)
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
        with self._write():
            self._delete([sha for sha, _ in docs])
            n = int(self._meta("chunks") or 0)
            length = int(self._meta("length") or 0)
            rowid = int(self._db.execute("SELECT coalesce(max(rowid), 0) FROM chunks").fetchone()[0])
            rows: list[tuple[int, str, str, int, str]] = []
            vocab: dict[str, int] = {}  # term -> its number in this call
            owners = array("i")  # per posting: the term's number
            triples = array("i")  # per posting: chunk row id, term frequency, chunk length
            for sha, chunks in docs:
                for cid, toks in chunks:
                    rowid += 1
                    rows.append((rowid, cid, sha, len(toks), " ".join(toks)))
                    for t, tf in Counter(toks).items():
                        owners.append(vocab.setdefault(t, len(vocab)))
                        triples.extend((rowid, tf, len(toks)))
                    length += len(toks)
            self._db.executemany("INSERT INTO docs(doc_sha, chunks) VALUES (?, ?)",
                                 [(sha, len(chunks)) for sha, chunks in docs])
            self._db.executemany(
                "INSERT INTO chunks(rowid, chunk_id, doc_sha, length, terms) VALUES (?, ?, ?, ?, ?)", rows)
            test_kill_in_keywords("mid")
            self._merge(vocab, np.frombuffer(owners, dtype=np.int32),
                        np.frombuffer(triples, dtype=np.int32).reshape(-1, 3))
            self._set_meta("chunks", n + len(rows))
            self._set_meta("length", length)
            self._bump()
        test_kill_in_keywords("after")
        return len(rows)

    def delete(self, doc_shas: Iterable[str]) -> int:
        """Remove these documents (unknown ones are ignored) in one transaction; returns chunks removed."""
        shas = list(doc_shas)
        if not shas:
            return 0
        with self._write():
            removed = self._delete(shas)
            if removed:
                self._bump()
        return removed

    def _delete(self, shas: list[str]) -> int:
        removed = 0
        for start in range(0, len(shas), 500):
            part = shas[start:start + 500]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(f"SELECT rowid, length, terms FROM chunks WHERE doc_sha IN ({marks})",
                                    part).fetchall()
            if rows:
                ids = [(r[0],) for r in rows]
                self._unpost(np.array([r[0] for r in rows], dtype=np.int32),
                             {t for r in rows for t in r[2].split()})
                self._db.executemany("DELETE FROM chunks WHERE rowid = ?", ids)
                self._set_meta("chunks", int(self._meta("chunks") or 0) - len(rows))
                self._set_meta("length", int(self._meta("length") or 0) - sum(r[1] for r in rows))
                removed += len(rows)
            self._db.execute(f"DELETE FROM docs WHERE doc_sha IN ({marks})", part)
        return removed

    def _postings(self, term: str) -> np.ndarray:
        """The posting list of ``term``: a (3, n) int32 view of chunk row ids, term frequencies, lengths."""
        row = self._db.execute("SELECT rows FROM postings WHERE term = ?", (term,)).fetchone()
        return _unpack(row[0] if row else None)

    def _merge(self, vocab: dict[str, int], owners: np.ndarray, triples: np.ndarray) -> None:
        """Append new postings to their terms' lists.

        ``triples`` holds one (chunk row id, tf, length) row per posting, in row id order, and ``owners`` the
        number ``vocab`` gives its term.
        """
        if not len(owners):
            return
        order = np.argsort(owners, kind="stable")  # grouped by term, row ids still ascending in each
        grouped = np.ascontiguousarray(triples[order])
        bounds = np.searchsorted(owners[order], np.arange(len(vocab) + 1))
        terms_ = list(vocab)
        for start in range(0, len(terms_), 500):  # one read and one write statement per 500 terms
            part = terms_[start:start + 500]
            marks = ",".join("?" * len(part))
            old = dict(self._db.execute(f"SELECT term, rows FROM postings WHERE term IN ({marks})", part))
            self._db.executemany(  # (row id, tf, length) int32 triples: appending is concatenation
                "INSERT OR REPLACE INTO postings(term, rows) VALUES (?, ?)",
                [(t, old.get(t, b"") + grouped[bounds[vocab[t]]:bounds[vocab[t] + 1]].tobytes())
                 for t in part])

    def _unpost(self, rowids: np.ndarray, affected: set[str]) -> None:
        for term in affected:
            kept = self._postings(term)
            kept = kept[:, ~np.isin(kept[0], rowids)]
            if kept.shape[1]:
                self._db.execute("UPDATE postings SET rows = ? WHERE term = ?",
                                 (np.ascontiguousarray(kept.T).tobytes(), term))
            else:
                self._db.execute("DELETE FROM postings WHERE term = ?", (term,))

    def sync(self, complete: dict[str, int], read: Callable[[list[str]], Iterator[tuple[str, list]]]
             ) -> tuple[int, int]:
        """Make the indexed documents exactly ``complete`` (doc_sha -> chunk count, the completion records).

        Documents indexed but not complete (a crash between this index's write and the completion
        record, or a delete elsewhere) are removed; complete documents missing here (an older index, a
        crash after the record, another writer) are read with ``read(shas)``, which yields ``(doc_sha,
        [(chunk id, text), ...])``, and added in batches. Returns ``(added, removed)`` documents.
        """
        have = self.documents()
        stale = [s for s, n in have.items() if complete.get(s) != n]
        missing = [s for s, n in complete.items() if have.get(s) != n]
        self.delete(stale)
        for start in range(0, len(missing), SYNC_BATCH):
            self.add(read(missing[start:start + SYNC_BATCH]))
        return len(missing), len(stale)

    # -- reads ---------------------------------------------------------------------------
    def documents(self) -> dict[str, int]:
        """doc_sha -> chunk count of every indexed document."""
        with self._lock:
            return dict(self._db.execute("SELECT doc_sha, chunks FROM docs").fetchall())

    @property
    def ids(self) -> list[str]:
        """The ids of every indexed chunk, in index order."""
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT chunk_id FROM chunks ORDER BY rowid")]

    def _totals(self) -> tuple[int, int]:
        return int(self._meta("chunks") or 0), int(self._meta("length") or 0)

    @property
    def stats(self) -> LexicalStats:
        """Document frequencies of every indexed term (posting list lengths), cached until the next write."""
        with self._lock:
            generation = int(self._meta("generation") or 0)
            if self._stats is None or self._stats[0] != generation:
                df = {t: n // 12 for t, n in self._db.execute("SELECT term, length(rows) FROM postings")}
                self._stats = (generation, LexicalStats(n_docs=self._totals()[0], df=df))
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
        with self._lock:
            marks = ",".join("?" * len(weight))
            got = self._db.execute(f"SELECT term, rows FROM postings WHERE term IN ({marks})",
                                   list(weight)).fetchall()
            n, length = self._totals()
            if not got or n <= 0:
                return []
            lists = [(term, _unpack(blob)) for term, blob in got]
            top = max(int(p[0].max()) for _, p in lists)
            acc = np.zeros(top + 1, dtype=np.float64)
            avgdl = length / n
            for term, (rows, tf, dl) in lists:
                idf = math.log(1.0 + (n - len(rows) + 0.5) / (len(rows) + 0.5))
                acc[rows] += weight[term] * idf * tf / (tf + K1 * (1 - B + B * dl / avgdl))
            best = np.flatnonzero(acc > 0)
            if len(best) > k:
                cut = np.partition(acc[best], len(best) - k)[len(best) - k]
                best = best[acc[best] >= cut]  # the k best, with any ties at the cut
            order = sorted(best.tolist(), key=lambda r: (-acc[r], r))[:k]
            marks = ",".join("?" * len(order))
            names = dict(self._db.execute(f"SELECT rowid, chunk_id FROM chunks WHERE rowid IN ({marks})",
                                          order).fetchall())
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


K1, B = 1.5, 0.75
"""BM25 parameters, bm25s' defaults (Lucene variant)."""


def _unpack(blob: bytes | None) -> np.ndarray:
    if not blob:
        return np.zeros((3, 0), dtype=np.int32)
    return np.frombuffer(blob, dtype=np.int32).reshape(-1, 3).T

SYNC_BATCH = 200
"""Documents read back from the store per transaction when the index catches up with it."""

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS docs(doc_sha TEXT PRIMARY KEY, chunks INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS chunks(rowid INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL, "
    "doc_sha TEXT NOT NULL, length INTEGER NOT NULL, terms TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks(doc_sha)",
    "CREATE TABLE IF NOT EXISTS postings(term TEXT PRIMARY KEY, rows BLOB NOT NULL) WITHOUT ROWID",
)

_lock = threading.Lock()

def index_path(kb) -> Path | None:
    """Where ``kb``'s keyword index persists.

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
            index = KeywordIndex(index_path(kb))
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
