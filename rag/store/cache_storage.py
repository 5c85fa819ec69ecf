"""The semantic cache's entries in a SQL database through SQLAlchemy Core: one code path for two places.

:class:`SqlCacheStorage` implements :class:`rag.store.semantic_cache.CacheStorage` on a SQLite file (a data
directory's ``semantic_cache.sqlite``, the same table :class:`~rag.store.semantic_cache.SqliteCacheStorage`
writes) or on the database ``RAG_DATABASE_URL`` names (PostgreSQL), where every replica reads and writes the
same entries: a question cached through one replica is reused by the others for a paraphrase.

Invalidation needs nothing more: an entry's scope names the knowledge base's collection, revision and chunk
count, which live in the (shared) Chroma store, so an ingest through any replica moves every replica to a new
scope (within :data:`rag.store.chroma.FINGERPRINT_TTL_S`), and its first write there drops the old scope's
entries for all of them.

Entry ids only rise as readers see them: on PostgreSQL an insert holds a transaction-scoped advisory lock,
so ids are taken and committed in one order (a replica catching up "after id N" never skips a row committed
later with a smaller id); on SQLite writers are serialised and ``AUTOINCREMENT`` never reuses an id.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    event,
    func,
    insert,
    select,
    text,
)
from sqlalchemy.exc import SQLAlchemyError

from rag.db import engine_for, schema_lock, shown


@dataclass(frozen=True)
class Scope:
    """What a cached retrieval is valid for: one knowledge base state, one mode, one ``k``.

    ``state`` names the collection, its embedding model, revision and chunk count; it changes with any
    change to the documents. The storages' key, defined here; :mod:`rag.store.semantic_cache` makes it
    (:meth:`~rag.store.semantic_cache.SemanticCache.scope`) and exports it under its own name too.
    """

    kb: str
    state: str
    mode: str
    k: int


META = MetaData()
ENTRIES = Table(
    "semantic_cache", META,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("kb", Text, nullable=False),
    Column("state", Text, nullable=False),
    Column("mode", Text, nullable=False),
    Column("k", Integer, nullable=False),
    Column("query", Text, nullable=False),
    Column("vector", LargeBinary, nullable=False),
    Column("chunks", Text, nullable=False),
    Column("retrieval_ms", Float, nullable=False),
    Column("created_at", Float, nullable=False),
    Index("semantic_cache_by_scope", "kb", "state", "mode", "k", "id"),
    sqlite_autoincrement=True,
)
"""One row per cached retrieval: its scope (kb, state, mode, k), the normalised query, its unit float32
embedding (bytes), the chunks as JSON, how long the retrieval took (ms) and when it was stored (epoch s)."""

_WRITE_LOCK = 31313131
"""PostgreSQL advisory lock key serialising the cache's writes (see the module docstring)."""

# Statements built once, in SQL both dialects run: building a Core select per call costs ~0.1 ms, more
# than SQLite takes to run it.
_VECTORS = text("SELECT id, vector FROM semantic_cache WHERE kb = :kb AND state = :state AND mode = :mode "
                "AND k = :k AND id > :after ORDER BY id")
_ENTRY = text("SELECT query, chunks, retrieval_ms FROM semantic_cache WHERE id = :id")
_ADD = insert(ENTRIES)
_DROP_OTHER_STATES = text("DELETE FROM semantic_cache WHERE kb = :kb AND state <> :state")
_DROP_OLDEST = text("DELETE FROM semantic_cache WHERE kb = :kb AND id <= (SELECT id FROM semantic_cache "
                    "WHERE kb = :kb ORDER BY id DESC LIMIT 1 OFFSET :keep)")
_LOCK = text("SELECT pg_advisory_xact_lock(:k)")


def _wal(dbapi_connection, _record) -> None:
    """A SQLite file's connections: write-ahead log, relaxed syncs (a cache may lose its last entries)."""
    dbapi_connection.execute("PRAGMA journal_mode=WAL")
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


