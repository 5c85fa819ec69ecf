"""Conversations (threads) in the run history: a thread's turns, each linked to its runs."""

from __future__ import annotations

import builtins
import time
import uuid
from dataclasses import dataclass

from rag.history.base import Database, RunOwnedElsewhere, owned
from rag.models import Run, Turn

TITLE_CHARS = 80
"""A thread's title is at most this long (the first question, cut at a word)."""


def thread_title(question: str) -> str:
    """A thread title from its first question.

    One line, at most :data:`TITLE_CHARS`, cut at a word with an ellipsis.
    """
    text = " ".join((question or "").split()) or "New conversation"
    if len(text) <= TITLE_CHARS:
        return text
    cut = text[:TITLE_CHARS - 1].rsplit(" ", 1)[0] or text[:TITLE_CHARS - 1]
    return cut + "…"


@dataclass(frozen=True)
class ThreadSummary:
    """One conversation as a list shows it. Times are UNIX seconds."""

    id: str
    session_id: str
    title: str
    knowledge_base: str
    created_at: float
    updated_at: float
    turns: int


@dataclass(frozen=True)
class ThreadTurn:
    """One turn of a thread.

    Its 1-based number and its runs, oldest first (a regenerated answer is a sibling run of the same turn; the
    last one is the current answer).
    """

    turn: int
    runs: list[Run]

    @property
    def run(self) -> Run:
        """The current (latest) run of the turn."""
        return self.runs[-1]


@dataclass(frozen=True)
class Thread:
    """A conversation with its turns, oldest first."""

    summary: ThreadSummary
    turns: list[ThreadTurn]

    @property
    def id(self) -> str:
        """The thread id."""
        return self.summary.id

    def history(self) -> list[Turn]:
        """The turns as the graph's ``history`` input: each turn's current run, oldest first."""
        return [Turn(question=t.run.question, answer=t.run.answer,
                     standalone_question=t.run.standalone_question) for t in self.turns]


class ThreadNotFound(LookupError):
    """No thread has this id."""



