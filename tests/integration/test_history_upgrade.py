"""Nothing lost on upgrade (issue 20).

A data directory whose ``runs.sqlite`` was written by main before the history moved to SQLAlchemy opens with
its runs, conversations, comparisons and feedback intact.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

from rag.config import Settings
from rag.history import RunStore
from rag.models import Run
from tests.conftest import ROOT
from tests.legacy_history import write_legacy_history


def test_a_history_written_by_main_opens_intact(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    made = write_legacy_history(data / "runs.sqlite")
    raw = made["runs"]
    store = RunStore.for_settings(Settings.from_env({}, data_dir=data))

    assert store.count() == len(raw) == store.count("alice")
    listed = store.list()
    assert [s.id for s in listed] == [r["id"] for r in sorted(raw, key=lambda r: -r["created_at"])]
    for r in raw:
        assert store.get(r["id"]) == Run.model_validate(r)
    assert store.feedback() == {raw[0]["id"]: 1}

    thread = store.get_thread(made["thread_id"])
    assert thread is not None and thread.summary.title == "Old conversation"
    assert [(t.turn, [x.id for x in t.runs]) for t in thread.turns] == [
        (1, [raw[0]["id"]]), (2, [raw[1]["id"], raw[2]["id"]])]
    assert [h.question for h in thread.history()] == [raw[0]["question"], raw[2]["question"]]
    assert [t.turns for t in store.list_threads("alice")] == [2]
    cmp = store.get_comparison(made["comparison_id"])
    assert cmp is not None and [r.id for r in cmp.runs] == [raw[0]["id"], raw[1]["id"]]

    # and it keeps working as a history: a new turn, a new thread, the old rows untouched
    extra = Run.model_validate(raw[3])
    assert store.add_turn(made["thread_id"], "alice", extra) == 3
    assert store.get_thread(made["thread_id"]).turns[-1].run == extra
    with sqlite3.connect(data / "runs.sqlite") as db:  # still the same plain SQLite file
        assert db.execute("SELECT count(*) FROM thread_runs").fetchone()[0] == 4


def test_a_history_from_before_feedback_opens_through_the_cli(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    made = write_legacy_history(data / "runs.sqlite", feedback=False)
    env = {"PATH": "/usr/bin:/bin", "RAG_DATA_DIR": str(data), "RAG_ENV_FILE": ""}
    runs = subprocess.run([sys.executable, "-m", "rag", "runs", "list", "--json"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert runs.returncode == 0, runs.stderr
    assert {r["id"] for r in json.loads(runs.stdout)} == {r["id"] for r in made["runs"]}
    threads = subprocess.run([sys.executable, "-m", "rag", "threads", "list", "--all", "--json"], cwd=ROOT,
                             env=env, capture_output=True, text=True, timeout=120)
    assert threads.returncode == 0, threads.stderr
    assert [(t["id"], t["turns"]) for t in json.loads(threads.stdout)] == [(made["thread_id"], 2)]
