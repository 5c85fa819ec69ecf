"""Where a keyword index keeps its posting lists: one SQLAlchemy Core schema for three places.

A SQLite file per knowledge base under the data directory (the default), SQLite in memory (a knowledge base
without a data directory), or the database ``RAG_DATABASE_URL`` names (PostgreSQL), where every replica reads
and writes the same index: a document ingested through one replica is found by keyword search on all the
others as soon as its transaction commits. Each index is one value of the ``ix`` column (the knowledge base's
name; always ``""`` in a file of its own).

Writes to one index are serialised: SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's transaction-scoped advisory
lock on the index. Reads take no lock.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    TextClause,
    bindparam,
    create_engine,
    event,
    inspect,
    text,
)
from sqlalchemy.pool import StaticPool

from rag.db import engine_for, schema_lock

META = MetaData()
TABLES = (
    Table("keyword_meta", META, Column("ix", Text), Column("key", Text),
          Column("value", Text, nullable=False), PrimaryKeyConstraint("ix", "key")),
    Table("keyword_docs", META, Column("ix", Text), Column("doc_sha", Text),
          Column("chunks", Integer, nullable=False), Column("indexed_at", Float, nullable=False),
          PrimaryKeyConstraint("doc_sha", "ix")),
    Table("keyword_chunks", META, Column("ix", Text), Column("row", Integer, autoincrement=False),
          Column("chunk_id", Text, nullable=False), Column("doc_sha", Text, nullable=False),
          Column("length", Integer, nullable=False), Column("terms", Text, nullable=False),
          PrimaryKeyConstraint("row", "ix"), Index("keyword_chunks_by_doc", "doc_sha", "ix")),
    Table("keyword_segments", META, Column("ix", Text), Column("term", Text),
          Column("seg", Integer, autoincrement=False), Column("tier", Integer, nullable=False),
          Column("rows", LargeBinary, nullable=False), PrimaryKeyConstraint("term", "ix", "seg"),
          sqlite_with_rowid=False),
)
"""meta: format, collection id, totals, generation; docs: indexed documents; chunks: each chunk's row number,
length and terms; segments: per term, a few segments of int32 (row, term frequency, chunk length) triples
(:mod:`rag.store.postings`; before format 7, ``keyword_postings`` held one blob per term). Keys lead with the
column looked up with ``IN (...)``: PostgreSQL 15 does not use a list on the second column of an index, and
``ix`` alone selects the whole index (measured: 0.3 s per lookup of 500 terms at 2,000 chunks)."""

_READ = "retrace_read"
"""Execution option of a SQLite connection that only reads: no ``BEGIN`` (the driver runs in autocommit)."""

_LEGACY_TABLES = ("meta", "docs", "chunks", "postings", "terms_vocab", "keywords", "keyword_postings")
"""The tables of the keyword file before format 6, and format 6's posting lists (dropped; the index is rebuilt
from the store)."""

_SQL: dict[str, TextClause] = {}


def sql(statement: str, *expanding: str) -> TextClause:
    """``statement`` (named ``:params``) as a cached clause; ``expanding`` names the params bound to lists."""
    key = statement + "|" + ",".join(expanding)
    clause = _SQL.get(key)
    if clause is None:
        clause = text(statement)
        if expanding:
            clause = clause.bindparams(*(bindparam(name, expanding=True) for name in expanding))
        _SQL[key] = clause
    return clause


def execute_rows(conn: Connection, statement: str, rows: list[tuple]) -> None:
    """Run ``statement`` once per tuple of ``rows`` in one driver ``executemany``.

    ``statement`` marks its positional parameters with ``?``; they become the driver's own (``%s`` for
    psycopg). SQLAlchemy's per-row parameter processing is skipped: with tens of thousands of posting
    lists per ingest it cost more than the database's own work. Raises sqlalchemy.exc.DBAPIError (the
    driver's error) when a row is refused.
    """
    if rows:
        if conn.dialect.paramstyle != "qmark":
            statement = statement.replace("?", "%s")
        conn.exec_driver_sql(statement, rows)


def _sqlite_engine(url: str, **kwargs) -> Engine:
    engine = create_engine(url, connect_args={"timeout": 60, "check_same_thread": False}, **kwargs)

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # transactions are begun below, not by the driver
        dbapi_connection.execute("PRAGMA journal_mode=WAL")
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")  # WAL: durable across process crashes

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        if not conn.get_execution_options().get(_READ):  # reads run each statement on its own
            conn.exec_driver_sql("BEGIN IMMEDIATE")  # a writer takes the lock first: no deadlock on upgrade

    return engine


class KeywordStore:
    """The database of one keyword index: ``url`` (shared, PostgreSQL) or the file ``path``, or memory.

    ``ix`` is the index's key in the shared database. Raises OSError for a database URL that cannot be used,
    sqlalchemy.exc.SQLAlchemyError when the tables cannot be made.
    """

    def __init__(self, path: Path | None, *, url: str | None = None, ix: str = "") -> None:
        """Open (creating the tables) the store; ``url`` wins over ``path``."""
        self.shared = url is not None
        self.ix = ix if self.shared else ""
        if url is not None:
            self.engine = engine_for(url)
        else:  # one connection per index object, as before (a deleted and remade file is reopened)
            self.engine = _sqlite_engine("sqlite://" if path is None else f"sqlite:///{Path(path).resolve()}",
                                         poolclass=StaticPool)
        self.postgres = self.engine.dialect.name == "postgresql"
        digest = hashlib.blake2b(f"keyword:{self.ix}".encode(), digest_size=8).digest()
        self._lock_key = int.from_bytes(digest, "big", signed=True)
        with self.write() as conn:
            schema_lock(conn)
            if not self.shared:
                have = set(inspect(conn).get_table_names())
                for name in _LEGACY_TABLES:
                    if name in have:
                        conn.exec_driver_sql(f"DROP TABLE {name}")
            META.create_all(conn, checkfirst=True)

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """One transaction holding this index's write lock, committed on success, rolled back on error."""
        with self.engine.begin() as conn:
            if self.postgres:
                conn.execute(sql("SELECT pg_advisory_xact_lock(:k)"), {"k": self._lock_key})
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection for reads, each statement on its own (no transaction, no lock)."""
        options = {"isolation_level": "AUTOCOMMIT"} if self.postgres else {_READ: True}
        with self.engine.connect().execution_options(**options) as conn:
            yield conn

    def close(self) -> None:
        """Close a local store's connection (a shared database's pool stays open for the process)."""
        if not self.shared:
            self.engine.dispose()
