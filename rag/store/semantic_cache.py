"""The semantic cache: a question close in meaning to one asked before reuses that question's retrieval.

Results are keyed on the query's embedding (the knowledge base's own model). A new query whose cosine
similarity to a cached one is at least the threshold (``RAG_SEMANTIC_CACHE_THRESHOLD``, 0.97 by default;
``0`` or ``off`` turns the cache off) gets that query's chunks without searching again.

Each entry is scoped to the knowledge base, its collection (a re-index or a delete and re-create makes a
new one), its embedding model, its revision and chunk count
(:meth:`rag.store.chroma.KnowledgeBase.fingerprint`, raised by every add, delete and re-index), the
retrieval mode and ``k``: any change to the documents starts an empty scope, so no result from before the
change is ever served, and the old scope's entries are dropped on the next write.

Entries persist through a small storage interface (:class:`CacheStorage`); :class:`SqliteCacheStorage`
keeps them in ``<data_dir>/semantic_cache.sqlite`` with the standard library, shared by the processes on
that data directory. When ``RAG_DATABASE_URL`` is set, :class:`rag.store.cache_storage.SqlCacheStorage`
keeps them in that database instead (SQLAlchemy Core, PostgreSQL), shared by every replica: a question
cached through one is reused by the others, and since a scope's state is read from the (shared) Chroma
store, an ingest through any replica moves all of them to a new, empty scope. (The SQLAlchemy storage on the
SQLite file would work too, but costs about 0.06 ms more per read, doubling a hit's lookup.)
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from rag.models import Chunk
from rag.store.cache_storage import Scope, SqlCacheStorage
from rag.text import clip

DEFAULT_THRESHOLD = 0.97
"""Cosine similarity from which a question reuses a cached question's retrieval."""
MAX_ENTRIES = 2000
"""Entries kept per knowledge base (the oldest are dropped first)."""
PRUNE_EVERY = 50
"""Old entries are dropped on the first write in a new state, then every this many writes."""
FILE_NAME = "semantic_cache.sqlite"

log = logging.getLogger(__name__)


def normalise(query: str) -> str:
    """``query`` with its runs of whitespace made single spaces and its ends stripped."""
    return " ".join(query.split())


@dataclass(frozen=True)
class Reuse:
    """Where a retrieval came from when it was not searched again.

    ``question``: the cached query whose chunks were reused (the query itself for an identical one);
    ``similarity``: cosine similarity of the two queries' embeddings in [-1, 1] (1.0 for an identical one);
    ``saved_ms``: how long the cached query's own retrieval took (0 when unknown).
    """

    question: str
    similarity: float = 1.0
    saved_ms: float = 0.0

    def other_than(self, query: str) -> bool:
        """True when the reused retrieval was made for another wording than ``query``."""
        return self.question != normalise(query)

    def note(self) -> str:
        """``retrieval reused from a similar question: '…' (cosine 0.98)``, for a step's summary."""
        return (f"retrieval reused from a similar question: '{clip(self.question, 80)}' "
                f"(cosine {self.similarity:.2f})")


class CacheStorage(Protocol):
    """Where the semantic cache's entries persist. Each method may raise its backend's errors."""

    def vectors(self, scope: Scope, after: int) -> list[tuple[int, bytes]]:
        """``(entry id, float32 vector bytes)`` of the entries of ``scope`` with an id above ``after``."""
        ...

    def entry(self, entry_id: int) -> tuple[str, str, float] | None:
        """``(query, chunks as JSON, retrieval ms)`` of one entry; None once it was dropped."""
        ...

    def add(self, scope: Scope, query: str, vector: bytes, chunks_json: str, retrieval_ms: float) -> int:
        """Store one entry of ``scope``; returns its id (ids only rise)."""
        ...

    def prune(self, scope: Scope, keep: int) -> None:
        """Drop the entries of ``scope.kb`` in any other state, and all but its ``keep`` newest."""
        ...

    def clear(self) -> None:
        """Drop every entry."""
        ...


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS semantic_cache(id INTEGER PRIMARY KEY AUTOINCREMENT, kb TEXT NOT NULL, "
    "state TEXT NOT NULL, mode TEXT NOT NULL, k INTEGER NOT NULL, query TEXT NOT NULL, vector BLOB NOT NULL, "
    "chunks TEXT NOT NULL, retrieval_ms REAL NOT NULL, created_at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS semantic_cache_by_scope ON semantic_cache(kb, state, mode, k, id)",
)


