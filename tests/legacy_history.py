"""The run history as ``main`` wrote it before SQLAlchemy (issue 20), for the upgrade tests.

Its schema, verbatim, and a ``runs.sqlite`` made with plain sqlite3 from tests/fixtures/runs_v1.json.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

LEGACY_RUNS = Path(__file__).resolve().parent / "fixtures" / "runs_v1.json"

SCHEMA_V1 = """
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
"""The schema of ``runs.sqlite`` before feedback (issue 11) and before SQLAlchemy (issue 20)."""


def write_legacy_history(path: Path, *, feedback: bool = True) -> dict:
    """A ``runs.sqlite`` at ``path`` as main wrote it.

    The runs of runs_v1.json (session ``alice``), one thread of two turns (the second answered twice), a
    comparison, and a thumbs up.

    ``feedback`` False leaves out the feedback column (the first schema). Returns what was written:
    ``{"runs": [raw dicts], "thread_id": str, "comparison_id": str}``.
    """
    raw = json.loads(LEGACY_RUNS.read_text())
    db = sqlite3.connect(path)
    with db:
        db.executescript(SCHEMA_V1)
        if feedback:
            db.execute("ALTER TABLE runs ADD COLUMN feedback INTEGER")
        for i, r in enumerate(raw):
            db.execute("INSERT INTO runs (id, session_id, created_at, question, engine, stop_kind, preset, "
                       "knowledge_base, comparison_id, steps, llm_calls, duration_ms, data) "
                       "VALUES (?, 'alice', ?, ?, ?, 'answered', 'full', ?, ?, ?, 0, ?, ?)",
                       (r["id"], r["created_at"], r["question"], r["engine"], r.get("knowledge_base", ""),
                        "cmp-1" if i < 2 else None, len(r["events"]), r.get("duration_ms", 0),
                        json.dumps(r)))
        db.execute("INSERT INTO comparisons VALUES ('cmp-1', 'alice', 1.0, ?, ?, ?)",
                   (raw[0]["question"], json.dumps([raw[0]["id"], raw[1]["id"]]), json.dumps(["A", "B"])))
        db.execute("INSERT INTO threads VALUES "
                   "('thread-1', 'alice', 'Old conversation', 'default', 1.0, 2.0)")
        for turn, run, at in ((1, raw[0], 1.0), (2, raw[1], 2.0), (2, raw[2], 3.0)):
            db.execute("INSERT INTO thread_runs VALUES ('thread-1', ?, ?, ?)", (turn, run["id"], at))
        if feedback:
            db.execute("UPDATE runs SET feedback = 1 WHERE id = ?", (raw[0]["id"],))
    db.close()
    return {"runs": raw, "thread_id": "thread-1", "comparison_id": "cmp-1"}
