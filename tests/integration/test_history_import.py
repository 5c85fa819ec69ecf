"""Nothing lost on upgrade (issue 20): a data directory's ``runs.sqlite`` is copied into RAG_DATABASE_URL.

Each test fills a data directory through the normal stores (SQLite), then points the settings at a shared
database: a SQLite URL (runs anywhere) and a throwaway PostgreSQL 15 (tests/pg.py; skipped without it).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import select

from rag.config import Settings, preset_options
from rag.db import shown
from rag.history import FEEDBACK_DOWN, FEEDBACK_UP, RunStore
from rag.history.base import RUNS
from rag.history.checkpoints import open_checkpointer
from rag.history.local_import import import_local, import_once, imported_before, target_key
from rag.history.traces import IN_CHECKPOINTS
from rag.history.turns import thread_turns
from rag.models import Comparison, Run
from rag.rerun import rerun_from, step_of
from rag.run import make_context, run_question
from tests.legacy_history import LEGACY_RUNS, write_legacy_history
from tests.run_fixtures import QUESTION

PASSWORD = "hunter2-not-stored"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.server)])
def shared_url(request, tmp_path) -> str:
    """The shared database: a SQLite URL, or a new PostgreSQL database reached with a password."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'shared-history.sqlite'}"
    url = request.getfixturevalue("database_url")  # the server trusts 127.0.0.1: any password logs in
    return url.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@")


def _runs(prefix: str) -> list[Run]:
    raw = json.loads(LEGACY_RUNS.read_text())
    return [Run.model_validate({**r, "id": f"{prefix}{r['id']}"}) for r in raw]


def _fill(data: Path, prefix: str) -> dict:
    """A data directory's history made through RunStore; returns the ids.

    A 3-turn conversation (turn 2 answered twice), a comparison, feedback on two runs.
    """
    store = RunStore.for_settings(Settings.from_env({}, data_dir=data))
    assert store.url is None  # the data directory's own runs.sqlite
    runs = _runs(prefix)
    thread = store.create_thread("alice", knowledge_base="default", thread_id=f"{prefix}thread")
    assert store.add_turn(thread.id, "alice", runs[0]) == 1
    assert store.add_turn(thread.id, "alice", runs[1]) == 2
    assert store.add_turn(thread.id, "alice", runs[2], turn=2) == 2  # a regenerated answer
    assert store.add_turn(thread.id, "alice", runs[3]) == 3
    store.save_comparison(Comparison(id=f"{prefix}cmp", question=runs[4].question, labels=["A"],
                                     runs=[runs[4]], created_at=runs[4].created_at), "bob")
    assert store.set_feedback(runs[0].id, "alice", FEEDBACK_UP)
    assert store.set_feedback(runs[4].id, "bob", FEEDBACK_DOWN)
    return {"thread": thread.id, "runs": [r.id for r in runs],
            "turns": [(1, [runs[0].id]), (2, [runs[1].id, runs[2].id]), (3, [runs[3].id])]}


def _shared(data: Path, url: str) -> RunStore:
    return RunStore.for_settings(Settings.from_env({"RAG_DATABASE_URL": url}, data_dir=data))


def test_opening_the_shared_database_brings_the_data_directory_along(tmp_path, shared_url, caplog):
    data = tmp_path / "data"
    made = _fill(data, "a-")
    caplog.set_level(logging.WARNING, logger="rag.history.local_import")

    store = _shared(data, shared_url)
    assert store.url == shared_url
    assert [t.id for t in store.list_threads("alice")] == [made["thread"]]
    thread = store.get_thread(made["thread"])
    assert [(t.turn, [r.id for r in t.runs]) for t in thread.turns] == made["turns"]
    assert thread.summary.turns == 3 and thread.summary.title
    assert sorted(s.id for s in store.list()) == sorted(made["runs"])
    assert store.feedback() == {made["runs"][0]: FEEDBACK_UP, made["runs"][4]: FEEDBACK_DOWN}
    cmp = store.get_comparison("a-cmp")
    assert cmp is not None and [r.id for r in cmp.runs] == [made["runs"][4]]
    assert store.owner(made["runs"][4]) == "bob"  # ownership is kept: bob's run stays bob's

    lines = [r.getMessage() for r in caplog.records]
    assert lines == [f"imported 1 conversations and 5 runs (1 comparisons, 4 conversation turns) "
                     f"from {data / 'runs.sqlite'} into the shared database {shown(shared_url)}"]
    assert PASSWORD not in lines[0]

    # The file's rows were only read; the marker holds a hash, never the URL or its password.
    with sqlite3.connect(data / "runs.sqlite") as db:
        assert db.execute("SELECT target FROM imported_into").fetchall() == [(target_key(shared_url),)]
    assert PASSWORD.encode() not in (data / "runs.sqlite").read_bytes()
    with sqlite3.connect(data / "runs.sqlite") as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (5,)

    # Opening again imports nothing; an explicit import finds every row there already.
    assert imported_before(data, shared_url)
    assert import_once(data, shared_url) is None
    _shared(data, shared_url)
    assert [r.getMessage() for r in caplog.records] == lines
    again = import_local(data, shared_url)
    assert again.copied == {"runs": 0, "comparisons": 0, "thread_runs": 0, "threads": 0} and again.total == 0
    assert store.count() == 5


