"""The run history's database: its schema, connections, and the ownership rule.

One code path (SQLAlchemy Core) for the two places a history lives: the SQLite file
``data_dir/runs.sqlite`` (the default), or the database ``RAG_DATABASE_URL`` names (PostgreSQL through
psycopg 3), which several replicas share. A history file from before this module used SQLAlchemy has the
same tables and opens as it is (:data:`_MIGRATIONS` adds the columns it lacks).

Each run and thread belongs to the session that made it (a random id per browser session, ``cli``
for the command line). Any session can read anything; only its own session may change or delete it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Float,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import OperationalError, SQLAlchemyError

from rag.db import engine_for, schema_lock, shown

DB_NAME = "runs.sqlite"
CLI_SESSION = "cli"
"""The session id of runs made by ``python -m rag``."""
CUSTOM = "custom"

METADATA = MetaData()
RUNS = Table(
    "runs", METADATA,
    Column("id", Text, primary_key=True),
    Column("session_id", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("question", Text, nullable=False),
    Column("engine", Text, nullable=False),
    Column("stop_kind", Text, nullable=False),
    Column("preset", Text, nullable=False),
    Column("knowledge_base", Text, nullable=False, server_default=""),
    Column("comparison_id", Text),
    Column("steps", Integer, nullable=False, server_default="0"),
    Column("llm_calls", Integer, nullable=False, server_default="0"),
    Column("duration_ms", Float, nullable=False, server_default="0"),
    Column("data", Text, nullable=False),
    Column("feedback", Integer),
    Column("thread_id", Text),  # the run's LangGraph thread ("" for none; NULL until _migrate fills it)
    Column("parent_run_id", Text),
    Column("from_node", Text),
    # NULL: ``data`` is the whole run; "checkpoints": a summary row, its trace in its checkpoints
    # (rag.history.traces).
    Column("trace_at", Text),
    Index("runs_by_session", "session_id", "created_at"),
    Index("runs_by_time", "created_at"),
    Index("runs_by_thread", "thread_id"),
)
COMPARISONS = Table(
    "comparisons", METADATA,
    Column("id", Text, primary_key=True),
    Column("session_id", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("question", Text, nullable=False),
    Column("run_ids", Text, nullable=False),
    Column("labels", Text, nullable=False),
    Index("comparisons_by_session", "session_id", "created_at"),
)
THREADS = Table(
    "threads", METADATA,
    Column("id", Text, primary_key=True),
    Column("session_id", Text, nullable=False),
    Column("title", Text, nullable=False),
    Column("knowledge_base", Text, nullable=False, server_default=""),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Index("threads_by_session", "session_id", "updated_at"),
)
THREAD_RUNS = Table(
    "thread_runs", METADATA,
    Column("thread_id", Text, primary_key=True),  # a thread's rows are deleted with it (delete_thread)
    Column("turn", Integer, nullable=False),
    Column("run_id", Text, primary_key=True),
    Column("created_at", Float, nullable=False),
    Index("thread_runs_by_turn", "thread_id", "turn", "created_at"),
)

_MIGRATIONS = (
    # (table, column, definition): columns added since the first schema. A database made before
    # them gets them on open (their rows hold NULL), so old histories stay readable.
    ("runs", "feedback", "INTEGER"),
    ("runs", "thread_id", "TEXT"),
    ("runs", "parent_run_id", "TEXT"),
    ("runs", "from_node", "TEXT"),
    ("runs", "trace_at", "TEXT"),
)
LINKS = ("thread_id", "parent_run_id", "from_node")
"""The columns of a run row read from its JSON: its thread, and for a re-run its parent and node."""

def upsert(conn: Connection, table: Table, values: dict | list[dict], keys: tuple[str, ...],
           update: tuple[str, ...]) -> None:
    """Insert ``values`` (a row, or a list of rows) into ``table``; on a conflict on ``keys`` set ``update``.

    ``update`` empty keeps the existing row as it is.
    """
    key = (conn.dialect.name, table.name, keys, update)
    stmt = _UPSERTS.get(key)
    if stmt is None:  # built once: building the statement costs more than running it on SQLite
        insert = (postgresql if conn.dialect.name == "postgresql" else sqlite).insert(table)
        stmt = (insert.on_conflict_do_update(index_elements=list(keys),
                                             set_={c: insert.excluded[c] for c in update}) if update
                else insert.on_conflict_do_nothing(index_elements=list(keys)))
        _UPSERTS[key] = stmt
    conn.execute(stmt, values)


_UPSERTS: dict[tuple, Any] = {}


def links(data: str) -> dict[str, str | None]:
    """The :data:`LINKS` of a run from its JSON (``thread_id`` "" when it has none or it is unreadable)."""
    try:
        run = json.loads(data)
    except ValueError:
        run = {}
    if not isinstance(run, dict):
        run = {}
    return {"thread_id": run.get("thread_id") or "", "parent_run_id": run.get("parent_run_id"),
            "from_node": run.get("from_node")}


def _migrate(conn: Connection) -> None:
    inspector = inspect(conn)
    for table, column, definition in _MIGRATIONS:
        have = {c["name"] for c in inspector.get_columns(table)}
        if column not in have:
            conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} {definition}"))
    conn.execute(text("CREATE INDEX IF NOT EXISTS runs_by_thread ON runs (thread_id)"))
    fill_links(conn)


def fill_links(conn: Connection, batch: int = 500) -> int:
    """Fill the :data:`LINKS` of the rows saved before those columns (NULL thread_id) from their JSON.

    Returns how many rows were filled. Done when a history opens; after that no row is left to fill.
    """
    filled = 0
    while True:
        rows = conn.execute(select(RUNS.c.id, RUNS.c.data).where(RUNS.c.thread_id.is_(None))
                            .limit(batch)).all()
        for row in rows:
            conn.execute(update(RUNS).where(RUNS.c.id == row.id).values(**links(row.data)))
        filled += len(rows)
        if len(rows) < batch:
            return filled


class RunOwnedElsewhere(PermissionError):
    """The run (or thread) belongs to another session: it may be read, not changed or deleted."""


def owned(db: Connection, table: str, row_id: str, session_id: str, verb: str) -> bool:
    """Whether the row ``row_id`` of ``table`` (``runs`` or ``threads``) exists; False when it does not.

    Raises RunOwnedElsewhere when another session owns it (``verb`` names what was refused, e.g. ``delete``).
    """
    noun = {"runs": "run", "threads": "thread"}[table]
    t = METADATA.tables[table]
    owner = db.execute(select(t.c.session_id).where(t.c.id == row_id)).scalar()
    if owner is None:
        return False
    if owner != session_id:
        raise RunOwnedElsewhere(f"{noun} {row_id} belongs to another session; "
                                f"a session may {verb} only its own {noun}s")
    return True


class Database:
    """The history at ``path``: a SQLite file (created with its folder on first use) or a database URL.

    Safe to share across threads (a pool of connections; each call takes one). Raises OSError when the
    file cannot be created or is not a run history, or the database cannot be reached.
    """

    def __init__(self, path: Path | str) -> None:
        """Open (creating the tables on first use) the history at ``path``, a file or a database URL."""
        self.url: str | None = str(path) if "://" in str(path) else None
        self.path: Path | None = None if self.url else Path(path)
        """The SQLite file, or None for a database URL."""
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.engine = engine_for(path)
        try:
            with self.engine.begin() as conn:
                schema_lock(conn)
                METADATA.create_all(conn, checkfirst=True)
                _migrate(conn)
        except SQLAlchemyError as exc:
            raise OSError(f"cannot open the run history {shown(path)}: {_reason(exc)}") from None

    @contextmanager
    def _db(self) -> Iterator[Connection]:
        """One connection in one transaction, committed on success.

        Raises OSError when the database cannot be reached or stays locked.
        """
        try:
            with self.engine.begin() as conn:
                yield conn
        except OperationalError as exc:
            raise OSError(f"the run history {shown(self.url or self.path or '')} is unavailable: "
                          f"{_reason(exc)}") from None


def _reason(exc: SQLAlchemyError) -> str:
    """The driver's own words, on one line, without the SQL statement SQLAlchemy appends."""
    orig = getattr(exc, "orig", None)
    return " ".join(str(orig if orig is not None else exc).split())
