"""The graph's checkpointer: a checkpoint after every step of every run, in SQLite or PostgreSQL.

``langgraph-checkpoint-sqlite`` writes ``data_dir/checkpoints.sqlite`` by default;
``langgraph-checkpoint-postgres`` (psycopg 3, a connection pool) writes the database ``RAG_DATABASE_URL``
names, so replicas share it. A conversation is one LangGraph thread (its thread id); a one-off question is
a thread of its own (the run id). Every checkpoint of a run carries the run's id in its metadata
(:data:`RUN_KEY`), which is how a run's checkpoints are found again (re-run from a step).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.sqlite import SqliteSaver

from rag.secrets import scrub

CHECKPOINTS_NAME = "checkpoints.sqlite"
"""The SQLite file of the checkpoints in the data directory (when no RAG_DATABASE_URL is set)."""
RUN_KEY = "retrace_run_id"
"""The checkpoint metadata key that names the run a checkpoint belongs to."""

_OPEN: dict[str, BaseCheckpointSaver] = {}
_LOCK = threading.Lock()


def open_checkpointer(settings) -> BaseCheckpointSaver:
    """The checkpointer of ``settings``, opened once per process and database (then shared, thread-safe).

    The database ``settings.database_url`` names when it is set: PostgreSQL (its tables are created on first
    use), or a ``sqlite:///`` URL's file (beside the run history's tables); else SQLite at
    ``settings.data_dir / CHECKPOINTS_NAME``. Raises OSError (with no password in it) when the database
    cannot be opened.
    """
    url = getattr(settings, "database_url", "") or ""
    key = url or str((Path(settings.data_dir) / CHECKPOINTS_NAME).resolve())
    with _LOCK:
        saver = _OPEN.get(key)
        if saver is None:
            try:
                if url.startswith("sqlite:///"):
                    saver = sqlite_saver(Path(url.removeprefix("sqlite:///")))
                else:
                    saver = _postgres(url) if url else sqlite_saver(Path(key))
            except Exception as exc:  # psycopg, sqlite3 and OS errors alike: one line, scrubbed
                where = "the database of RAG_DATABASE_URL" if url else key
                raise OSError(f"cannot open the checkpoints in {where}: "
                              f"{type(exc).__name__}: {scrub(str(exc).replace(url, '***') if url else exc)}"
                              ) from None
            _OPEN[key] = saver
        return saver


def checkpointer_of(where: str, data_dir: Path | str) -> Callable[[], BaseCheckpointSaver | None]:
    """A function opening the checkpointer that goes with the run history at ``where``.

    That is (see :func:`open_checkpointer`) the database URL ``where``, else ``data_dir / CHECKPOINTS_NAME``.
    The function returns None while that SQLite file does not exist (it is not made for a read), and raises
    OSError when the database cannot be opened.
    """
    url = where if "://" in str(where) else ""

    def opener() -> BaseCheckpointSaver | None:
        if not url and not (Path(data_dir) / CHECKPOINTS_NAME).is_file():
            return None
        return open_checkpointer(SimpleNamespace(database_url=url, data_dir=data_dir))

    return opener


def _serde():
    """The savers' serializer, allowed to read back exactly the types of the graph state.

    LangGraph's msgpack serde writes pydantic models, dataclasses and named tuples with their class names
    and warns (soon refuses) when it reads a class it was not told about.
    """
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from rag.engines.base import AnswerGrade, CallMeta
    from rag.graph.checks import ConcurrentCheck
    from rag.graph.events import Clock
    from rag.models import DETAIL_TYPES, Chunk, Citation, Decision, NodeDetail, TraceEvent, Turn, Verdict

    allowed: set[type] = {Decision, Chunk, Verdict, Citation, TraceEvent, Turn, AnswerGrade, CallMeta, Clock,
               ConcurrentCheck, NodeDetail, *DETAIL_TYPES.values()}
    return JsonPlusSerializer(allowed_msgpack_modules=list(allowed))


def sqlite_saver(path: Path) -> SqliteSaver:
    """A new SQLite checkpointer at ``path`` (its folder created), its tables made; not shared."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # One connection shared by the threads of this process (the saver serialises its use with a lock).
    saver = SqliteSaver(sqlite3.connect(path, check_same_thread=False, timeout=15), serde=_serde())
    saver.setup()  # WAL mode
    # In WAL mode NORMAL still never corrupts the file; it skips an fsync per commit (one per step), which
    # was most of the cost of checkpointing (bench checkpoints).
    saver.conn.execute("PRAGMA synchronous=NORMAL")
    return saver


def _postgres(url: str) -> BaseCheckpointSaver:
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection
    from psycopg.rows import DictRow, dict_row
    from psycopg_pool import ConnectionPool

    # The saver's documented connection settings: autocommit, no prepared statements, dict rows.
    pool = ConnectionPool(url, min_size=1, max_size=8, open=True, timeout=10,
                          connection_class=Connection[DictRow],
                          kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row})
    saver = PostgresSaver(pool, serde=_serde())
    saver.setup()
    return saver


def run_checkpoints(saver: BaseCheckpointSaver, thread_id: str, run_id: str, *,
                    limit: int | None = None) -> Iterator[CheckpointTuple]:
    """The checkpoints of run ``run_id`` in thread ``thread_id``, newest first (the first ``limit``)."""
    return saver.list({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}},
                      filter={RUN_KEY: run_id}, limit=limit)


def thread_root(saver: BaseCheckpointSaver, thread_id: str) -> RunnableConfig | None:
    """The config of the first checkpoint of thread ``thread_id`` (before any step ran); None for a new one.

    Each turn of a conversation starts from it with its own input, so no value of an earlier turn leaks into
    the next (a LangGraph thread otherwise carries every channel over from one invocation to the next).
    """
    first = None
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    for item in saver.list(config, filter={"step": -1}):
        first = item  # newest first: the last one is the thread's first
    return first.config if first is not None else None


def checkpoint_bytes(saver: BaseCheckpointSaver, thread_id: str, run_id: str) -> int:
    """Bytes the checkpoints of run ``run_id`` take (serialised checkpoints, metadata and pending writes).

    Measured from the SQLite saver's tables; 0 for another saver.
    """
    conn = getattr(saver, "conn", None)
    if not isinstance(conn, sqlite3.Connection):
        return 0
    lock = getattr(saver, "lock", threading.Lock())
    with lock:
        ids = [r[0] for r in conn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? "
            "AND json_extract(CAST(metadata AS TEXT), '$." + RUN_KEY + "') = ?", (thread_id, run_id))]
        total = 0
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            marks = ", ".join("?" * len(part))
            total += conn.execute(
                f"SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) FROM checkpoints "
                f"WHERE thread_id = ? AND checkpoint_id IN ({marks})", (thread_id, *part)).fetchone()[0]
            total += conn.execute(
                f"SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes "
                f"WHERE thread_id = ? AND checkpoint_id IN ({marks})", (thread_id, *part)).fetchone()[0]
    return int(total)
