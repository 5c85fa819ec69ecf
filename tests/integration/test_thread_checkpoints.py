"""A conversation's turns come from its checkpoints (issue 20): real Chroma, the offline engine, SQLite.

The run history keeps the rows for listing; the turns shown and the ``history`` a follow-up is given are read
from the LangGraph thread's checkpoints, falling back to the run rows for turns asked before checkpoints were
kept. Deleting a conversation deletes its checkpoints.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rag.config import Settings, preset_options
from rag.history import RunStore
from rag.history.checkpoints import open_checkpointer
from rag.history.turns import UNFINISHED, current_turns, thread_turns
from rag.ingest.pipeline import ingest_files
from rag.rerun import rerun_from, step_of
from rag.run import make_context, run_question
from rag.store.chroma import open_knowledge_base
from tests.conftest import ROOT
from tests.legacy_history import write_legacy_history
from tests.run_fixtures import KEY

FIRST = "What is Self-RAG?"
FOLLOW_UP = "How is it trained?"


@pytest.fixture
def setup(papers_kb, tmp_path):
    """(settings, context, store) of a fresh data directory over the papers."""
    settings = Settings.from_env({}, data_dir=tmp_path / "data")
    return settings, make_context(settings, papers_kb), RunStore.for_settings(settings)


def _all_checkpoints(saver, thread_id: str) -> list:
    return list(saver.list({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}))


def test_turns_are_read_from_the_checkpoints_and_outlive_their_run_rows(setup):
    _, ctx, store = setup
    saver = ctx.checkpointer
    t = store.create_thread("alice", knowledge_base="default").id
    first = run_question(FIRST, ctx, preset_options("naive"), thread_id=t)
    store.add_turn(t, "alice", first)
    follow = run_question(FOLLOW_UP, ctx, preset_options("naive"), thread_id=t,
                          history=store.thread_history(t, checkpoints=saver))
    store.add_turn(t, "alice", follow)
    again = run_question(FOLLOW_UP, ctx, preset_options("full"), thread_id=t,
                         history=store.thread_history(t, checkpoints=saver)[:1])  # regenerate turn 2
    store.add_turn(t, "alice", again, turn=2)
    # a re-run from a step forks inside the thread: not a turn of it
    child = rerun_from(follow, step_of(follow, "generate"), ctx)
    assert child.thread_id == t

    saved = thread_turns(saver, t)
    assert [(s.turn, s.run_id) for s in saved] == [(1, first.id), (2, follow.id), (2, again.id)]
    for s, run in zip(saved, (first, follow, again), strict=True):
        assert s.finished and s.question == run.question and s.answer == run.answer
        assert s.standalone_question == run.standalone_question
        assert s.citations == run.citations and s.stop_reason == run.stop_reason and s.events == run.events
        assert s.ended_at >= s.started_at > 0
    assert follow.standalone_question and "Self-RAG" in follow.standalone_question
    assert saved[0].standalone_question == ""  # a first question is not contextualized
    assert [c.run_id for c in current_turns(saved)] == [first.id, again.id]

    thread = store.get_thread(t, checkpoints=saver)
    assert [(x.turn, [r.id for r in x.runs]) for x in thread.turns] == [
        (1, [first.id]), (2, [follow.id, again.id])]
    assert thread.turns[1].run.options == again.options  # the row gives what checkpoints do not hold
    assert [h.understood() for h in thread.history()] == [FIRST, again.standalone_question]

    # the run rows deleted, the turns are still there: they are read from the checkpoints
    for run in (first, follow, again):
        assert store.delete(run.id, "alice")
    assert store.get_thread(t).turns == []  # the rows alone have nothing left
    thread = store.get_thread(t, checkpoints=saver)
    assert [(x.turn, [r.id for r in x.runs]) for x in thread.turns] == [
        (1, [first.id]), (2, [follow.id, again.id])]
    rebuilt = thread.turns[0].run
    assert (rebuilt.question, rebuilt.answer, rebuilt.citations) == (first.question, first.answer,
                                                                     first.citations)
    assert rebuilt.path == first.path and rebuilt.thread_id == t and rebuilt.knowledge_base == "default"
    assert store.thread_history(t, checkpoints=saver)[0].answer == first.answer


def test_a_follow_up_resolves_against_the_checkpointed_turn_through_the_cli(tmp_path):
    """``ask --thread`` in a new process reads the earlier turn from the checkpoints, not the run rows."""
    settings = Settings.from_env({}, data_dir=tmp_path / "data")
    notes = tmp_path / "self_rag.md"
    notes.write_text("# Self-RAG\n\nSelf-RAG is a language model that retrieves on demand and critiques its "
                     "own output with reflection tokens. Self-RAG is trained on data annotated by a critic "
                     "model.\n")
    kb = open_knowledge_base(settings)
    assert [r.status for r in ingest_files(kb, [notes])] == ["ingested"]
    store = RunStore.for_settings(settings)
    first = run_question(FIRST, make_context(settings, kb), preset_options("naive"), thread_id="t-cli")
    store.create_thread("cli", thread_id="t-cli")
    store.add_turn("t-cli", "cli", first)
    assert store.delete(first.id, "cli")  # only the checkpoints know the first turn now
    env = {"PATH": "/usr/bin:/bin", "RAG_DATA_DIR": str(settings.data_dir), "RAG_ENV_FILE": ""}

    def cli(*args: str) -> dict:
        out = subprocess.run([sys.executable, "-m", "rag", *args, "--json"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    follow = cli("ask", FOLLOW_UP, "--preset", "naive", "--thread", "t-cli")
    assert follow["path"][0] == "contextualize_question"
    assert "Self-RAG" in follow["standalone_question"]
    shown = cli("threads", "show", "t-cli")
    assert [(t["turn"], [r["run_id"] for r in t["runs"]]) for t in shown["turns"]] == [
        (1, [first.id]), (2, [follow["run_id"]])]
    assert shown["turns"][0]["runs"][0]["answer"] == first.answer


def test_turns_from_before_checkpoints_come_from_the_run_rows(setup, tmp_path):
    settings, ctx, store = setup
    saver = ctx.checkpointer
    # a data directory from before checkpoints: its conversation shows as it did
    old = tmp_path / "old"
    old.mkdir()
    made = write_legacy_history(old / "runs.sqlite")
    old_settings = Settings.from_env({}, data_dir=old)
    legacy = RunStore.for_settings(old_settings).get_thread(made["thread_id"],
                                                           checkpoints=open_checkpointer(old_settings))
    raw = made["runs"]
    assert [(x.turn, [r.id for r in x.runs]) for x in legacy.turns] == [
        (1, [raw[0]["id"]]), (2, [raw[1]["id"], raw[2]["id"]])]
    assert [h.question for h in legacy.history()] == [raw[0]["question"], raw[2]["question"]]

    # a conversation whose first turn was asked as a one-off (its checkpoints in the run's own thread, as
    # the Chat page did before): that turn from its row, the next from the conversation's checkpoints
    t = store.create_thread("alice").id
    one_off = run_question(FIRST, ctx, preset_options("naive"))
    store.add_turn(t, "alice", one_off)
    follow = run_question(FOLLOW_UP, ctx, preset_options("naive"), thread_id=t,
                          history=store.thread_history(t, checkpoints=saver))
    store.add_turn(t, "alice", follow)
    assert [s.run_id for s in thread_turns(saver, t)] == [follow.id]
    thread = store.get_thread(t, checkpoints=saver)
    assert [(x.turn, [r.id for r in x.runs]) for x in thread.turns] == [(1, [one_off.id]), (2, [follow.id])]
    assert thread.turns[0].run == store.get(one_off.id)

    # deleting it with its runs deletes the checkpoints of both threads
    assert store.delete_thread(t, "alice", with_runs=True, checkpoints=saver)
    assert _all_checkpoints(saver, t) == [] and _all_checkpoints(saver, one_off.id) == []


def test_deleting_a_conversation_deletes_its_checkpoints(setup):
    _, ctx, store = setup
    saver = ctx.checkpointer
    t = store.create_thread("alice").id
    turn = run_question(FIRST, ctx, preset_options("naive"), thread_id=t)
    store.add_turn(t, "alice", turn)
    other = run_question(FIRST, ctx, preset_options("naive"))  # a one-off question: a thread of its own
    store.save(other, "alice")
    assert _all_checkpoints(saver, t) and _all_checkpoints(saver, other.id)

    assert store.delete_thread(t, "alice", checkpoints=saver)
    assert _all_checkpoints(saver, t) == [] and thread_turns(saver, t) == []
    assert _all_checkpoints(saver, other.id)  # another thread's stay
    kept = store.get(turn.id)  # the run stays in the history, readable, but cannot be re-run from a step
    assert kept is not None and kept.answer == turn.answer
    with pytest.raises(ValueError, match="deleted"):
        rerun_from(kept, step_of(kept, "generate"), ctx)
    assert store.delete_thread(t, "alice", checkpoints=saver) is False


def test_an_unfinished_run_keeps_its_row_answer(setup):
    """A run whose checkpoints stop before the end keeps the row's answer (which says why it stopped)."""
    _, ctx, store = setup
    saver = ctx.checkpointer
    t = store.create_thread("alice").id
    run = run_question(FIRST, ctx, preset_options("naive"), thread_id=t)
    store.add_turn(t, "alice", run)
    last = next(iter(saver.list({"configurable": {"thread_id": t, "checkpoint_ns": ""}}, limit=1)))
    with saver.lock:  # the graph's last step undone, as if the process had stopped there
        saver.conn.execute("DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?",
                           (t, last.config["configurable"]["checkpoint_id"]))
        saver.conn.commit()
    [saved] = thread_turns(saver, t)
    assert not saved.finished and saved.answer == UNFINISHED and saved.citations == []
    shown = store.get_thread(t, checkpoints=saver).turns[0].run
    assert shown.answer == run.answer and shown.stop_reason == run.stop_reason

    # stopped right at its input (only the input checkpoint left): the question is still its turn
    with saver.lock:
        saver.conn.execute("DELETE FROM checkpoints WHERE thread_id = ? AND "
                           "json_extract(CAST(metadata AS TEXT), '$.source') != 'input'", (t,))
        saver.conn.commit()
    [saved] = thread_turns(saver, t)
    assert (saved.turn, saved.question, saved.finished, saved.events) == (1, FIRST, False, [])


def test_a_key_typed_into_a_turn_is_not_read_back_from_its_checkpoints(setup):
    _, ctx, _ = setup
    saver = ctx.checkpointer
    run = run_question(f"What is Self-RAG? {KEY}", ctx, preset_options("naive"), thread_id="t-key")
    [last] = saver.list({"configurable": {"thread_id": "t-key", "checkpoint_ns": ""}}, limit=1)
    assert KEY in last.checkpoint["channel_values"]["question"]  # the checkpoint holds what was typed
    [saved] = thread_turns(saver, "t-key")
    assert KEY not in repr(saved) and "[redacted]" in saved.question
    assert (saved.question, saved.answer, saved.events) == (run.question, run.answer, run.events)
    assert any("[redacted]" in e.model_dump_json() for e in saved.events)
