"""Nothing lost on upgrade: a data directory's ``runs.sqlite`` copied into the shared database (issue 20).

With ``RAG_DATABASE_URL`` unset the history lives in ``data_dir/runs.sqlite`` and the graph's checkpoints in
``data_dir/checkpoints.sqlite``; once it is set, both live in that database, which starts without the runs
and conversations the data directory holds. :func:`import_local` copies every row of every table the history
keeps (runs with their feedback, comparisons, threads, their turns) into it, ids kept, a row whose primary key
is there already left as it is; then every checkpoint of ``checkpoints.sqlite`` into the database's
checkpointer (:func:`rag.history.checkpoint_copy.copy_checkpoints`), where a conversation's turns and a run's
trace are read from. :func:`import_once` does it the first time a data directory's store opens that database
(:meth:`rag.history.RunStore.for_settings`), then never again.

The SQLite files are only read. When every table and checkpoint is copied, a marker row is written to the
file's ``imported_into`` table: a hash of the target URL without its password (never the URL, never a
password). A failed import leaves no marker and is done again next time; rows and checkpoints copied already
are skipped then.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from sqlalchemy import Column, Connection, Float, MetaData, Table, Text, inspect, select, tuple_
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from rag.db import database_url, engine_for, shown
from rag.history.base import COMPARISONS, DB_NAME, RUNS, THREAD_RUNS, THREADS, Database, links, upsert
from rag.history.checkpoint_copy import copy_checkpoints
from rag.history.checkpoints import CHECKPOINTS_NAME, open_checkpointer
from rag.secrets import scrub

log = logging.getLogger(__name__)

ORDER = (RUNS, COMPARISONS, THREAD_RUNS, THREADS)
"""The tables copied, in this order: a thread is copied after its turns and a turn after its runs, so a
conversation that shows up in the shared database (a threads row) has all its turns there."""
BATCH = 500
"""Rows per transaction (and per bound-parameter list: SQLite's limit is 999 on old builds)."""

_MARKS = Table(
    "imported_into", MetaData(),
    Column("target", Text, primary_key=True),  # sha256 of the URL without its password
    Column("imported_at", Float, nullable=False),  # UNIX seconds
    Column("counts", Text, nullable=False),  # JSON: table -> rows copied
)
_done: set[tuple[str, str]] = set()
_done_lock = threading.Lock()


@dataclass
class ImportCounts:
    """Rows copied by one import, per table (``runs``, ``comparisons``, ``thread_runs``, ``threads``).

    And ``checkpoints`` copied (present only when the data directory has ``checkpoints.sqlite``). Rows and
    checkpoints already in the target are not counted. ``source`` is the SQLite file, ``target`` the
    database as messages may show it (no password).
    """

    source: str
    target: str
    copied: dict[str, int] = field(default_factory=dict)

    @property
    def conversations(self) -> int:
        """Threads copied."""
        return self.copied.get("threads", 0)

    @property
    def runs(self) -> int:
        """Runs copied (each with its feedback)."""
        return self.copied.get("runs", 0)

    @property
    def total(self) -> int:
        """Rows copied, every table together."""
        return sum(self.copied.values())

    def line(self) -> str:
        """One line for a person, with no password in it.

        E.g. ``imported 12 conversations and 57 runs from X into the shared database Y``, plus the
        comparisons and conversation turns copied when there are any.
        """
        extra = [f"{n} {what}" for n, what in ((self.copied.get("comparisons", 0), "comparisons"),
                                                (self.copied.get("thread_runs", 0), "conversation turns"),
                                                (self.copied.get("checkpoints", 0), "checkpoints"))
                 if n]
        return scrub(f"imported {self.conversations} conversations and {self.runs} runs"
                     + (f" ({', '.join(extra)})" if extra else "")
                     + f" from {self.source} into the shared database {self.target}")

    def to_dict(self) -> dict:
        """The counts as plain JSON-able data (for ``runs import-local --json``)."""
        return {"source": self.source, "target": self.target, "conversations": self.conversations,
                "runs": self.runs, "copied": dict(self.copied)}


def target_key(url: str) -> str:
    """The marker of ``url``: the sha256 (64 hex digits) of the URL with its password removed.

    So a password never reaches the SQLite file, not even hashed.
    """
    try:
        bare = make_url(database_url(url)).set(password=None).render_as_string(hide_password=False)
    except ArgumentError:
        bare = database_url(url)
    return hashlib.sha256(bare.encode("utf-8")).hexdigest()


def _password(url: str) -> str | None:
    try:
        password = make_url(database_url(url)).password
    except ArgumentError:
        return None
    return str(password) if password else None


def _same_file(source: Path, url: str) -> bool:
    return database_url(source) == database_url(url)


def imported_before(data_dir: Path | str, url: str) -> bool:
    """Whether ``data_dir/runs.sqlite`` was imported into ``url`` completely already (its marker).

    False when there is no such file or marker, or the file cannot be read.
    """
    source = Path(data_dir) / DB_NAME
    if not source.is_file():
        return False
    try:
        with engine_for(source).connect() as conn:
            if not inspect(conn).has_table(_MARKS.name):
                return False
            return conn.execute(select(_MARKS.c.target)
                                .where(_MARKS.c.target == target_key(url))).first() is not None
    except SQLAlchemyError:
        return False


def import_local(data_dir: Path | str, url: str, *, batch: int = BATCH) -> ImportCounts:
    """Copy every row of ``data_dir/runs.sqlite`` into the history at ``url``, then mark the file done.

    Ids are kept; a row whose primary key the target has already is skipped (not updated), so running it
    again copies nothing. Each batch of ``batch`` rows of a table is one transaction on the target. Then the
    checkpoints of ``data_dir/checkpoints.sqlite``, when there is one, go into the checkpointer of ``url``
    (:func:`rag.history.checkpoints.open_checkpointer`), those there already skipped. The files are only
    read; only the ``imported_into`` marker table of ``runs.sqlite`` is written, last. Nothing to copy
    (no file, or ``url`` is that very file) gives zero counts.

    Raises OSError (no password in it) when a file cannot be read or the target cannot be written; the
    rows and checkpoints copied by then stay, and the next import copies the rest.
    """
    source = Path(data_dir) / DB_NAME
    counts = ImportCounts(source=str(source), target=shown(url))
    if not source.is_file() or _same_file(source, url):
        return counts
    target = Database(url)  # its tables made on first use
    try:
        with engine_for(source).connect() as reader:
            have = set(inspect(reader).get_table_names())
            for table in ORDER:
                if table.name in have:
                    counts.copied[table.name] = _copy(reader, target, table, batch)
        if (Path(data_dir) / CHECKPOINTS_NAME).is_file():
            counts.copied["checkpoints"] = _copy_checkpoints(data_dir, url)
        with engine_for(source).begin() as conn:
            _MARKS.create(conn, checkfirst=True)
            mark = {"target": target_key(url), "imported_at": time.time(),
                    "counts": json.dumps(counts.copied)}
            upsert(conn, _MARKS, mark, ("target",), ("imported_at", "counts"))
    except SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None)
        reason = " ".join(str(orig if orig is not None else exc).split())
        raise OSError(scrub(f"cannot import {source} into {shown(url)}: {reason}",
                            [_password(url)])) from None
    return counts


