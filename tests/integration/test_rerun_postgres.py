"""Checkpoints in PostgreSQL (RAG_DATABASE_URL): two processes' contexts, one database, one re-run.

A throwaway PostgreSQL 15 (Debian's, run as the ``postgres`` user in a temporary directory it owns) on
127.0.0.1 at a free port; skipped where it is not installed.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from rag.config import Settings, preset_options
from rag.history.checkpoints import open_checkpointer, run_checkpoints
from rag.rerun import rerun_from, step_of
from rag.run import make_context, run_question
from tests.fakes.servers import free_port
from tests.run_fixtures import QUESTION
from tests.waiting import port_open, wait_for

PG_BIN = Path("/usr/lib/postgresql/15/bin")
needs_postgres = pytest.mark.skipif(not (PG_BIN / "initdb").exists() or not shutil.which("runuser"),
                                    reason="PostgreSQL 15 is not installed")


def _as_postgres(*args: str) -> None:
    subprocess.run(["runuser", "-u", "postgres", "--", *args], check=True, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def database_url():
    """postgresql://postgres@127.0.0.1:PORT/postgres on a server started for this module, stopped after."""
    root = Path(tempfile.mkdtemp(prefix="retrace-pg-"))
    shutil.chown(root, "postgres", "postgres")
    data, port = root / "data", free_port()
    _as_postgres(str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
    _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "start", "-o",
                 f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off")
    try:
        wait_for(lambda: port_open(port), timeout_s=30, what="PostgreSQL listening")
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


@needs_postgres
def test_checkpoints_in_postgres_are_shared_and_rerun(database_url, papers_kb, tmp_path):
    env = {"RAG_DATABASE_URL": database_url}
    one = make_context(Settings.from_env(env, data_dir=tmp_path / "one"), papers_kb)
    other = make_context(Settings.from_env(env, data_dir=tmp_path / "two"), papers_kb)
    assert type(one.checkpointer).__name__ == "PostgresSaver" and one.checkpointer is other.checkpointer
    assert not (tmp_path / "one" / "checkpoints.sqlite").exists()

    parent = run_question(QUESTION, one, preset_options("full"))
    assert not parent.error, parent.stop_reason
    # a replica with its own data directory re-runs it from the shared checkpoints
    child = rerun_from(parent, step_of(parent, "grade_documents"), other, preset_options("full", top_k=8))
    assert child.parent_run_id == parent.id and child.reused_steps == step_of(parent, "grade_documents") - 1
    assert child.answer and not child.error, child.stop_reason
    saver = open_checkpointer(Settings.from_env(env, data_dir=tmp_path / "three"))
    assert len(list(run_checkpoints(saver, parent.thread_id, parent.id))) == len(parent.events) + 2
    assert list(run_checkpoints(saver, child.thread_id, child.id))

    # turns of one conversation, asked on either replica, share its thread and each starts clean
    first = run_question(QUESTION, one, preset_options("naive"), thread_id="pg-conversation")
    second = run_question(QUESTION, other, preset_options("naive"), thread_id="pg-conversation")
    assert second.path == first.path == ["retrieve", "generate", "finalize"]
    assert [e.step for e in second.events] == [1, 2, 3] and second.answer == first.answer