class SqliteCacheStorage:
    """:class:`CacheStorage` in one SQLite file (standard library), opened on first use.

    Safe to share between threads (one connection behind a lock) and processes (SQLite's own locking,
    write-ahead log). Raises sqlite3.Error when the file cannot be opened or written.
    """

    def __init__(self, path: Path) -> None:
        """Entries in the SQLite file ``path`` (created with its directory on first use)."""
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # a cache: a power loss may lose the last entries
            for sql in _SCHEMA:
                db.execute(sql)
            self._db = db
        return self._db

    def vectors(self, scope: Scope, after: int) -> list[tuple[int, bytes]]:
        """See :meth:`CacheStorage.vectors`."""
        with self._lock:
            rows = self._conn().execute(
                "SELECT id, vector FROM semantic_cache WHERE kb = ? AND state = ? AND mode = ? AND k = ? "
                "AND id > ? ORDER BY id", (scope.kb, scope.state, scope.mode, scope.k, after)).fetchall()
        return [(int(i), bytes(v)) for i, v in rows]

    def entry(self, entry_id: int) -> tuple[str, str, float] | None:
        """See :meth:`CacheStorage.entry`."""
        with self._lock:
            row = self._conn().execute("SELECT query, chunks, retrieval_ms FROM semantic_cache WHERE id = ?",
                                       (entry_id,)).fetchone()
        return None if row is None else (str(row[0]), str(row[1]), float(row[2]))

    def add(self, scope: Scope, query: str, vector: bytes, chunks_json: str, retrieval_ms: float) -> int:
        """See :meth:`CacheStorage.add`."""
        with self._lock:
            cur = self._conn().execute(
                "INSERT INTO semantic_cache(kb, state, mode, k, query, vector, chunks, retrieval_ms, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (scope.kb, scope.state, scope.mode, scope.k, query, vector, chunks_json, retrieval_ms,
                 time.time()))
            return int(cur.lastrowid or 0)

    def prune(self, scope: Scope, keep: int) -> None:
        """See :meth:`CacheStorage.prune`."""
        with self._lock:
            db = self._conn()
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM semantic_cache WHERE kb = ? AND state <> ?", (scope.kb, scope.state))
                db.execute("DELETE FROM semantic_cache WHERE kb = ? AND id <= (SELECT id FROM semantic_cache "
                           "WHERE kb = ? ORDER BY id DESC LIMIT 1 OFFSET ?)", (scope.kb, scope.kb, keep))
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def clear(self) -> None:
        """See :meth:`CacheStorage.clear`."""
        with self._lock:
            self._conn().execute("DELETE FROM semantic_cache")


@dataclass
class _Mirror:
    """The vectors of one scope held in memory, caught up from the storage by id."""

    ids: list[int]
    matrix: np.ndarray
    last: int = 0


def _is_local(kb) -> bool:
    """True when ``kb`` embeds on this machine (the hashing embeddings): a query costs no call."""
    return getattr(getattr(kb, "embedding_function", None), "embed_terms", None) is not None


