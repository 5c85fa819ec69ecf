"""Thumbs up/down saved with a run (issue 11, section 4), an old history migrated, Insights per preset."""

from __future__ import annotations

import sqlite3

import pytest

from rag.config import preset_options
from rag.history import FEEDBACK_DOWN, FEEDBACK_UP, RunOwnedElsewhere, RunStore
from rag.trace.insights import feedback_by_pipeline
from tests.legacy_history import SCHEMA_V1 as _SCHEMA


def test_feedback_is_saved_with_the_run_kept_on_resave_and_owned(tmp_path, runs):
    store = RunStore(tmp_path / "runs.sqlite")
    run = runs["answered"]
    store.save(run, "alice")
    assert store.feedback([run.id]) == {}
    assert store.set_feedback(run.id, "alice", FEEDBACK_UP)
    assert store.feedback([run.id]) == {run.id: 1}
    store.save(run, "alice")  # saving the run again (a new turn links it) keeps its feedback
    assert RunStore(tmp_path / "runs.sqlite").feedback() == {run.id: 1}  # and a restart
    assert store.set_feedback(run.id, "alice", FEEDBACK_DOWN)
    assert store.feedback() == {run.id: 0}
    with pytest.raises(RunOwnedElsewhere):
        store.set_feedback(run.id, "bob", FEEDBACK_UP)
    with pytest.raises(ValueError):
        store.set_feedback(run.id, "alice", 5)
    assert store.feedback([run.id]) == {run.id: 0}
    assert store.set_feedback(run.id, "alice", None) and store.feedback() == {}
    assert store.set_feedback("no-such-run", "alice", FEEDBACK_UP) is False


def test_a_history_made_before_feedback_opens_and_takes_feedback(tmp_path, runs):
    path = tmp_path / "runs.sqlite"
    run = runs["answered"]
    with sqlite3.connect(path) as db:  # the schema as it was: no feedback column
        db.executescript(_SCHEMA)
        assert "feedback" not in {row[1] for row in db.execute("PRAGMA table_info(runs)")}
        db.execute("INSERT INTO runs (id, session_id, created_at, question, engine, stop_kind, preset, "
                   "data) VALUES (?, 'alice', ?, ?, 'local', 'answered', 'full', ?)",
                   (run.id, run.created_at, run.question, run.model_dump_json()))
    db.close()
    store = RunStore(path)
    assert store.get(run.id) == run and [s.id for s in store.list("alice")] == [run.id]
    assert store.feedback() == {}
    assert store.set_feedback(run.id, "alice", FEEDBACK_UP)
    assert RunStore(path).feedback() == {run.id: 1}


def test_insights_count_thumbs_per_pipeline(runs):
    full = runs["answered"]
    naive = full.model_copy(update={"id": "naive-1", "options": preset_options("naive")})
    naive2 = naive.model_copy(update={"id": "naive-2"})
    naive3 = naive.model_copy(update={"id": "naive-3"})
    rows = feedback_by_pipeline([full, naive, naive2, naive3],
                                {full.id: 1, "naive-1": 0, "naive-2": 1})
    assert rows == [
        {"pipeline": "Naive RAG", "runs": 3, "rated": 2, "up": 1, "down": 1, "up_rate": 0.5},
        {"pipeline": "Full", "runs": 1, "rated": 1, "up": 1, "down": 0, "up_rate": 1.0}]
    assert feedback_by_pipeline([naive3], {})[0]["up_rate"] is None
