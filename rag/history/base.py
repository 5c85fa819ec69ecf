"""The run history's database: its schema, connections, and the ownership rule.

Each run and thread belongs to the session that made it (a random id per browser session, ``cli``
for the command line). Any session can read anything; only its own session may change or delete it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

DB_NAME = "runs.sqlite"
CLI_SESSION = "cli"
"""The session id of runs made by ``python -m rag``."""
CUSTOM = "custom"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    question TEXT NOT NULL,
    engine TEXT NOT NULL,
    stop_kind TEXT NOT NULL,
    preset TEXT NOT NULL,
    knowledge_base TEXT NOT NULL DEFAULT '',
    comparison_id TEXT,
    steps INTEGER NOT NULL DEFAULT 0,
    llm_calls INTEGER NOT NULL DEFAULT 0,
    duration_ms REAL NOT NULL DEFAULT 0,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_session ON runs (session_id, created_at);
CREATE INDEX IF NOT EXISTS runs_by_time ON runs (created_at);
CREATE TABLE IF NOT EXISTS comparisons (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    question TEXT NOT NULL,
    run_ids TEXT NOT NULL,
    labels TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS comparisons_by_session ON comparisons (session_id, created_at);
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    title TEXT NOT NULL,
    knowledge_base TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS threads_by_session ON threads (session_id, updated_at);
CREATE TABLE IF NOT EXISTS thread_runs (
    thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
    turn INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (thread_id, run_id)
);
CREATE INDEX IF NOT EXISTS thread_runs_by_turn ON thread_runs (thread_id, turn, created_at);
"""

_MIGRATIONS = (
    # (table, column, definition): columns added since the first schema. A database made before
    # them gets them on open (their rows hold NULL), so old histories stay readable.
    ("runs", "feedback", "INTEGER"),
)


def _migrate(db: sqlite3.Connection) -> None:
    for table, column, definition in _MIGRATIONS:
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if column not in have:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")


class RunOwnedElsewhere(PermissionError):
    """The run (or thread) belongs to another session: it may be read, not changed or deleted."""


def owned(db: sqlite3.Connection, table: str, row_id: str, session_id: str, verb: str) -> bool:
    """Whether the row ``row_id`` of ``table`` (``runs`` or ``threads``) exists; False when it does not.

    Raises RunOwnedElsewhere when another session owns it (``verb`` names what was refused, e.g. ``delete``).
    """
    noun = {"runs": "run", "threads": "thread"}[table]
    row = db.execute(f"SELECT session_id FROM {table} WHERE id = ?", (row_id,)).fetchone()
    if row is None:
        return False
    if row["session_id"] != session_id:
        raise RunOwnedElsewhere(f"{noun} {row_id} belongs to another session; "
                                f"a session may {verb} only its own {noun}s")
    return True


class Database:
    """The SQLite file at ``path`` (created with its directory on first use), one connection a call.

    Safe to share across threads. Raises OSError when the file cannot be created or is not a run
    history.
    """

    def __init__(self, path: Path | str) -> None:
        """Open (creating on first use) the history at ``path``; its folder is created too."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with self._db() as db:
                db.executescript(_SCHEMA)
                _migrate(db)
        except sqlite3.Error as exc:
            raise OSError(f"cannot open the run history {self.path}: {exc}") from None

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.path, timeout=15)) as db:
            db.row_factory = sqlite3.Row
            with db:  # one transaction, committed on success
                yield db