def _copy_checkpoints(data_dir: Path | str, url: str) -> int:
    """:func:`copy_checkpoints` into the checkpointer of ``url``; OSError (no password) when it fails."""
    saver = open_checkpointer(SimpleNamespace(database_url=url, data_dir=data_dir))  # OSError, scrubbed
    try:
        return copy_checkpoints(data_dir, saver)
    except Exception as exc:  # psycopg, sqlite3 and serializer errors alike: one line, scrubbed
        raise OSError(scrub(f"cannot copy the checkpoints of {Path(data_dir) / CHECKPOINTS_NAME} into "
                            f"{shown(url)}: {type(exc).__name__}: {' '.join(str(exc).split())}",
                            [_password(url)])) from None


def _copy(reader: Connection, target: Database, table: Table, batch: int) -> int:
    """Copy ``table``'s rows from ``reader`` to ``target``, ``batch`` rows a transaction; rows copied."""
    src_columns = {c["name"] for c in inspect(reader).get_columns(table.name)}
    columns = [c for c in table.columns if c.name in src_columns]  # an old file may lack a later column
    keys = list(table.primary_key.columns)
    copied, offset = 0, 0
    while True:
        rows = reader.execute(select(*(table.c[c.name] for c in columns))
                              .order_by(*keys).limit(batch).offset(offset)).all()
        if not rows:
            return copied
        offset += len(rows)
        values = [dict(r._mapping) for r in rows]
        if table is RUNS:  # a row from before the link columns: read them from its JSON
            values = [{**v, **links(v["data"])} if v.get("thread_id") is None else v for v in values]
        with target.engine.begin() as conn:
            key_of = tuple_(*keys) if len(keys) > 1 else keys[0]
            wanted = [tuple(v[k.name] for k in keys) if len(keys) > 1 else v[keys[0].name] for v in values]
            present = {tuple(r) for r in conn.execute(select(*keys).where(key_of.in_(wanted)))}
            new = [v for v in values if tuple(v[k.name] for k in keys) not in present]
            if new:  # on conflict do nothing: another replica may be importing the same file at once
                upsert(conn, table, new, tuple(k.name for k in keys), ())
        copied += len(new)


def import_once(data_dir: Path | str, url: str) -> ImportCounts | None:
    """:func:`import_local` unless ``data_dir/runs.sqlite`` is marked imported into ``url`` already.

    Checked once per process, data directory and URL. Returns the counts of an import done now, else None.
    Never raises: a failure is logged (one line, no password) and the import is tried again next time.
    A done import is logged as :meth:`ImportCounts.line` says when it copied anything.
    """
    key = (str(Path(data_dir).resolve()), url)
    with _done_lock:
        if key in _done:
            return None
        if imported_before(data_dir, url) or not (Path(data_dir) / DB_NAME).is_file():
            _done.add(key)
            return None
        try:
            counts = import_local(data_dir, url)
        except OSError as exc:
            log.warning("the runs of %s stay out of the shared database for now (tried again next start): "
                        "%s", Path(data_dir) / DB_NAME, exc)
            return None
        _done.add(key)
    if counts.total:
        log.warning("%s", counts.line())
    return counts
