"""A run row is a summary; the run's trace is read from its checkpoints (issue 20).

Real Chroma over the papers, the offline engine, SQLite in a temporary data directory: the runs are saved
through RunStore.for_settings (whose checkpointer is the one the graph wrote), and read back the way the
Trace, Compare and Insights pages and the CLI read them.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from rag.config import Settings, preset_options
from rag.history import RunStore
from rag.history.traces import IN_CHECKPOINTS
from rag.models import Comparison
from rag.rerun import rerun_from, step_of
from rag.run import make_context, run_question
from rag.trace import insights
from tests.fakes.servers import default_script
from tests.legacy_history import write_legacy_history
from tests.run_fixtures import QUESTION, WEAK_QUESTION, llm_settings

FIRST = "What is Self-RAG?"


@pytest.fixture
def setup(papers_kb, tmp_path):
    """(settings, context, store) of a fresh data directory over the papers."""
    settings = Settings.from_env({}, data_dir=tmp_path / "data")
    return settings, make_context(settings, papers_kb), RunStore.for_settings(settings)


def _row(settings: Settings, run_id: str) -> tuple[str, str | None, str, str | None]:
    """(data, trace_at, thread_id, parent_run_id) of the run's row, read with plain sqlite3."""
    with sqlite3.connect(settings.data_dir / "runs.sqlite") as db:
        return db.execute("SELECT data, trace_at, thread_id, parent_run_id FROM runs WHERE id = ?",
                          (run_id,)).fetchone()


def test_a_saved_run_is_a_summary_row_and_opens_whole(setup):
    settings, ctx, store = setup
    runs = [run_question(QUESTION, ctx, preset_options("full")),
            run_question(WEAK_QUESTION, ctx, preset_options("full", top_k=20, min_relevant=20,
                                                              decomposition=False, routing=False))]
    assert runs[1].rewrites == 2 and any(c.text for c in runs[0].citations)
    for run in runs:
        store.save(run, "alice")
        data, trace_at, thread_id, _ = _row(settings, run.id)
        assert trace_at == IN_CHECKPOINTS and thread_id == run.id
        assert len(data) < len(run.model_dump_json()) / 3
        row = json.loads(data)
        assert [e["node"] for e in row["events"]] == run.path  # the steps, not their details
        assert all(set(e["detail"]) <= {"grounded", "strategy"} for e in row["events"])
        assert all("text" not in c for c in row["citations"]) and len(row["citations"]) == len(run.citations)
        assert row["answer"] == run.answer and row["stop_reason"] == run.stop_reason
        assert store.get(run.id) == run  # the trace and the cited text read back from the checkpoints

    # Insights reads the rows alone and counts what it counted from the whole runs
    loaded = store.load()
    assert {r.id for r in loaded} == {r.id for r in runs}
    whole, summary = insights.compute(runs), insights.compute(loaded)
    for field in ("runs", "answered", "rewrite_rate", "grounding_checks", "grounding_failures", "strategies",
                  "stop_kinds", "llm_calls_per_question", "tokens_per_question", "cost_per_question",
                  "presets"):
        assert getattr(summary, field) == getattr(whole, field), field
    assert sorted(summary.paths) == sorted(whole.paths) and summary.strategies

    # Compare opens its runs whole too
    store.save_comparison(Comparison(question=QUESTION, labels=["A", "B"], runs=runs), "alice")
    [cmp] = store.list_comparisons()
    assert store.get_comparison(cmp.id).runs == runs


def test_a_rerun_is_a_summary_that_opens_whole_and_lists_its_parent(setup, cli, tmp_path):
    settings, ctx, store = setup
    parent = run_question(QUESTION, ctx, preset_options("full"))
    child = rerun_from(parent, step_of(parent, "generate"), ctx)
    assert child.reused_steps > 1 and not child.error, child.stop_reason
    for run in (parent, child):
        store.save(run, "cli")
    assert _row(settings, child.id)[1:] == (IN_CHECKPOINTS, parent.thread_id, parent.id)
    got = store.get(child.id)
    assert got == child and got.events[:child.reused_steps] == child.events[:child.reused_steps]
    again = rerun_from(store.get(parent.id), step_of(parent, "generate"), ctx)  # re-run what was opened
    assert again.parent_run_id == parent.id and not again.error

    out = cli("runs", "list", "--data-dir", settings.data_dir, "--json")
    assert out.returncode == 0, out.stderr
    listed = {r["id"]: r for r in json.loads(out.stdout)}
    assert (listed[child.id]["parent_run_id"], listed[child.id]["from_node"]) == (parent.id, "generate")
    assert listed[parent.id]["parent_run_id"] is None and listed[parent.id]["thread_id"] == parent.id
    out = cli("runs", "export", child.id, "--format", "json", "--out", tmp_path / "child.json",
              "--data-dir", settings.data_dir)
    assert out.returncode == 0, out.stderr
    exported = json.loads((tmp_path / "child.json").read_text())["run"]
    assert exported["events"] == [e.model_dump(mode="json") for e in child.events]
    assert [c["text"] for c in exported["citations"]] == [c.text for c in child.citations]