def test_a_second_data_directory_adds_its_own_and_duplicates_nothing(tmp_path, shared_url):
    one, two = tmp_path / "one", tmp_path / "two"
    first = _fill(one, "a-")
    second = _fill(two, "b-")
    # The second directory also holds a run the shared database will have already (same id).
    RunStore.for_settings(Settings.from_env({}, data_dir=two)).save(_runs("a-")[3], "alice")

    assert import_local(one, shared_url).runs == 5
    counts = import_local(two, shared_url)
    assert (counts.conversations, counts.runs, counts.copied["thread_runs"]) == (1, 5, 4)  # not a-'s run

    store = RunStore(shared_url)
    assert store.count() == 10
    assert sorted(t.id for t in store.list_threads(None)) == sorted([first["thread"], second["thread"]])
    for made in (first, second):
        got = store.get_thread(made["thread"])
        assert [(t.turn, [r.id for r in t.runs]) for t in got.turns] == made["turns"]
    assert len(store.feedback()) == 4 and len(store.list_comparisons()) == 2


def test_a_row_already_in_the_shared_database_is_kept_as_it_is(tmp_path, shared_url):
    data = tmp_path / "data"
    made = _fill(data, "a-")
    store = RunStore(shared_url)
    newer = _runs("a-")[0].model_copy(update={"question": "asked again on a replica"})
    store.save(newer, "alice")  # the shared database's copy of the run differs from the file's

    counts = import_local(data, shared_url)
    assert counts.runs == 4
    assert store.count() == 5 and store.get(made["runs"][0]).question == "asked again on a replica"
    assert [r.id for r in store.load()].count(made["runs"][0]) == 1


def test_a_failed_import_loses_nothing_and_is_done_next_time(tmp_path, caplog):
    data = tmp_path / "data"
    made = _fill(data, "a-")
    shared = tmp_path / "shared.sqlite"
    with sqlite3.connect(shared) as db:  # a threads table that refuses this thread: the import fails there
        db.execute("CREATE TABLE threads (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, "
                   "title TEXT NOT NULL, knowledge_base TEXT NOT NULL DEFAULT '', created_at FLOAT NOT NULL, "
                   "updated_at FLOAT NOT NULL, CHECK (id <> 'a-thread'))")
    url = f"sqlite:///{shared}"
    caplog.set_level(logging.WARNING, logger="rag.history.local_import")

    store = _shared(data, url)  # the store opens all the same
    assert store.list_threads(None) == [] and not imported_before(data, url)
    assert any("stay out of the shared database" in r.getMessage() for r in caplog.records)
    assert store.count() == 5  # the runs and turns copied before the failure stay; the thread is not shown

    with sqlite3.connect(shared) as db:  # the operator fixes the database
        db.execute("DROP TABLE threads")
    RunStore(url)  # makes the table again
    counts = import_local(data, url)
    assert (counts.conversations, counts.runs, counts.copied["thread_runs"]) == (1, 0, 0)
    assert imported_before(data, url)
    assert [(t.turn, [r.id for r in t.runs]) for t in store.get_thread(made["thread"]).turns] == made["turns"]