class SqlCacheStorage:
    """:class:`~rag.store.semantic_cache.CacheStorage` in the database at ``location``, opened on first use.

    ``location`` is a SQLite file's path or a database URL (``postgresql://…``). Safe to share between
    threads (a pool of connections) and processes or replicas (the database's own locking). Every method
    raises OSError when the database cannot be reached, created or written (the message names it without
    its password).
    """

    def __init__(self, location: Path | str) -> None:
        """Entries at ``location``; nothing is opened until the first call."""
        self.location = location
        self._ready = False
        self._read_options: dict[str, str] = {}
        self._lock = threading.Lock()

    @property
    def engine(self):
        """The SQLAlchemy engine of ``location`` (shared by the process; see :func:`rag.db.engine_for`)."""
        return engine_for(self.location)

    def _open(self) -> None:
        """Make the file's folder and the table (once), under the schema lock on PostgreSQL."""
        with self._lock:
            if self._ready:
                return
            engine = self.engine
            if engine.dialect.name == "sqlite":
                if "://" not in str(self.location):
                    Path(self.location).parent.mkdir(parents=True, exist_ok=True)
                if not event.contains(engine, "connect", _wal):
                    event.listen(engine, "connect", _wal)
            with engine.begin() as conn:
                schema_lock(conn)
                META.create_all(conn, checkfirst=True)
            if engine.dialect.name == "postgresql":
                self._read_options = {"isolation_level": "AUTOCOMMIT"}
            self._ready = True

    @contextmanager
    def _db(self, write: bool = False) -> Iterator[Connection]:
        """A connection; a write runs in one transaction (committed on success) holding the write lock."""
        try:
            if not self._ready:
                self._open()
            if not write:  # each read on its own: no transaction to end (a round trip less on PostgreSQL)
                with self.engine.connect().execution_options(**self._read_options) as conn:
                    yield conn
                return
            with self.engine.begin() as conn:
                if conn.dialect.name == "postgresql":
                    conn.execute(_LOCK, {"k": _WRITE_LOCK})
                yield conn
        except SQLAlchemyError as exc:
            orig = getattr(exc, "orig", None)
            reason = " ".join(str(orig if orig is not None else exc).split())
            raise OSError(f"the semantic cache at {shown(self.location)} is unavailable: {reason}") from None

    def vectors(self, scope: Scope, after: int) -> list[tuple[int, bytes]]:
        """See :meth:`rag.store.semantic_cache.CacheStorage.vectors`."""
        with self._db() as conn:
            rows = conn.execute(_VECTORS, {"kb": scope.kb, "state": scope.state, "mode": scope.mode,
                                           "k": scope.k, "after": after}).all()
        return [(int(i), bytes(v)) for i, v in rows]

    def entry(self, entry_id: int) -> tuple[str, str, float] | None:
        """See :meth:`rag.store.semantic_cache.CacheStorage.entry`."""
        with self._db() as conn:
            row = conn.execute(_ENTRY, {"id": entry_id}).first()
        return None if row is None else (str(row[0]), str(row[1]), float(row[2]))

    def add(self, scope: Scope, query: str, vector: bytes, chunks_json: str, retrieval_ms: float) -> int:
        """See :meth:`rag.store.semantic_cache.CacheStorage.add`."""
        with self._db(write=True) as conn:
            got = conn.execute(_ADD, {"kb": scope.kb, "state": scope.state, "mode": scope.mode, "k": scope.k,
                                      "query": query, "vector": vector, "chunks": chunks_json,
                                      "retrieval_ms": retrieval_ms, "created_at": time.time()})
            key = got.inserted_primary_key
            if key is None:
                raise OSError(f"the semantic cache at {shown(self.location)} returned no id for a new entry")
            return int(key[0])

    def prune(self, scope: Scope, keep: int) -> None:
        """See :meth:`rag.store.semantic_cache.CacheStorage.prune`."""
        with self._db(write=True) as conn:
            conn.execute(_DROP_OTHER_STATES, {"kb": scope.kb, "state": scope.state})
            conn.execute(_DROP_OLDEST, {"kb": scope.kb, "keep": keep})

    def clear(self) -> None:
        """See :meth:`rag.store.semantic_cache.CacheStorage.clear`."""
        with self._db(write=True) as conn:
            conn.execute(text("DELETE FROM semantic_cache"))

    def count(self) -> int:
        """Number of stored entries (all scopes)."""
        with self._db() as conn:
            return int(conn.execute(select(func.count()).select_from(ENTRIES)).scalar_one())