def test_a_rerun_on_the_llm_engine_opens_with_no_call_for_its_reused_steps(fake, papers_kb, tmp_path):
    """The child's checkpoints hold the parent's steps with their calls; the opened child counts none."""
    fake.script = default_script
    settings = llm_settings(fake, tmp_path / "data")
    ctx, store = make_context(settings, papers_kb), RunStore.for_settings(settings)
    parent = run_question(QUESTION, ctx, preset_options("full"))
    child = rerun_from(parent, step_of(parent, "generate"), ctx)
    assert parent.llm_calls > 0 and not child.error, child.stop_reason
    assert sum(e.llm_calls for e in parent.events[:child.reused_steps]) > 0
    store.save(child, "alice")
    assert _row(settings, child.id)[1] == IN_CHECKPOINTS
    got = store.get(child.id)
    assert got == child and sum(e.llm_calls for e in got.events[:child.reused_steps]) == 0


def test_a_run_its_checkpoints_do_not_hold_keeps_its_whole_row(setup, papers_kb, tmp_path):
    settings, ctx, store = setup
    elsewhere = make_context(Settings.from_env({}, data_dir=tmp_path / "other"), papers_kb)
    unsaved = make_context(settings, papers_kb, checkpoints=False)
    changed = run_question(FIRST, ctx, preset_options("naive"))
    cited = changed.citations[0].model_copy(update={"chunk_id": "not-the-checkpoint-s"})
    for run in (run_question(FIRST, elsewhere, preset_options("naive")),  # checkpoints in another file
                run_question(FIRST, unsaved, preset_options("naive")),  # no checkpoint at all
                changed.model_copy(update={"citations": [cited, *changed.citations[1:]]})):
        store.save(run, "alice")
        data, trace_at, thread_id, _ = _row(settings, run.id)
        assert trace_at is None and data == run.model_dump_json() and thread_id == run.thread_id
        assert store.get(run.id) == run


def test_a_summary_whose_checkpoints_are_gone_still_opens(setup, caplog):
    _, ctx, store = setup
    run = run_question(QUESTION, ctx, preset_options("full"))
    store.save(run, "alice")
    ctx.checkpointer.delete_thread(run.thread_id)  # e.g. removed by hand
    got = store.get(run.id)
    assert (got.id, got.answer, got.path, got.llm_calls) == (run.id, run.answer, run.path, run.llm_calls)
    assert got.events != run.events and [e.node for e in got.events] == run.path
    assert any("no checkpoint of run" in r.getMessage() for r in caplog.records)


def test_deleting_a_conversation_gives_its_kept_runs_their_whole_rows(setup):
    settings, ctx, store = setup
    t = store.create_thread("alice").id
    turn = run_question(FIRST, ctx, preset_options("full"), thread_id=t)
    store.add_turn(t, "alice", turn)
    child = rerun_from(turn, step_of(turn, "generate"), ctx)  # its checkpoints are in the thread too
    store.save(child, "alice")
    assert store.get_thread(t, checkpoints=ctx.checkpointer).turns[0].run == turn
    assert _row(settings, turn.id)[1] == _row(settings, child.id)[1] == IN_CHECKPOINTS

    assert store.delete_thread(t, "alice", checkpoints=ctx.checkpointer)
    for run in (turn, child):
        data, trace_at, _, _ = _row(settings, run.id)
        assert trace_at is None and store.get(run.id) == run
        assert json.loads(data)["events"] == [e.model_dump(mode="json") for e in run.events]


def test_rows_from_before_summaries_open_as_they_are_and_gain_their_links(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    made = write_legacy_history(data / "runs.sqlite")
    raw = made["runs"]
    with sqlite3.connect(data / "runs.sqlite") as db:  # a re-run saved by the version before this one
        child = {**raw[3], "thread_id": "t-old", "parent_run_id": raw[0]["id"], "from_node": "generate"}
        db.execute("UPDATE runs SET data = ? WHERE id = ?", (json.dumps(child), raw[3]["id"]))
    store = RunStore.for_settings(Settings.from_env({}, data_dir=data))
    with sqlite3.connect(data / "runs.sqlite") as db:
        rows = dict(db.execute("SELECT id, thread_id || '|' || coalesce(parent_run_id, '') || '|' || "
                               "coalesce(from_node, '') || '|' || coalesce(trace_at, '') FROM runs"))
    assert rows[raw[3]["id"]] == f"t-old|{raw[0]['id']}|generate|"
    assert rows[raw[0]["id"]] == f"{raw[0].get('thread_id') or ''}|||"
    for r in raw:
        got = store.get(r["id"])
        assert got is not None and len(got.events) == len(r["events"]) and got.answer == r["answer"]
    listed = {s.id: s for s in store.list()}
    assert (listed[raw[3]["id"]].parent_run_id, listed[raw[3]["id"]].from_node) == (raw[0]["id"], "generate")
