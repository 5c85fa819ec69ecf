"""Conversations (threads) in the run history: a thread's turns, each linked to its runs."""

from __future__ import annotations

import builtins
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver
from sqlalchemy import Connection, case, delete, func, select, update

from rag.config import DEFAULT_COLLECTION
from rag.history.base import RUNS, THREAD_RUNS, THREADS, Database, RunOwnedElsewhere, owned, upsert
from rag.history.checkpoints import checkpointer_of
from rag.history.traces import IN_CHECKPOINTS, Saver, from_checkpoints, opened, with_trace
from rag.history.turns import SavedTurn, thread_turns
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

    def __init__(self, path: Path | str, *, checkpoints: Saver = None) -> None:
        """The history at ``path`` (see :class:`rag.history.base.Database`).

        ``checkpoints`` is the graph's checkpointer, or a function that opens it (returning None when there
        is none); by default (None) the one that goes with ``path``
        (:func:`rag.history.checkpoints.checkpointer_of`: the database URL's, or ``checkpoints.sqlite`` beside
        the file, when it exists). A run whose checkpoints hold its trace is saved as a summary row, and its
        trace is read back from them.
        """
        super().__init__(path)
        self._checkpoints: Saver = (checkpoints if checkpoints is not None
                                    else checkpointer_of(str(path), Path(str(path)).parent))

    def checkpointer(self) -> BaseCheckpointSaver | None:
        """The graph's checkpointer of this history, or None (none given, or it cannot be opened)."""
        return opened(self._checkpoints)

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
            upsert(db, THREADS, {"id": tid, "session_id": session_id,
                                 "title": thread_title(title) if title else "",
                                 "knowledge_base": knowledge_base, "created_at": now, "updated_at": now},
                   ("id",), ())
            if db.execute(select(THREADS.c.session_id).where(THREADS.c.id == tid)).scalar() != session_id:
                raise RunOwnedElsewhere(f"thread {tid} belongs to another session")
            summary = self._summaries(db, THREADS.c.id == tid, 1)
        return summary[0]

    @staticmethod
    def _summaries(db: Connection, where, limit: int) -> builtins.list[ThreadSummary]:
        turns = (select(func.count(THREAD_RUNS.c.turn.distinct()))
                 .where(THREAD_RUNS.c.thread_id == THREADS.c.id).scalar_subquery().label("turns"))
        sql = select(THREADS, turns)
        if where is not None:
            sql = sql.where(where)
        sql = sql.order_by(THREADS.c.updated_at.desc(), THREADS.c.id.desc()).limit(max(0, int(limit)))
        return [ThreadSummary(**r._mapping) for r in db.execute(sql).all()]

    def _thread_summary(self, thread_id: str) -> ThreadSummary | None:
        with self._db() as db:
            found = self._summaries(db, THREADS.c.id == thread_id, 1)
        return found[0] if found else None

    def list_threads(self, session_id: str | None, *, limit: int = 200) -> builtins.list[ThreadSummary]:
        """Threads most recently updated first.

        Those of ``session_id``, or of every session when None (the read-only "All sessions" view).
        """
        with self._db() as db:
            return self._summaries(db, None if session_id is None else THREADS.c.session_id == session_id,
                                   limit)

    def get_thread(self, thread_id: str, *, checkpoints: BaseCheckpointSaver | None = None) -> Thread | None:
        """The thread ``thread_id`` (from any session) with its turns and their runs, or None.

        With ``checkpoints`` (the graph's checkpointer), the turns come from the thread's checkpoints
        (:func:`rag.history.turns.thread_turns`): each turn's question, standalone question, answer,
        citations and stop reason as the run ended, its run row (when there is one) giving the rest; a run
        with no row left is rebuilt from its checkpoints. A turn with no checkpoint in the thread (asked
        before checkpoints were kept, or as a one-off run before it became a conversation) comes from the
        run history, where a run deleted since is left out (a turn left with none is dropped). A summary
        row's trace is read from its checkpoints (``checkpoints``, else the store's own). Raises OSError when
        the history is unavailable, and what the saver raises when its database is.
        """
        summary = self._thread_summary(thread_id)
        if summary is None:
            return None
        with self._db() as db:
            rows = db.execute(select(THREAD_RUNS.c.turn, RUNS.c.data, RUNS.c.trace_at)
                              .join(RUNS, RUNS.c.id == THREAD_RUNS.c.run_id)
                              .where(THREAD_RUNS.c.thread_id == thread_id)
                              .order_by(THREAD_RUNS.c.turn, THREAD_RUNS.c.created_at,
                                        THREAD_RUNS.c.run_id)).all()
        turns: dict[int, builtins.list[Run]] = {}
        light: set[str] = set()  # summary rows: their traces are in their checkpoints
        for row in rows:
            run = Run.model_validate_json(row.data)
            turns.setdefault(row.turn, []).append(run)
            if row.trace_at == IN_CHECKPOINTS:
                light.add(run.id)
        saved = thread_turns(checkpoints, thread_id) if checkpoints is not None else []
        if saved:
            turns = self._with_checkpoints(turns, saved, thread_id, summary.knowledge_base, light)
        if light:  # e.g. a one-off question that became the first turn: its trace from its own thread
            saver = checkpoints if checkpoints is not None else self.checkpointer()
            turns = {n: [with_trace(r, saver) if r.id in light else r for r in runs]
                     for n, runs in turns.items()}
        return Thread(summary=summary,
                      turns=[ThreadTurn(turn=n, runs=runs) for n, runs in sorted(turns.items())])

    def _with_checkpoints(self, turns: dict[int, builtins.list[Run]], saved: builtins.list[SavedTurn],
                          thread_id: str, knowledge_base: str,
                          light: set[str]) -> dict[int, builtins.list[Run]]:
        """``turns`` (from the run rows) with each turn the checkpoints hold taken from them.

        A summary row's trace comes from its turn's checkpoints; its id leaves ``light``.
        """
        from_rows = {r.id: r for runs in turns.values() for r in runs}
        missing = [s.run_id for s in saved if s.run_id not in from_rows]
        if missing:  # a run not linked to the thread's turns (e.g. its link was not saved): its row, if any
            with self._db() as db:
                for row in db.execute(select(RUNS.c.data, RUNS.c.trace_at).where(RUNS.c.id.in_(missing))):
                    run = Run.model_validate_json(row.data)
                    from_rows[run.id] = run
                    if row.trace_at == IN_CHECKPOINTS:
                        light.add(run.id)
        for s in saved:
            if s.run_id in light:  # its trace from its turn's checkpoints (its citations: as_run)
                from_rows[s.run_id] = from_rows[s.run_id].model_copy(update={"events": s.events})
                light.discard(s.run_id)
        merged = {n: list(runs) for n, runs in turns.items()}
        for n in {s.turn for s in saved}:
            ids = {s.run_id for s in saved if s.turn == n}
            runs = [s.as_run(from_rows.get(s.run_id), thread_id=thread_id,
                             knowledge_base=knowledge_base or DEFAULT_COLLECTION)
                    for s in saved if s.turn == n]
            earlier = [r for r in merged.get(n, []) if r.id not in ids]  # answered before checkpoints
            merged[n] = sorted([*earlier, *runs], key=lambda r: r.created_at)
        return merged

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
            db.execute(update(THREADS).where(THREADS.c.id == thread_id).values(title=thread_title(title)))
        return True

    def delete_thread(self, thread_id: str, session_id: str, *, with_runs: bool = False,
                      checkpoints: BaseCheckpointSaver | None = None) -> bool:
        """Delete a thread of ``session_id`` and its turns.

        Its runs stay in the run history unless ``with_runs``. With ``checkpoints`` (the graph's
        checkpointer) the thread's checkpoints are deleted too, and with ``with_runs`` those of its runs
        asked as one-off questions (their own threads); a run kept then stays readable but can no longer be
        re-run from a step. Returns False when there is no such thread; raises RunOwnedElsewhere when another
        session owns it.
        """
        with self._db() as db:
            if not owned(db, "threads", thread_id, session_id, "delete"):
                return False
            run_ids = db.execute(select(THREAD_RUNS.c.run_id)
                                 .where(THREAD_RUNS.c.thread_id == thread_id)).scalars().all()
            db.execute(delete(THREAD_RUNS).where(THREAD_RUNS.c.thread_id == thread_id))
            db.execute(delete(THREADS).where(THREADS.c.id == thread_id))
            if with_runs and run_ids:
                db.execute(delete(RUNS).where(RUNS.c.session_id == session_id, RUNS.c.id.in_(run_ids)))
        if checkpoints is not None:  # after the rows: a failure here leaves no thread that lacks its turns
            tids = [thread_id, *(run_ids if with_runs else ())]
            self._keep_traces(checkpoints, tids)
            for tid in tids:
                checkpoints.delete_thread(tid)
        return True

    def _keep_traces(self, checkpoints: BaseCheckpointSaver, thread_ids: builtins.list[str]) -> None:
        """Give every summary row whose checkpoints are in ``thread_ids`` its whole trace back.

        Called before those checkpoints are deleted, so a run kept stays whole (it can no longer be re-run).
        """
        with self._db() as db:
            rows = db.execute(select(RUNS.c.id, RUNS.c.data).where(
                RUNS.c.trace_at == IN_CHECKPOINTS, RUNS.c.thread_id.in_(thread_ids))).all()
        for row in rows:
            whole = from_checkpoints(checkpoints, Run.model_validate_json(row.data))
            if whole is None:
                continue
            with self._db() as db:
                db.execute(update(RUNS).where(RUNS.c.id == row.id).values(data=whole.model_dump_json(),
                                                                          trace_at=None))

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
            # Taking the thread's row first serialises two replicas adding a turn to one thread.
            db.execute(update(THREADS).where(THREADS.c.id == thread_id)
                       .values(updated_at=THREADS.c.updated_at))
            last = db.execute(select(func.max(THREAD_RUNS.c.turn))
                              .where(THREAD_RUNS.c.thread_id == thread_id)).scalar() or 0
            if turn is None:
                turn = last + 1
            elif not 1 <= turn <= last:
                raise ValueError(f"thread {thread_id} has no turn {turn} (it has {last})")
            now = time.time()
            upsert(db, THREAD_RUNS, {"thread_id": thread_id, "turn": turn, "run_id": run.id,
                                     "created_at": now}, ("thread_id", "run_id"), ("turn", "created_at"))
            db.execute(update(THREADS).where(THREADS.c.id == thread_id).values(
                updated_at=now,
                title=case((THREADS.c.title == "", thread_title(run.question)), else_=THREADS.c.title),
                knowledge_base=case((THREADS.c.knowledge_base == "", run.knowledge_base),
                                    else_=THREADS.c.knowledge_base)))
        return turn

    def thread_history(self, thread_id: str, *,
                       checkpoints: BaseCheckpointSaver | None = None) -> builtins.list[Turn]:
        """The thread's turns as the graph's ``history`` input, or [] when there is no such thread.

        Each turn's current run, oldest first: from the checkpoints when ``checkpoints`` is given and holds
        the turn, else from the run history (:meth:`get_thread`).
        """
        thread = self.get_thread(thread_id, checkpoints=checkpoints)
        return thread.history() if thread else []