class SemanticCache:
    """Retrieval results reused across questions whose embeddings are within ``threshold`` (cosine).

    See the module docstring for the scope. A query is embedded with the knowledge base's own model
    (``kb.embed_query``, shared with dense retrieval); with a model behind an API, BM25 retrievals are
    not cached, since the embedding call would cost more than the search it saves.
    """

    def __init__(self, storage: CacheStorage, threshold: float = DEFAULT_THRESHOLD,
                 max_entries: int = MAX_ENTRIES) -> None:
        """A cache over ``storage``. Raises ValueError unless 0 < ``threshold`` <= 1."""
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"the semantic cache threshold must be in (0, 1], got {threshold}")
        self.storage = storage
        self.threshold = threshold
        self.max_entries = max_entries
        self._mirrors: dict[Scope, _Mirror] = {}
        self._lock = threading.Lock()
        self._writes: dict[Scope, int] = {}  # entries this process added per scope, to prune now and then

    @staticmethod
    def scope(kb, mode: str, k: int) -> Scope | None:
        """The scope of a retrieval from ``kb``; None when ``kb`` is empty or cannot say its revision."""
        fingerprint = getattr(kb, "fingerprint", None)
        if fingerprint is None:
            return None
        name, revision, count = fingerprint()
        if not count:
            return None
        state = f"{kb.collection.id}|{getattr(kb, 'embedding', '')}|r{revision}|n{count}"
        return Scope(kb=str(name), state=state, mode=mode, k=int(k))

    def retrieve(self, kb, query: str, k: int, mode: str,
                 search: Callable[[], list[Chunk]]) -> tuple[list[Chunk], Reuse | None]:
        """The chunks of a cached query similar to ``query``, else ``search()``'s (then cached).

        Returns ``(chunks, Reuse)`` on a hit, ``(chunks, None)`` when ``search`` ran. A storage that fails
        (a locked or unwritable file) is logged and skipped: the search runs as without a cache. Whatever
        ``search`` or the embedding model raises is raised.
        """
        scope = self.scope(kb, mode, k) if query.strip() and (mode != "bm25" or _is_local(kb)) else None
        if scope is None:
            return search(), None
        vector = _unit(_embed(kb, query))
        try:
            hit = self._lookup(scope, vector)
        except (sqlite3.Error, OSError) as exc:
            log.warning("semantic cache skipped: %s", exc)
            return search(), None
        if hit is not None:
            return hit
        started = time.perf_counter()
        found = search()
        took = (time.perf_counter() - started) * 1000
        try:
            self.storage.add(scope, normalise(query), vector.tobytes(),
                             json.dumps([c.model_dump() for c in found]), round(took, 3))
            with self._lock:
                n = self._writes[scope] = self._writes.get(scope, 0) + 1
                if n == 1:  # a new state: forget the counts of the old ones
                    self._writes = {s: c for s, c in self._writes.items() if s.kb != scope.kb or s == scope}
            if n % PRUNE_EVERY == 1:  # the first write in a state drops the old states' entries
                self.storage.prune(scope, self.max_entries)
        except (sqlite3.Error, OSError) as exc:
            log.warning("semantic cache not written: %s", exc)
        return found, None

    def _lookup(self, scope: Scope, vector: np.ndarray) -> tuple[list[Chunk], Reuse] | None:
        with self._lock:
            mirror = self._caught_up(scope, vector.shape[0])
            if not mirror.ids:
                return None
            sims = mirror.matrix @ vector
            best = int(np.argmax(sims))
            similarity, entry_id = float(sims[best]), mirror.ids[best]
        if similarity < self.threshold:
            return None
        got = self.storage.entry(entry_id)
        if got is None:  # dropped meanwhile (pruned by another writer): read the scope again next time
            with self._lock:
                self._mirrors.pop(scope, None)
            return None
        question, chunks_json, took = got
        chunks = [Chunk.model_validate(c) for c in json.loads(chunks_json)]
        return chunks, Reuse(question=question, similarity=round(min(similarity, 1.0), 4), saved_ms=took)

    def _caught_up(self, scope: Scope, dim: int) -> _Mirror:
        """The scope's mirror with every entry stored since it was last read (called under the lock)."""
        for old in [s for s in self._mirrors if s.kb == scope.kb and s.state != scope.state]:
            del self._mirrors[old]  # the knowledge base changed: those entries can never be served
        mirror = self._mirrors.setdefault(scope, _Mirror([], np.zeros((0, dim), dtype=np.float32)))
        rows = [(i, v) for i, v in self.storage.vectors(scope, mirror.last) if len(v) == 4 * dim]
        if rows:
            mirror.ids.extend(i for i, _ in rows)
            fresh = np.stack([np.frombuffer(v, dtype=np.float32) for _, v in rows])
            mirror.matrix = np.vstack([mirror.matrix, fresh])
            mirror.last = rows[-1][0]
        if len(mirror.ids) > 2 * self.max_entries:  # entries pruned away still sit here: read afresh
            del self._mirrors[scope]
            return self._caught_up(scope, dim)
        return mirror

    def clear(self) -> None:
        """Forget every entry, stored and in memory."""
        with self._lock:
            self._mirrors.clear()
            self.storage.clear()


def _embed(kb, query: str) -> Any:
    embed = getattr(kb, "embed_query", None)
    return embed(query) if callable(embed) else kb.embedding_function([query])[0]


def _unit(vector: Any) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32).ravel()
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


_CACHES: dict[tuple[str, float], SemanticCache] = {}
_CACHES_LOCK = threading.Lock()


def semantic_cache_for(settings) -> SemanticCache | None:
    """The process's semantic cache for ``settings`` (its database or data directory); None when off.

    One per place and threshold, made on first use (nothing is opened until the first question). The place is
    the database ``settings.database_url`` names (``RAG_DATABASE_URL``, shared by the replicas) when set, else
    the file ``<data_dir>/semantic_cache.sqlite``.
    """
    threshold = float(getattr(settings, "semantic_cache_threshold", DEFAULT_THRESHOLD) or 0.0)
    if threshold <= 0.0:
        return None
    url = getattr(settings, "database_url", None) or ""
    key = (url or str(Path(settings.data_dir).resolve()), threshold)
    with _CACHES_LOCK:
        cache = _CACHES.get(key)
        if cache is None:
            storage: CacheStorage = (SqlCacheStorage(url) if url
                                     else SqliteCacheStorage(Path(settings.data_dir) / FILE_NAME))
            cache = SemanticCache(storage, threshold)
            _CACHES[key] = cache
    return cache