def test_a_file_from_before_feedback_imports(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    made = write_legacy_history(data / "runs.sqlite", feedback=False)  # no feedback column at all
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    store = _shared(data, url)
    assert store.count() == len(made["runs"]) and store.feedback() == {}
    assert [t.turns for t in store.list_threads("alice")] == [2]
    assert import_local(tmp_path / "empty", url).total == 0  # no runs.sqlite: nothing to do, no error
    assert not (tmp_path / "empty").exists()


def test_the_cli_imports_and_reports_counts(tmp_path, cli, monkeypatch):
    data = tmp_path / "data"
    _fill(data, "a-")
    out = cli("runs", "import-local", "--data-dir", data)
    assert out.returncode == 2 and "RAG_DATABASE_URL is not set" in out.stderr

    monkeypatch.setenv("RAG_DATABASE_URL", f"sqlite:///{tmp_path / 'shared.sqlite'}")
    out = cli("runs", "import-local", "--data-dir", data, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["copied"] == {"runs": 5, "comparisons": 1, "thread_runs": 4, "threads": 1}
    out = cli("runs", "import-local", "--data-dir", data)
    assert out.returncode == 0 and out.stdout.startswith("imported 0 conversations and 0 runs from ")
    out = cli("runs", "list", "--data-dir", data, "--json")
    assert out.returncode == 0 and len(json.loads(out.stdout)) == 5
    assert "import-local" in cli("runs", "--help").stdout


def _checkpoints(saver) -> list[tuple[str, str, str]]:
    """(thread, checkpoint id, run id) of every checkpoint of ``saver``, sorted."""
    return sorted((t.config["configurable"]["thread_id"], t.checkpoint["id"],
                   str((t.metadata or {}).get("retrace_run_id"))) for t in saver.list(None))


def test_the_checkpoints_come_along_so_turns_and_traces_open(tmp_path, shared_url, papers_kb, cli,
                                                             monkeypatch):
    """A data directory of this version: its conversation's turns and its runs' traces are in checkpoints."""
    data = tmp_path / "data"
    local = Settings.from_env({}, data_dir=data)
    ctx, store = make_context(local, papers_kb), RunStore.for_settings(local)
    t = store.create_thread("alice", knowledge_base="default").id
    first = run_question("What is Self-RAG?", ctx, preset_options("naive"), thread_id=t)
    store.add_turn(t, "alice", first)
    follow = run_question("How is it trained?", ctx, preset_options("naive"), thread_id=t,
                          history=store.thread_history(t, checkpoints=ctx.checkpointer))
    store.add_turn(t, "alice", follow)
    one_off = run_question(QUESTION, ctx, preset_options("full"))
    child = rerun_from(one_off, step_of(one_off, "generate"), ctx)
    for run in (one_off, child):
        store.save(run, "alice")
    runs = [first, follow, one_off, child]
    with sqlite3.connect(data / "runs.sqlite") as db:  # summary rows: their traces only in the checkpoints
        assert db.execute("SELECT count(*) FROM runs WHERE trace_at = 'checkpoints'").fetchone() == (4,)
    source = _checkpoints(ctx.checkpointer)
    assert {c[2] for c in source} == {r.id for r in runs}

    monkeypatch.setenv("RAG_DATABASE_URL", shared_url)
    out = cli("runs", "import-local", "--data-dir", data, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["copied"] == {"runs": 4, "comparisons": 0, "thread_runs": 2, "threads": 1,
                                                "checkpoints": len(source)}
    shared_settings = Settings.from_env({"RAG_DATABASE_URL": shared_url}, data_dir=data)
    saver = open_checkpointer(shared_settings)
    assert saver is not ctx.checkpointer and _checkpoints(saver) == source

    shared = RunStore.for_settings(shared_settings)
    assert [s.run_id for s in thread_turns(saver, t)] == [first.id, follow.id]
    thread = shared.get_thread(t, checkpoints=saver)
    assert [[r for r in turn.runs] for turn in thread.turns] == [[first], [follow]]
    for run in runs:
        assert shared.get(run.id) == run  # the whole trace, read from the copied checkpoints
    again = rerun_from(shared.get(one_off.id), step_of(one_off, "generate"), make_context(shared_settings,
                                                                                          papers_kb))
    assert again.parent_run_id == one_off.id and not again.error, again.stop_reason
    shared.save(again, "alice")  # saved on the shared database: a summary row there too
    with shared.engine.connect() as conn:
        assert conn.execute(select(RUNS.c.trace_at).where(RUNS.c.id == again.id)).scalar() == IN_CHECKPOINTS
    assert shared.get(again.id) == again

    # a second import copies nothing, checkpoints included
    before = _checkpoints(saver)
    out = cli("runs", "import-local", "--data-dir", data)
    assert out.returncode == 0, out.stderr
    assert out.stdout == (f"imported 0 conversations and 0 runs from {data / 'runs.sqlite'} "
                          f"into the shared database {shown(shared_url)}\n")
    assert import_local(data, shared_url).copied == {"runs": 0, "comparisons": 0, "thread_runs": 0,
                                                     "threads": 0, "checkpoints": 0}
    assert _checkpoints(saver) == before


def test_opening_the_shared_database_copies_the_checkpoints_once(tmp_path, shared_url, papers_kb, caplog):
    data = tmp_path / "data"
    local = Settings.from_env({}, data_dir=data)
    ctx, store = make_context(local, papers_kb), RunStore.for_settings(local)
    run = run_question("What is Self-RAG?", ctx, preset_options("naive"))
    store.save(run, "alice")
    count = len(_checkpoints(ctx.checkpointer))
    caplog.set_level(logging.WARNING, logger="rag.history.local_import")

    shared = _shared(data, shared_url)
    assert shared.get(run.id) == run
    assert [r.getMessage() for r in caplog.records] == [
        f"imported 0 conversations and 1 runs ({count} checkpoints) from {data / 'runs.sqlite'} "
        f"into the shared database {shown(shared_url)}"]
