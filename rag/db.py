"""The SQL databases of the project (the run history, a shared keyword index): URLs and connection pools.

A location is a SQLite file's path or a database URL (``RAG_DATABASE_URL``, e.g.
``postgresql://user@127.0.0.1:5432/retrace``, reached through psycopg 3). Every caller opening the same
location in a process shares one SQLAlchemy engine (one pool of connections).
"""

from __future__ import annotations

import threading
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def database_url(location: Path | str) -> str:
    """The SQLAlchemy URL of ``location``: a database URL as given, or a SQLite file's path.

    ``postgresql://`` and ``postgres://`` URLs get the psycopg 3 driver (``postgresql+psycopg://``).
    """
    text_ = str(location)
    if "://" not in text_:
        return f"sqlite:///{Path(text_).resolve()}"
    for scheme in ("postgresql://", "postgres://"):
        if text_.startswith(scheme):
            return "postgresql+psycopg://" + text_[len(scheme):]
    return text_


def shown(location: Path | str) -> str:
    """``location`` as messages may show it: a URL without its password."""
    if "://" not in str(location):
        return str(location)
    try:
        return make_url(str(location)).render_as_string(hide_password=True)
    except ArgumentError:
        return "the database RAG_DATABASE_URL names"


def engine_for(location: Path | str) -> Engine:
    """The engine (connection pool) of ``location``, made once per process and URL.

    Raises OSError for a URL SQLAlchemy cannot use (unknown scheme, driver not installed).
    """
    url = database_url(location)
    with _engines_lock:
        engine = _engines.get(url)
        if engine is None:
            try:
                if url.startswith("sqlite"):
                    engine = create_engine(url, connect_args={"timeout": 15, "check_same_thread": False})
                else:
                    engine = create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)
            except (ArgumentError, ImportError) as exc:
                raise OSError(f"cannot use the database {shown(location)}: {exc}") from None
            _engines[url] = engine
    return engine


def schema_lock(conn: Connection) -> None:
    """On PostgreSQL, hold (until the transaction ends) the lock under which tables are created.

    Two replicas starting at once on an empty database would otherwise both create the same table, and
    one would fail. Nothing on SQLite (its writers are serialised already).
    """
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(20202020)"))
