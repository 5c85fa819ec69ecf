"""Run history: every Run (and every comparison) persisted in SQLite at ``data_dir/runs.sqlite``.

Each run belongs to the session that made it (a random id per browser session, ``cli`` for the
command line). Any session can read any run; only its own session may overwrite or delete it.
Runs are stored as their JSON (``Run.model_dump_json()``) plus indexed columns for listing and
filtering. A Run holds no key (keys live only in Settings, which is never stored).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from rag.config import preset_of
from rag.history.base import DB_NAME, RunOwnedElsewhere, owned
from rag.history.threads import ThreadStore
from rag.models import Comparison, Run
from rag.trace.story import stop_kind

_COLUMNS = ("session_id", "created_at", "question", "engine", "stop_kind", "preset", "knowledge_base",
            "comparison_id", "steps", "llm_calls", "duration_ms", "data")
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
                   duration_ms=run.duration_ms)


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
    """Runs in SQLite at ``path`` (created with its directory on first use).

    Safe to share across threads: every call opens its own connection. Raises OSError when the file cannot be
    created or is not a run history.
    """

    @classmethod
    def for_settings(cls, settings) -> RunStore:
        """The store under ``settings.data_dir``. Raises OSError if it cannot be created."""
        return cls(Path(settings.data_dir) / DB_NAME)

    # ----------------------------------------------------------------- runs

    def save(self, run: Run, session_id: str, *, comparison_id: str | None = None) -> None:
        """Save ``run`` for ``session_id`` (insert, or replace that session's own copy).

        Raises RunOwnedElsewhere if a run with this id belongs to another session, and
        ValueError for an empty session id.
        """
        if not session_id:
            raise ValueError("a run must be saved with a session id")
        with self._db() as db:
            row = db.execute("SELECT session_id FROM runs WHERE id = ?", (run.id,)).fetchone()
            if row is not None and row["session_id"] != session_id:
                raise RunOwnedElsewhere(f"run {run.id} belongs to another session")
            # An upsert, not INSERT OR REPLACE: saving a run again keeps its feedback.
            db.execute(
                "INSERT INTO runs (id, session_id, created_at, question, engine, "
                "stop_kind, preset, knowledge_base, comparison_id, steps, llm_calls, duration_ms, "
                "data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
                + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS),
                (run.id, session_id, run.created_at, run.question, run.engine, stop_kind(run),
                 preset_of(run.options), run.knowledge_base, comparison_id, len(run.events),
                 run.llm_calls, run.duration_ms, run.model_dump_json()))

    def get(self, run_id: str) -> Run | None:
        """The run ``run_id`` (from any session), or None."""
        with self._db() as db:
            row = db.execute("SELECT data FROM runs WHERE id = ?", (run_id,)).fetchone()
        return Run.model_validate_json(row["data"]) if row else None

    def owner(self, run_id: str) -> str | None:
        """The session id that owns ``run_id``, or None when there is no such run."""
        with self._db() as db:
            row = db.execute("SELECT session_id FROM runs WHERE id = ?", (run_id,)).fetchone()
        return row["session_id"] if row else None

    def list(self, session_id: str | None = None, *, query: str | None = None,
             stop_kinds: Sequence[str] | None = None, limit: int = 200) -> builtins.list[RunSummary]:
        """Runs newest first.

        Of ``session_id`` only, or of every session when None; whose question contains ``query``
        (case-insensitive); ending in one of ``stop_kinds``.
        """
        where, args = [], []
        if session_id is not None:
            where.append("session_id = ?")
            args.append(session_id)
        if query:
            escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            where.append("question LIKE ? ESCAPE '\\'")
            args.append(f"%{escaped}%")
        if stop_kinds:
            where.append(f"stop_kind IN ({', '.join('?' * len(stop_kinds))})")
            args += list(stop_kinds)
        sql = ("SELECT id, session_id, created_at, question, engine, stop_kind, preset, "
               "knowledge_base, comparison_id, steps, llm_calls, duration_ms FROM runs"
               + (f" WHERE {' AND '.join(where)}" if where else "")
               + " ORDER BY created_at DESC, rowid DESC LIMIT ?")
        with self._db() as db:
            rows = db.execute(sql, (*args, max(0, int(limit)))).fetchall()
        return [RunSummary(**dict(r)) for r in rows]

    def load(self, session_id: str | None = None, *, limit: int = 5000) -> builtins.list[Run]:
        """Whole runs, newest first (of one session, or all when None), for Insights."""
        sql = "SELECT data FROM runs" + (" WHERE session_id = ?" if session_id is not None
                                         else "") + " ORDER BY created_at DESC LIMIT ?"
        args = ((session_id,) if session_id is not None else ()) + (max(0, int(limit)),)
        with self._db() as db:
            rows = db.execute(sql, args).fetchall()
        return [Run.model_validate_json(r["data"]) for r in rows]

    def history(self, session_runs: Iterable[Run], session_id: str, *,
                all_sessions: bool = False, query: str | None = None,
                stop_kinds: Sequence[str] | None = None,
                limit: int = 200) -> builtins.list[RunSummary]:
        """This session's runs merged with the saved history, newest first, for pickers.

        The saved runs of ``session_id`` (of every session when ``all_sessions``), plus the
        runs of ``session_runs`` (the session's in-memory runs) not saved, filtered alike: see
        :func:`merge_summaries`. Raises sqlite3.Error when the history cannot be read.
        """
        saved = self.list(None if all_sessions else session_id, query=query,
                          stop_kinds=stop_kinds, limit=limit)
        return merge_summaries(saved, session_runs, session_id, query=query,
                               stop_kinds=stop_kinds)

    def load_with(self, session_runs: Iterable[Run], session_id: str, *,
                  all_sessions: bool = False) -> builtins.list[Run]:
        """Whole runs.

        The saved ones (of ``session_id``, or of every session when ``all_sessions``) newest first, then those
        of ``session_runs`` not saved, in their order; each run once. Raises sqlite3.Error when the history
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
            db.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        return True

    def count(self, session_id: str | None = None) -> int:
        """How many runs are saved (of ``session_id``, or of every session when None)."""
        with self._db() as db:
            if session_id is None:
                return db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
            return db.execute("SELECT COUNT(*) FROM runs WHERE session_id = ?",
                              (session_id,)).fetchone()[0]

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
            db.execute("UPDATE runs SET feedback = ? WHERE id = ?", (value, run_id))
        return True

    def feedback(self, run_ids: Iterable[str] | None = None) -> dict[str, int]:
        """Run id -> feedback (1 up, 0 down) of the rated runs among ``run_ids`` (every run when None)."""
        with self._db() as db:
            if run_ids is None:
                rows = db.execute("SELECT id, feedback FROM runs WHERE feedback IS NOT NULL").fetchall()
            else:
                ids = builtins.list(dict.fromkeys(run_ids))
                rows = []
                for i in range(0, len(ids), 500):  # SQLite's bound-parameter limit
                    part = ids[i:i + 500]
                    rows += db.execute(f"SELECT id, feedback FROM runs WHERE feedback IS NOT NULL "
                                       f"AND id IN ({', '.join('?' * len(part))})", part).fetchall()
        return {r["id"]: int(r["feedback"]) for r in rows}

    # ----------------------------------------------------------------- comparisons

    def save_comparison(self, cmp: Comparison, session_id: str) -> None:
        """Save a comparison and each of its runs for ``session_id``.

        Raises RunOwnedElsewhere if it (or one of its runs) belongs to another session.
        """
        if not session_id:
            raise ValueError("a comparison must be saved with a session id")
        with self._db() as db:
            row = db.execute("SELECT session_id FROM comparisons WHERE id = ?",
                             (cmp.id,)).fetchone()
            if row is not None and row["session_id"] != session_id:
                raise RunOwnedElsewhere(f"comparison {cmp.id} belongs to another session")
        for run in cmp.runs:
            self.save(run, session_id, comparison_id=cmp.id)
        with self._db() as db:
            db.execute("INSERT OR REPLACE INTO comparisons (id, session_id, created_at, question, "
                       "run_ids, labels) VALUES (?, ?, ?, ?, ?, ?)",
                       (cmp.id, session_id, cmp.created_at, cmp.question,
                        json.dumps([r.id for r in cmp.runs]), json.dumps(cmp.labels)))

    def get_comparison(self, cmp_id: str) -> Comparison | None:
        """The comparison ``cmp_id`` with the runs of it that still exist, or None."""
        with self._db() as db:
            row = db.execute("SELECT * FROM comparisons WHERE id = ?", (cmp_id,)).fetchone()
        if row is None:
            return None
        pairs = [(label, self.get(rid)) for rid, label in
                 zip(json.loads(row["run_ids"]), json.loads(row["labels"]), strict=False)]
        pairs = [(label, run) for label, run in pairs if run is not None]
        return Comparison(id=row["id"], question=row["question"], created_at=row["created_at"],
                          labels=[p[0] for p in pairs], runs=[p[1] for p in pairs])

    def list_comparisons(self, session_id: str | None = None, *,
                         limit: int = 100) -> builtins.list[ComparisonSummary]:
        """Comparisons newest first, of ``session_id`` or of every session when None."""
        sql = "SELECT * FROM comparisons" + (" WHERE session_id = ?" if session_id is not None
                                              else "") + " ORDER BY created_at DESC LIMIT ?"
        args = ((session_id,) if session_id is not None else ()) + (max(0, int(limit)),)
        with self._db() as db:
            rows = db.execute(sql, args).fetchall()
        return [ComparisonSummary(id=r["id"], session_id=r["session_id"],
                                  created_at=r["created_at"], question=r["question"],
                                  run_ids=json.loads(r["run_ids"]), labels=json.loads(r["labels"]))
                for r in rows]

