"""Checkpoints and re-runs from a step (issue 20): real Chroma, the offline engine and the fake LLM server.

The graph saves a checkpoint after every step (SQLite in the data directory); a re-run forks from the one
before a step, reuses the steps before it (no model call for them) and is saved with its parent.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from rag.bench.checkpoints import format_checkpoint_cost, run_checkpoint_cost
from rag.config import Settings, preset_options
from rag.graph.build import build_graph
from rag.history import RunStore
from rag.history.checkpoints import CHECKPOINTS_NAME, checkpoint_bytes, open_checkpointer, run_checkpoints
from rag.models import Chunk, RetrieveDetail, TraceEvent
from rag.rerun import rerun_from, step_of
from rag.run import make_context, run_question
from tests.conftest import ROOT
from tests.fakes.servers import default_script
from tests.run_fixtures import QUESTION, llm_settings

MARKDOWN = ROOT.parent / "shared" / "data" / "markdown"


@pytest.fixture
def ctx(papers_kb, tmp_path):
    """The offline engine over the papers, its checkpoints in a fresh data directory."""
    return make_context(Settings.from_env({}, data_dir=tmp_path / "data"), papers_kb)


def _same_steps(a: list[TraceEvent], b: list[TraceEvent]) -> bool:
    keep = {"llm_calls", "prompt_tokens", "completion_tokens"}
    return [e.model_dump(exclude=keep) for e in a] == [e.model_dump(exclude=keep) for e in b]


def test_a_run_saves_a_checkpoint_per_step_that_reads_back_as_its_state(ctx, tmp_path):
    run = run_question(QUESTION, ctx, preset_options("full"))
    assert run.thread_id == run.id and not run.error, run.stop_reason
    assert (tmp_path / "data" / CHECKPOINTS_NAME).is_file()
    saved = list(run_checkpoints(ctx.checkpointer, run.thread_id, run.id))
    # the input, START's step, then one per node
    assert len(saved) == len(run.events) + 2
    final = build_graph(ctx.checkpointer).get_state(saved[0].config)
    assert final.next == ()
    values = final.values
    assert values["final_answer"] == run.answer
    assert values["events"] == run.events  # pydantic records round-trip through the serde
    assert values["documents"] and all(isinstance(c, Chunk) for c in values["documents"])
    assert values["route"].to == "finalize" or run.path[-1] != "finalize"
    assert "prefetch" not in values and "speculation" not in values  # live objects stay out
    assert checkpoint_bytes(ctx.checkpointer, run.thread_id, run.id) > 0


def test_a_rerun_reuses_the_steps_before_its_fork_and_runs_the_rest(ctx):
    parent = run_question(QUESTION, ctx, preset_options("full"))
    step = step_of(parent, "grade_documents")
    child = rerun_from(parent, step, ctx, preset_options("full", top_k=8))
    assert child.id != parent.id and child.thread_id == parent.thread_id
    assert (child.parent_run_id, child.from_node) == (parent.id, "grade_documents")
    assert child.reused_steps == step - 1
    assert child.options.top_k == 8 and parent.options.top_k == 6
    # the reused steps are the parent's, not executed again (same start times); the rest ran after the parent
    assert _same_steps(child.events[:step - 1], parent.events[:step - 1])
    assert child.events[step - 1].node == "grade_documents"
    assert child.events[step - 1].started_at > parent.events[-1].started_at
    assert [e.step for e in child.events] == list(range(1, len(child.events) + 1))
    assert child.answer and child.stop_reason

    # a re-run from a step the child reused forks from the parent's checkpoint
    grandchild = rerun_from(child, 2, ctx)
    assert grandchild.parent_run_id == child.id and grandchild.from_node == child.events[1].node
    assert _same_steps(grandchild.events[:1], parent.events[:1])

    # a changed retrieval mode reaches the re-run retrieve, over route_question's choice
    first = step_of(parent, "retrieve")
    assert isinstance(parent.events[first - 1].detail, RetrieveDetail)
    mode = "dense" if parent.events[first - 1].detail.mode != "dense" else "hybrid"
    switched = rerun_from(parent, first, ctx, preset_options("full", retrieval=mode))
    assert isinstance(switched.events[first - 1].detail, RetrieveDetail)
    assert switched.events[first - 1].detail.mode == mode

    with pytest.raises(ValueError, match="steps 1 to"):
        rerun_from(parent, len(parent.events) + 1, ctx)
    with pytest.raises(ValueError, match="did not run web_search"):
        step_of(parent, "web_search")
    with pytest.raises(ValueError, match="no checkpoints"):
        rerun_from(parent.model_copy(update={"thread_id": ""}), 1, ctx)


def test_turns_of_a_conversation_share_one_thread_and_start_clean(ctx):
    alone = run_question("What is Self-RAG?", ctx, preset_options("full"))
    first = run_question(QUESTION, ctx, preset_options("full"), thread_id="conversation-1")
    second = run_question("What is Self-RAG?", ctx, preset_options("full"), thread_id="conversation-1")
    assert first.thread_id == second.thread_id == "conversation-1"
    # nothing of the first turn leaks into the second: its steps, counters and evidence are its own
    assert second.path == alone.path and second.answer == alone.answer
    assert [e.step for e in second.events] == list(range(1, len(second.events) + 1))
    latest = build_graph(ctx.checkpointer).get_state({"configurable": {"thread_id": "conversation-1"}})
    assert latest.values["final_answer"] == second.answer and latest.values["events"] == second.events
    # each turn can be re-run from a step, in the conversation's thread
    child = rerun_from(first, step_of(first, "generate"), ctx)
    assert child.thread_id == "conversation-1" and _same_steps(child.events[:child.reused_steps],
                                                                 first.events[:child.reused_steps])


def test_a_rerun_on_the_llm_engine_makes_no_model_call_for_the_reused_steps(fake, papers_kb, tmp_path):
    fake.script = default_script
    ctx = make_context(llm_settings(fake, tmp_path / "data"), papers_kb)
    parent = run_question(QUESTION, ctx, preset_options("full"))
    assert parent.engine == "openai" and parent.llm_calls > 0 and not parent.error, parent.stop_reason
    before = len(fake.kinds())
    step = step_of(parent, "generate")
    child = rerun_from(parent, step, ctx)
    made = fake.kinds()[before:]
    assert not child.error, child.stop_reason
    # routing, decomposition and grading ran before the fork: none of their calls is made again
    assert made and not {"RouteQuery", "Decomposition", "RelevanceGrade"} & set(made), made
    assert "stream" in made  # generate ran again
    assert child.llm_calls == len(made)  # every call the child made is its own, none for the reused steps
    assert sum(e.llm_calls for e in child.events[:step - 1]) == 0
    assert Counter(child.path[step - 1:]) == Counter(parent.path[step - 1:])


def test_cli_rerun_saves_the_child_with_its_parent(cli, tmp_path):
    data = tmp_path / "data"
    assert cli("ingest", *sorted(MARKDOWN.glob("*.md")), "--data-dir", data).returncode == 0
    asked = cli("ask", "How do I add data to a collection?", "--json", "--data-dir", data)
    assert asked.returncode == 0, asked.stderr
    parent = json.loads(asked.stdout)
    out = cli("runs", "rerun", parent["run_id"], "--from", "grade_documents", "--top-k", "8", "--json",
              "--data-dir", data)
    assert out.returncode == 0, out.stderr
    child = json.loads(out.stdout)
    assert child["parent_run_id"] == parent["run_id"] and child["from_node"] == "grade_documents"
    assert child["run_id"] != parent["run_id"] and child["answer"] and child["path"][-1] == parent["path"][-1]
    assert child["path"][:child["reused_steps"]] == parent["path"][:child["reused_steps"]]
    saved = RunStore(data / "runs.sqlite").get(child["run_id"])
    assert saved is not None and saved.parent_run_id == parent["run_id"] and saved.options.top_k == 8

    listed = cli("runs", "list", "--data-dir", data)
    line = next(x for x in listed.stdout.splitlines() if x.startswith(child["run_id"]))
    assert f"re-run of {parent['run_id']} from grade_documents" in line
    rows = json.loads(cli("runs", "list", "--json", "--data-dir", data).stdout)
    assert {r["id"]: r["parent_run_id"] for r in rows} == {parent["run_id"]: None,
                                                           child["run_id"]: parent["run_id"]}

    text = cli("runs", "rerun", parent["run_id"], "--from", "generate", "--preset", "naive",
               "--data-dir", data)
    assert text.returncode == 0 and "steps 1 to" in text.stderr and "generate" in text.stderr

    for args, says in ((("no-such-run", "--from", "retrieve"), "no run with id 'no-such-run'"),
                       ((parent["run_id"], "--from", "nowhere"), "unknown node 'nowhere'"),
                       ((parent["run_id"], "--from", "web_search"), "did not run web_search")):
        bad = cli("runs", "rerun", *args, "--data-dir", data)
        assert bad.returncode == 2 and bad.stdout == ""
        assert bad.stderr.count("\n") == 1 and says in bad.stderr, bad.stderr


def test_the_checkpointer_is_opened_once_per_database(tmp_path):
    a = Settings.from_env({}, data_dir=tmp_path / "a")
    assert open_checkpointer(a) is open_checkpointer(Settings.from_env({}, data_dir=tmp_path / "a"))
    assert open_checkpointer(a) is not open_checkpointer(Settings.from_env({}, data_dir=tmp_path / "b"))
    with pytest.raises(OSError, match="cannot open the checkpoints") as caught:
        open_checkpointer(Settings.from_env({"RAG_DATABASE_URL": "postgresql://u:s3cret@127.0.0.1:1/x"},
                                            data_dir=tmp_path / "c"))
    assert "s3cret" not in str(caught.value)


def test_bench_checkpoints_measures_time_and_bytes_per_run():
    cost = run_checkpoint_cost(questions=2, repeats=1, preset="full")
    assert cost.runs == 2 and cost.steps >= 3
    assert cost.checkpoints == cost.steps + 2  # the input, START's step, one per node
    assert cost.bytes_per_run > cost.bytes_per_checkpoint > 0
    assert cost.run_ms_with > 0 and cost.run_ms_without > 0 and cost.saver_ms > 0
    assert "checkpoints per run" in format_checkpoint_cost(cost)
    with pytest.raises(ValueError, match="unknown preset"):
        run_checkpoint_cost(preset="fastest")