class ThreadStore(Database):
    """The thread half of :class:`rag.history.RunStore`."""

    def save(self, run: Run, session_id: str, *, comparison_id: str | None = None) -> None:
        """Save ``run`` for ``session_id``: :meth:`rag.history.RunStore.save` does it."""
        raise NotImplementedError

    # ----------------------------------------------------------------- threads

    def create_thread(self, session_id: str, *, title: str = "", knowledge_base: str = "",
                      thread_id: str | None = None) -> ThreadSummary:
        """A new, empty thread owned by ``session_id``.

        ``title`` is cut to a title (:func:`thread_title`) and may stay empty until the first turn sets it.
        Raises ValueError for an empty session id, RunOwnedElsewhere when ``thread_id`` exists in another
        session, and returns the existing thread when it exists in this one.
        """
        if not session_id:
            raise ValueError("a thread must be created with a session id")
        tid = thread_id or uuid.uuid4().hex
        now = time.time()
        with self._db() as db:
            row = db.execute("SELECT session_id FROM threads WHERE id = ?", (tid,)).fetchone()
            if row is not None:
                if row["session_id"] != session_id:
                    raise RunOwnedElsewhere(f"thread {tid} belongs to another session")
            else:
                db.execute("INSERT INTO threads (id, session_id, title, knowledge_base, "
                           "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                           (tid, session_id, thread_title(title) if title else "",
                            knowledge_base, now, now))
        summary = self._thread_summary(tid)
        assert summary is not None
        return summary

    def _thread_summary(self, thread_id: str) -> ThreadSummary | None:
        with self._db() as db:
            row = db.execute(
                "SELECT t.*, (SELECT COUNT(DISTINCT turn) FROM thread_runs r WHERE r.thread_id = t.id)"
                " AS turns FROM threads t WHERE t.id = ?", (thread_id,)).fetchone()
        return ThreadSummary(**dict(row)) if row else None

    def list_threads(self, session_id: str | None, *, limit: int = 200) -> builtins.list[ThreadSummary]:
        """Threads most recently updated first.

        Those of ``session_id``, or of every session when None (the read-only "All sessions" view).
        """
        sql = ("SELECT t.*, (SELECT COUNT(DISTINCT turn) FROM thread_runs r WHERE r.thread_id = t.id)"
               " AS turns FROM threads t" + (" WHERE t.session_id = ?" if session_id is not None else "")
               + " ORDER BY t.updated_at DESC, t.rowid DESC LIMIT ?")
        args = ((session_id,) if session_id is not None else ()) + (max(0, int(limit)),)
        with self._db() as db:
            rows = db.execute(sql, args).fetchall()
        return [ThreadSummary(**dict(r)) for r in rows]

    def get_thread(self, thread_id: str) -> Thread | None:
        """The thread ``thread_id`` (from any session) with its turns and their runs, or None.

        A run deleted from the history since is left out (a turn left with none is dropped).
        """
        summary = self._thread_summary(thread_id)
        if summary is None:
            return None
        with self._db() as db:
            rows = db.execute("SELECT r.turn, runs.data FROM thread_runs r JOIN runs ON runs.id = r.run_id"
                              " WHERE r.thread_id = ? ORDER BY r.turn, r.created_at, r.rowid",
                              (thread_id,)).fetchall()
        turns: dict[int, builtins.list[Run]] = {}
        for row in rows:
            turns.setdefault(row["turn"], []).append(Run.model_validate_json(row["data"]))
        return Thread(summary=summary,
                      turns=[ThreadTurn(turn=n, runs=runs) for n, runs in sorted(turns.items())])

    def rename_thread(self, thread_id: str, session_id: str, title: str) -> bool:
        """Rename a thread of ``session_id``.

        Returns False when there is no such thread; raises RunOwnedElsewhere when another session owns it,
        ValueError for an empty title.
        """
        if not (title or "").strip():
            raise ValueError("a thread title cannot be empty")
        with self._db() as db:
            if not owned(db, "threads", thread_id, session_id, "rename"):
                return False
            db.execute("UPDATE threads SET title = ? WHERE id = ?", (thread_title(title), thread_id))
        return True

    def delete_thread(self, thread_id: str, session_id: str, *, with_runs: bool = False) -> bool:
        """Delete a thread of ``session_id`` and its turns.

        Its runs stay in the run history unless ``with_runs``. Returns False when there is no such thread;
        raises RunOwnedElsewhere when another session owns it.
        """
        with self._db() as db:
            if not owned(db, "threads", thread_id, session_id, "delete"):
                return False
            run_ids = [r[0] for r in db.execute("SELECT run_id FROM thread_runs WHERE thread_id = ?",
                                                (thread_id,)).fetchall()]
            db.execute("DELETE FROM thread_runs WHERE thread_id = ?", (thread_id,))
            db.execute("DELETE FROM threads WHERE id = ?", (thread_id,))
            if with_runs and run_ids:
                marks = ", ".join("?" * len(run_ids))
                db.execute(f"DELETE FROM runs WHERE session_id = ? AND id IN ({marks})",
                           (session_id, *run_ids))
        return True

    def add_turn(self, thread_id: str, session_id: str, run: Run, *, turn: int | None = None) -> int:
        """Save ``run`` for ``session_id`` and link it to the thread.

        As a new turn (``turn`` None) or as a sibling of turn ``turn`` (a regenerated answer). The first turn
        gives an untitled thread its title; the thread's ``updated_at`` becomes now. Returns the turn's
        1-based number. Raises ThreadNotFound, RunOwnedElsewhere (thread or run of another session) and
        ValueError for a turn that does not exist yet.
        """
        with self._db() as db:
            if not owned(db, "threads", thread_id, session_id, "add to"):
                raise ThreadNotFound(f"no thread {thread_id}")
        self.save(run, session_id)
        with self._db() as db:
            last = db.execute("SELECT MAX(turn) FROM thread_runs WHERE thread_id = ?",
                              (thread_id,)).fetchone()[0] or 0
            if turn is None:
                turn = last + 1
            elif not 1 <= turn <= last:
                raise ValueError(f"thread {thread_id} has no turn {turn} (it has {last})")
            now = time.time()
            db.execute("INSERT OR REPLACE INTO thread_runs (thread_id, turn, run_id, created_at) "
                       "VALUES (?, ?, ?, ?)", (thread_id, turn, run.id, now))
            db.execute("UPDATE threads SET updated_at = ?, "
                       "title = CASE WHEN title = '' THEN ? ELSE title END, "
                       "knowledge_base = CASE WHEN knowledge_base = '' THEN ? ELSE knowledge_base END "
                       "WHERE id = ?", (now, thread_title(run.question), run.knowledge_base, thread_id))
        return turn

    def thread_history(self, thread_id: str) -> builtins.list[Turn]:
        """The thread's turns as the graph's ``history`` input.

        (each turn's current run), or [] when there is no such thread.
        """
        thread = self.get_thread(thread_id)
        return thread.history() if thread else []
