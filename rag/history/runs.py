"""Run history: every Run (and every comparison) persisted in the history database.

That is SQLite at ``data_dir/runs.sqlite``, or the database ``RAG_DATABASE_URL`` names (shared by replicas).

Each run belongs to the session that made it (a random id per browser session, ``cli`` for the
command line). Any session can read any run; only its own session may overwrite or delete it.
A run's row is a summary (:mod:`rag.history.traces`): its JSON without its trace's details, plus indexed
columns for listing and filtering; the whole trace is read from the run's LangGraph checkpoints when the run
is opened (:meth:`RunStore.get`). A run whose checkpoints do not hold its trace, and every run saved before
this, has its whole JSON (``Run.model_dump_json()``) in its row. A Run holds no key (keys live only in
Settings, which is never stored).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from sqlalchemy import delete, func, select, update

from rag.config import preset_of
from rag.history.base import COMPARISONS, DB_NAME, LINKS, RUNS, RunOwnedElsewhere, owned, upsert
from rag.history.checkpoints import checkpointer_of
from rag.history.local_import import import_once
from rag.history.threads import ThreadStore
from rag.history.traces import IN_CHECKPOINTS, summary_json, trace_in_checkpoints, with_trace
from rag.models import Comparison, Run
from rag.trace.story import stop_kind

_SUMMARY_FIELDS = ("id", "session_id", "created_at", "question", "engine", "stop_kind", "preset",
                   "knowledge_base", "comparison_id", "steps", "llm_calls", "duration_ms", "thread_id",
                   "parent_run_id", "from_node")
_COLUMNS = ("session_id", "created_at", "question", "engine", "stop_kind", "preset", "knowledge_base",
            "comparison_id", "steps", "llm_calls", "duration_ms", "data", *LINKS, "trace_at")
FEEDBACK_UP, FEEDBACK_DOWN = 1, 0
"""A run's feedback as ``st.feedback("thumbs")`` gives it: 1 thumbs up, 0 thumbs down."""


@dataclass(frozen=True)
class RunSummary:
    """One row of the history: what a list shows without loading the whole run."""

    id: str
    session_id: str
    created_at: float
    """UNIX seconds."""
    question: str
    engine: str
    stop_kind: str
    """See :func:`rag.story.stop_kind`."""
    preset: str
    """A preset key or ``custom``."""
    knowledge_base: str
    comparison_id: str | None
    steps: int
    llm_calls: int
    duration_ms: float
    thread_id: str = ""
    """The LangGraph thread of its checkpoints ("" when none were saved)."""
    parent_run_id: str | None = None
    """For a re-run from a step: the run it forked from."""
    from_node: str | None = None
    """For a re-run: the node it re-ran from."""

    def to_dict(self) -> dict:
        """The summary as a plain dict (for ``runs list --json``)."""
        return asdict(self)

    @classmethod
    def of(cls, run: Run, session_id: str, *, comparison_id: str | None = None) -> RunSummary:
        """The summary of ``run`` as :meth:`RunStore.save` would index it for ``session_id``."""
        return cls(id=run.id, session_id=session_id, created_at=run.created_at,
                   question=run.question, engine=run.engine, stop_kind=stop_kind(run),
                   preset=preset_of(run.options), knowledge_base=run.knowledge_base,
                   comparison_id=comparison_id, steps=len(run.events), llm_calls=run.llm_calls,
                   duration_ms=run.duration_ms, thread_id=run.thread_id, parent_run_id=run.parent_run_id,
                   from_node=run.from_node)


def merge_summaries(saved: Sequence[RunSummary], session_runs: Iterable[Run], session_id: str,
                    *, query: str | None = None,
                    stop_kinds: Sequence[str] | None = None) -> list[RunSummary]:
    """``saved`` plus the runs of ``session_runs`` it lacks.

    (not saved yet, or the history could not be written) that match the same filter, newest first.

    ``query`` matches the question case-insensitively; ``stop_kinds`` keeps runs ending in one
    of them (see :func:`rag.trace.story.stop_kind`). A run in both is listed once, as saved.
    """
    seen = {s.id for s in saved}
    extra = [RunSummary.of(r, session_id) for r in session_runs if r.id not in seen
             and (not query or query.lower() in r.question.lower())]
    extra = [s for s in extra if not stop_kinds or s.stop_kind in stop_kinds]
    return sorted([*saved, *extra], key=lambda s: s.created_at, reverse=True)


@dataclass(frozen=True)
class ComparisonSummary:
    """One saved comparison, as listed: its question, pipelines and runs."""
    id: str
    session_id: str
    created_at: float
    question: str
    run_ids: list[str]
    labels: list[str]


class RunStore(ThreadStore):
    """Runs in the history at ``path``.

    A SQLite file (created with its directory on first use) or a database URL
    (``postgresql://user@host:5432/retrace``).

    Safe to share across threads: every call takes its own connection. Raises OSError when the file cannot be
    created or is not a run history, or the database cannot be reached.
    """

    @classmethod
    def for_settings(cls, settings) -> RunStore:
        """The store of ``settings``: ``settings.database_url`` when set, else ``data_dir/runs.sqlite``.

        Opening a database URL first imports the data directory's ``runs.sqlite`` into it, once
        (:meth:`opened`). Raises OSError if it cannot be opened.
        """
        return cls.opened(location(settings), settings.data_dir)

    @classmethod
    def opened(cls, where: str, data_dir: Path | str) -> RunStore:
        """The store at ``where`` (a :func:`location`) of the data directory ``data_dir``.

        When ``where`` is a database URL, the rows of ``data_dir/runs.sqlite`` are copied into it the first
        time (:func:`rag.history.local_import.import_once`: once per file and database, never raising; a
        failed copy is logged and tried again next time). The store's checkpointer is the one the graph
        writes for the same settings (:func:`rag.history.checkpoints.checkpointer_of`), opened when first
        needed. Raises OSError if the store cannot be opened.
        """
        store = cls(where, checkpoints=checkpointer_of(where, data_dir))
        if store.url is not None:
            import_once(data_dir, store.url)
        return store

    # ----------------------------------------------------------------- runs

    def save(self, run: Run, session_id: str, *, comparison_id: str | None = None) -> None:
        """Save ``run`` for ``session_id`` (insert, or replace that session's own copy).

        The row is a summary (:func:`rag.history.traces.summary_json`) when the store's checkpointer holds
        the run's whole trace, else the whole run. Raises RunOwnedElsewhere if a run with this id belongs to
        another session, and ValueError for an empty session id.
        """
        if not session_id:
            raise ValueError("a run must be saved with a session id")
        light = trace_in_checkpoints(self.checkpointer(), run)
        values = {"id": run.id, "session_id": session_id, "created_at": run.created_at,
                  "question": run.question, "engine": run.engine, "stop_kind": stop_kind(run),
                  "preset": preset_of(run.options), "knowledge_base": run.knowledge_base,
                  "comparison_id": comparison_id, "steps": len(run.events), "llm_calls": run.llm_calls,
                  "duration_ms": run.duration_ms,
                  "data": summary_json(run) if light else run.model_dump_json(),
                  "thread_id": run.thread_id, "parent_run_id": run.parent_run_id, "from_node": run.from_node,
                  "trace_at": IN_CHECKPOINTS if light else None}
        with self._db() as db:
            owner = db.execute(select(RUNS.c.session_id).where(RUNS.c.id == run.id)).scalar()
            if owner is not None and owner != session_id:
                raise RunOwnedElsewhere(f"run {run.id} belongs to another session")
            # An upsert, not a replace: saving a run again keeps its feedback.
            upsert(db, RUNS, values, ("id",), _COLUMNS)

    def get(self, run_id: str) -> Run | None:
        """The whole run ``run_id`` (from any session), or None.

        A summary row's trace is read from its checkpoints (:func:`rag.history.traces.with_trace`: when none
        is left, the run comes with its summary trace).
        """
        with self._db() as db:
            row = db.execute(select(RUNS.c.data, RUNS.c.trace_at).where(RUNS.c.id == run_id)).first()
        if row is None:
            return None
        run = Run.model_validate_json(row.data)
        return with_trace(run, self.checkpointer()) if row.trace_at == IN_CHECKPOINTS else run

    def owner(self, run_id: str) -> str | None:
        """The session id that owns ``run_id``, or None when there is no such run."""
        with self._db() as db:
            return db.execute(select(RUNS.c.session_id).where(RUNS.c.id == run_id)).scalar()

    def list(self, session_id: str | None = None, *, query: str | None = None,
             stop_kinds: Sequence[str] | None = None, limit: int = 200) -> builtins.list[RunSummary]:
        """Runs newest first.

        Of ``session_id`` only, or of every session when None; whose question contains ``query``
        (case-insensitive); ending in one of ``stop_kinds``.
        """
        sql = select(*(RUNS.c[f] for f in _SUMMARY_FIELDS))
        if session_id is not None:
            sql = sql.where(RUNS.c.session_id == session_id)
        if query:
            sql = sql.where(func.lower(RUNS.c.question).contains(query.lower(), autoescape=True))
        if stop_kinds:
            sql = sql.where(RUNS.c.stop_kind.in_(builtins.list(stop_kinds)))
        sql = sql.order_by(RUNS.c.created_at.desc(), RUNS.c.id.desc()).limit(max(0, int(limit)))
        with self._db() as db:
            rows = db.execute(sql).all()
        return [RunSummary(**{**r._mapping, "thread_id": r.thread_id or ""}) for r in rows]

    def load(self, session_id: str | None = None, *, limit: int = 5000) -> builtins.list[Run]:
        """Runs as their rows hold them, newest first (of one session, or all when None), for Insights.

        A summary row's events are its summary trace (:func:`rag.history.traces.light_events`: each step's
        node, times, calls, tokens, and what Insights counts); :meth:`get` gives a whole run.
        """
        sql = select(RUNS.c.data)
        if session_id is not None:
            sql = sql.where(RUNS.c.session_id == session_id)
        sql = sql.order_by(RUNS.c.created_at.desc(), RUNS.c.id.desc()).limit(max(0, int(limit)))
        with self._db() as db:
            rows = db.execute(sql).scalars().all()
        return [Run.model_validate_json(data) for data in rows]

    def history(self, session_runs: Iterable[Run], session_id: str, *,
                all_sessions: bool = False, query: str | None = None,
                stop_kinds: Sequence[str] | None = None,
                limit: int = 200) -> builtins.list[RunSummary]:
        """This session's runs merged with the saved history, newest first, for pickers.

        The saved runs of ``session_id`` (of every session when ``all_sessions``), plus the
        runs of ``session_runs`` (the session's in-memory runs) not saved, filtered alike: see
        :func:`merge_summaries`. Raises OSError when the history cannot be read.
        """
        saved = self.list(None if all_sessions else session_id, query=query,
                          stop_kinds=stop_kinds, limit=limit)
        return merge_summaries(saved, session_runs, session_id, query=query,
                               stop_kinds=stop_kinds)

    def load_with(self, session_runs: Iterable[Run], session_id: str, *,
                  all_sessions: bool = False) -> builtins.list[Run]:
        """Runs for Insights (summary traces, see :meth:`load`).

        The saved ones (of ``session_id``, or of every session when ``all_sessions``) newest first, then those
        of ``session_runs`` not saved, in their order; each run once. Raises OSError when the history
        cannot be read.
        """
        saved = self.load(None if all_sessions else session_id)
        seen = {r.id for r in saved}
        return saved + [r for r in session_runs if r.id not in seen]

    def delete(self, run_id: str, session_id: str) -> bool:
        """Delete ``run_id`` if ``session_id`` owns it.

        Returns False when there is no such run; raises RunOwnedElsewhere when another session owns it.
        """
        with self._db() as db:
            if not owned(db, "runs", run_id, session_id, "delete"):
                return False
            db.execute(delete(RUNS).where(RUNS.c.id == run_id))
        return True

    def count(self, session_id: str | None = None) -> int:
        """How many runs are saved (of ``session_id``, or of every session when None)."""
        sql = select(func.count()).select_from(RUNS)
        if session_id is not None:
            sql = sql.where(RUNS.c.session_id == session_id)
        with self._db() as db:
            return int(db.execute(sql).scalar() or 0)

    # ----------------------------------------------------------------- feedback

    def set_feedback(self, run_id: str, session_id: str, value: int | None) -> bool:
        """Save a user's thumbs up (1) or down (0) on their run ``run_id``; None clears it.

        Returns False when there is no such run; raises RunOwnedElsewhere when another session owns
        it, ValueError for a value other than 0, 1 or None.
        """
        if value not in (FEEDBACK_UP, FEEDBACK_DOWN, None):
            raise ValueError(f"feedback must be 1 (up), 0 (down) or None, got {value!r}")
        with self._db() as db:
            if not owned(db, "runs", run_id, session_id, "rate"):
                return False
            db.execute(update(RUNS).where(RUNS.c.id == run_id).values(feedback=value))
        return True

    def feedback(self, run_ids: Iterable[str] | None = None) -> dict[str, int]:
        """Run id -> feedback (1 up, 0 down) of the rated runs among ``run_ids`` (every run when None)."""
        sql = select(RUNS.c.id, RUNS.c.feedback).where(RUNS.c.feedback.is_not(None))
        with self._db() as db:
            if run_ids is None:
                rows = db.execute(sql).all()
            else:
                ids = builtins.list(dict.fromkeys(run_ids))
                rows = []
                for i in range(0, len(ids), 500):  # SQLite's bound-parameter limit
                    rows += db.execute(sql.where(RUNS.c.id.in_(ids[i:i + 500]))).all()
        return {r.id: int(r.feedback) for r in rows}

    # ----------------------------------------------------------------- comparisons

    def save_comparison(self, cmp: Comparison, session_id: str) -> None:
        """Save a comparison and each of its runs for ``session_id``.

        Raises RunOwnedElsewhere if it (or one of its runs) belongs to another session.
        """
        if not session_id:
            raise ValueError("a comparison must be saved with a session id")
        with self._db() as db:
            owner = db.execute(select(COMPARISONS.c.session_id)
                               .where(COMPARISONS.c.id == cmp.id)).scalar()
            if owner is not None and owner != session_id:
                raise RunOwnedElsewhere(f"comparison {cmp.id} belongs to another session")
        for run in cmp.runs:
            self.save(run, session_id, comparison_id=cmp.id)
        values = {"id": cmp.id, "session_id": session_id, "created_at": cmp.created_at,
                  "question": cmp.question, "run_ids": json.dumps([r.id for r in cmp.runs]),
                  "labels": json.dumps(cmp.labels)}
        with self._db() as db:
            upsert(db, COMPARISONS, values, ("id",), tuple(k for k in values if k != "id"))

    def get_comparison(self, cmp_id: str) -> Comparison | None:
        """The comparison ``cmp_id`` with the runs of it that still exist, or None."""
        with self._db() as db:
            row = db.execute(select(COMPARISONS).where(COMPARISONS.c.id == cmp_id)).first()
        if row is None:
            return None
        pairs = [(label, self.get(rid)) for rid, label in
                 zip(json.loads(row.run_ids), json.loads(row.labels), strict=False)]
        pairs = [(label, run) for label, run in pairs if run is not None]
        return Comparison(id=row.id, question=row.question, created_at=row.created_at,
                          labels=[p[0] for p in pairs], runs=[p[1] for p in pairs])

    def list_comparisons(self, session_id: str | None = None, *,
                         limit: int = 100) -> builtins.list[ComparisonSummary]:
        """Comparisons newest first, of ``session_id`` or of every session when None."""
        sql = select(COMPARISONS)
        if session_id is not None:
            sql = sql.where(COMPARISONS.c.session_id == session_id)
        sql = sql.order_by(COMPARISONS.c.created_at.desc()).limit(max(0, int(limit)))
        with self._db() as db:
            rows = db.execute(sql).all()
        return [ComparisonSummary(id=r.id, session_id=r.session_id, created_at=r.created_at,
                                  question=r.question, run_ids=json.loads(r.run_ids),
                                  labels=json.loads(r.labels))
                for r in rows]


def location(settings) -> str:
    """Where the history of ``settings`` lives, as :class:`RunStore` takes it.

    ``settings.database_url`` when set, else the path of ``data_dir/runs.sqlite`` (a string).
    """
    return getattr(settings, "database_url", None) or str(Path(settings.data_dir) / DB_NAME)
