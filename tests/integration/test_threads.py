"""Threads (issue 11): conversations in the run history, and history-aware questions.

contextualize_question on real papers in a real Chroma, offline and on the fake LLM server.
"""

from __future__ import annotations

import json

import pytest

from rag.config import Options, preset_options
from rag.engines.prompts import MAX_HISTORY_TURNS
from rag.graph import routing
from rag.history import RunOwnedElsewhere, RunStore, ThreadNotFound, thread_title
from rag.models import ContextualizeDetail, RetrieveDetail, Turn
from rag.run import make_context, run_question
from rag.trace.geometry import BOX_H, BOX_W, MARKER_R, MARKERS, START
from rag.trace.views import VIEWS, detail_lines
from tests.fakes.servers import Reply, default_script, user_text
from tests.run_fixtures import llm_settings

SELF_RAG_PDF = "2310.11511v1_self_rag.pdf"


@pytest.fixture(scope="module")
def ctx(papers_kb):
    return make_context(papers_kb.settings, papers_kb)


# --------------------------------------------------------------------------- the store


def test_a_thread_keeps_its_turns_and_sibling_runs_across_a_restart(tmp_path, runs):
    path = tmp_path / "runs.sqlite"
    store = RunStore(path)
    t = store.create_thread("alice", knowledge_base="papers")
    assert t.title == "" and t.turns == 0 and t.session_id == "alice"
    assert store.add_turn(t.id, "alice", runs["answered"]) == 1
    assert store.add_turn(t.id, "alice", runs["rewritten"]) == 2
    # a regenerated answer is a sibling run of the same turn; both stay
    assert store.add_turn(t.id, "alice", runs["naive"], turn=2) == 2
    with pytest.raises(ValueError):
        store.add_turn(t.id, "alice", runs["abstained"], turn=5)

    again = RunStore(path)  # a new process opening the same file
    thread = again.get_thread(t.id)
    assert thread is not None
    assert thread.summary.title == thread_title(runs["answered"].question)
    assert thread.summary.turns == 2 and thread.summary.updated_at >= thread.summary.created_at
    assert [x.turn for x in thread.turns] == [1, 2]
    assert [r.id for r in thread.turns[1].runs] == [runs["rewritten"].id, runs["naive"].id]
    assert thread.turns[1].run.id == runs["naive"].id  # the latest sibling is current
    history = again.thread_history(t.id)
    assert [h.question for h in history] == [runs["answered"].question, runs["naive"].question]
    assert history[0].answer == runs["answered"].answer
    assert again.thread_history("no-such-thread") == []
    assert again.get_thread("no-such-thread") is None
    # the runs are in the run history too
    assert again.owner(runs["naive"].id) == "alice"


def test_sessions_list_their_own_threads_newest_first_and_cannot_change_others(tmp_path, runs):
    store = RunStore(tmp_path / "runs.sqlite")
    a1 = store.create_thread("alice", title="first")
    b1 = store.create_thread("bob", title="bob's")
    a2 = store.create_thread("alice", title="second")
    store.add_turn(a1.id, "alice", runs["answered"])  # a1 is now the most recently updated
    assert [t.id for t in store.list_threads("alice")] == [a1.id, a2.id]
    assert [t.id for t in store.list_threads("bob")] == [b1.id]
    assert {t.id for t in store.list_threads(None)} == {a1.id, a2.id, b1.id}  # all sessions
    # a title given at creation is kept by the first turn
    assert store.get_thread(a1.id).summary.title == "first"

    # bob may read alice's thread, never rename, extend or delete it
    assert store.get_thread(a1.id).turns[0].run.id == runs["answered"].id
    with pytest.raises(RunOwnedElsewhere):
        store.rename_thread(a1.id, "bob", "mine now")
    with pytest.raises(RunOwnedElsewhere):
        store.delete_thread(a1.id, "bob")
    with pytest.raises(RunOwnedElsewhere):
        store.add_turn(a1.id, "bob", runs["naive"])
    with pytest.raises(RunOwnedElsewhere):
        store.create_thread("bob", thread_id=a1.id)
    with pytest.raises(ThreadNotFound):
        store.add_turn("no-such-thread", "alice", runs["naive"])
    assert store.get_thread(a1.id).summary.title == "first"

    assert store.rename_thread(a1.id, "alice", "  Self-RAG   questions ") is True
    assert store.get_thread(a1.id).summary.title == "Self-RAG questions"
    with pytest.raises(ValueError):
        store.rename_thread(a1.id, "alice", "  ")
    assert store.rename_thread("no-such-thread", "alice", "x") is False

    assert store.delete_thread(a1.id, "alice") is True
    assert store.get_thread(a1.id) is None and store.delete_thread(a1.id, "alice") is False
    assert store.get(runs["answered"].id) is not None  # its runs stay in the run history
    with pytest.raises(ValueError):
        store.create_thread("")


def test_a_long_first_question_is_cut_at_a_word_for_the_title():
    title = thread_title("How does " + "retrieval " * 20 + "help?")
    assert len(title) <= 80 and title.endswith("…") and "  " not in title
    assert not title[:-1].endswith(" ") and title[:-1].split()[-1] == "retrieval"
    assert thread_title("  What is\nSelf-RAG? ") == "What is Self-RAG?"


# --------------------------------------------------------------------------- the node


def test_start_picks_contextualize_only_with_history_and_the_switch_on():
    turns = [Turn(question="What is Self-RAG?", answer="…")]
    assert routing.decide_start(Options(), turns).to == "contextualize_question"
    # issue 13: route_question follows contextualize_question, or opens the run without history
    assert routing.decide_start(Options(use_history=False), turns).to == "route_question"
    assert routing.decide_start(Options(), []).to == "route_question"
    assert routing.decide_start(Options(routing=False), []).to == "decompose_query"
    assert routing.decide_start(Options(decomposition=False, routing=False)).to == "retrieve"
    assert routing.decide_after_contextualize({}, Options()).to == "route_question"
    plain = Options(decomposition=False, routing=False)
    assert routing.decide_after_contextualize({}, plain).to == "retrieve"
    for key in ("naive", "crag", "self-rag", "full"):
        assert preset_options(key).use_history
    assert "contextualize_question" in routing.TARGETS


def test_the_flow_places_contextualize_apart_from_every_other_node():
    x, y = VIEWS["contextualize_question"].position
    for node, v in VIEWS.items():
        if node != "contextualize_question":
            ox, oy = v.position
            assert abs(ox - x) >= 1.2 or abs(oy - y) >= 0.5, node
    # its box stays clear of the START marker, wherever the figure puts that
    sx, sy = MARKERS[START]
    assert abs(x - sx) > BOX_W / 2 + MARKER_R or abs(y - sy) > BOX_H / 2 + MARKER_R


def test_offline_follow_up_carries_the_topic_and_everything_downstream_uses_it(ctx):
    first = run_question("What is Self-RAG?", ctx, preset_options("full"))
    assert first.path[:2] == ["route_question", "decompose_query"] and first.standalone_question == ""
    history = [Turn(question=first.question, answer=first.answer)]
    run = run_question("How is it trained?", ctx, preset_options("full"), history=history)
    assert run.question == "How is it trained?"
    # issue 13: the router comes after contextualize_question and routes the standalone question
    assert run.path[:3] == ["contextualize_question", "route_question", "decompose_query"]
    assert run.events[1].detail.datasource == "kb"
    detail = run.events[0].detail
    assert isinstance(detail, ContextualizeDetail)
    assert detail.changed and detail.carried == ["Self-RAG"] and detail.from_turn == 1
    assert run.standalone_question == detail.standalone_question == "How is Self-RAG trained?"
    assert "turn 1" in detail.reasoning and "“it”" in detail.reasoning
    assert any("understood as: How is Self-RAG trained?" in line for line in detail_lines(run.events[0]))
    queries = [e.detail.query for e in run.events if isinstance(e.detail, RetrieveDetail)]
    assert queries and "Self-RAG" in queries[0]
    assert run.citations and run.citations[0].source.endswith(SELF_RAG_PDF)
    assert run.cli_json()["standalone_question"] == "How is Self-RAG trained?"

    # switched off: the follow-up is retrieved literally
    off = run_question("How is it trained?", ctx, preset_options("full", use_history=False),
                       history=history)
    assert "contextualize_question" not in off.path and off.standalone_question == ""
    assert [e.detail.query for e in off.events if isinstance(e.detail, RetrieveDetail)][0] == (
        "How is it trained?")


def test_offline_leaves_a_question_with_its_own_topic_alone(ctx):
    history = [Turn(question="What is Self-RAG?", answer="…")]
    run = run_question("What does the Lewis RAG model retrieve from Wikipedia?", ctx,
                       preset_options("naive"), history=history)
    detail = run.events[0].detail
    assert isinstance(detail, ContextualizeDetail) and not detail.changed and not detail.carried
    assert "Stands alone" in detail.reasoning
    assert run.standalone_question == run.question
    # a follow-up with no topic of its own (ellipsis) gets the earlier topic appended
    ellipsis = ctx.engine.contextualize("And the datasets?", history)
    assert ellipsis.question == "What about the datasets of Self-RAG?" and "ellipsis" in ellipsis.reasoning


def test_llm_contextualizes_with_fenced_turns_and_the_generator_sees_them(fake, papers_kb, tmp_path):
    ctx = make_context(llm_settings(fake, tmp_path / "llm"), papers_kb)
    history = [Turn(question=f"Question {i} about <b>Self-RAG</b>?", answer=f"Answer {i} [1].")
               for i in range(1, MAX_HISTORY_TURNS + 2)]
    run = run_question("How is it trained?", ctx, preset_options("full"), history=history)
    assert run.engine == "openai" and run.path[0] == "contextualize_question", run.stop_reason
    assert fake.kinds()[0] == "StandaloneQuestion"
    ctx_body = next(r for r in fake.requests
                    if "StandaloneQuestion" in json.dumps(r.get("response_format", {})))
    prompt = "\n".join(m["content"] for m in ctx_body["messages"])
    assert "<conversation>" in prompt and "‹b›Self-RAG‹/b›" in prompt and "<b>" not in prompt
    assert "Question 1 " not in prompt and f"Question {MAX_HISTORY_TURNS + 1} " in prompt  # last turns only
    expected = "How is it trained (context: Question 2 about ‹b›Self-RAG‹/b›)?"
    assert run.standalone_question == expected
    assert isinstance(run.events[0].detail, ContextualizeDetail) and run.events[0].llm_calls == 1
    # the generator got the standalone question and the fenced conversation
    stream = next(r for r in fake.requests if r.get("stream"))
    gen_prompt = "\n".join(m["content"] for m in stream["messages"])
    assert "<conversation>" in gen_prompt and f"<question>{expected}</question>" in gen_prompt
    # issue 13: route_question comes after contextualize_question and routes the standalone question
    assert run.path[:2] == ["contextualize_question", "route_question"]
    route_body = next(r for r in fake.requests if "RouteQuery" in json.dumps(r.get("response_format", {})))
    assert f"<question>{expected}</question>" in user_text(route_body)

    # an unusable reply falls back to the offline carry-over, and says so
    fake.script = lambda kind, body: (Reply(status=500) if kind == "StandaloneQuestion"
                                      else default_script(kind, body))
    fell = run_question("How is it trained?", ctx, preset_options("naive"),
                        history=[Turn(question="What is Self-RAG?")])
    assert fell.standalone_question == "How is Self-RAG trained?"
    fallbacks = fell.events[0].detail.fallbacks
    assert fallbacks and "contextualizer fell back" in fallbacks[0]


# --------------------------------------------------------------------------- the CLI


def test_cli_ask_continues_a_thread_and_threads_list_show_delete(papers_kb, cli):
    data = str(papers_kb.settings.data_dir)
    first = cli("ask", "What is Self-RAG?", "--thread", "t-cli", "--json", "--data-dir", data,
                "--collection", papers_kb.name)
    assert first.returncode == 0, first.stderr
    one = json.loads(first.stdout)
    assert one["thread_id"] == "t-cli" and one["standalone_question"] == "What is Self-RAG?"
    second = cli("ask", "How is it trained?", "--thread", "t-cli", "--json", "--data-dir", data,
                 "--collection", papers_kb.name)
    two = json.loads(second.stdout)
    assert two["standalone_question"] == "How is Self-RAG trained?"
    assert two["path"][0] == "contextualize_question"
    text = cli("ask", "Which datasets was it evaluated on?", "--thread", "t-cli", "--data-dir", data,
               "--collection", papers_kb.name)
    assert text.returncode == 0 and "Understood as: Which datasets was Self-RAG evaluated on?" in text.stdout
    assert "turn 3" in text.stderr

    listed = json.loads(cli("threads", "list", "--json", "--data-dir", data).stdout)
    row = next(r for r in listed if r["id"] == "t-cli")
    assert row["turns"] == 3 and row["title"] == "What is Self-RAG?" and row["session_id"] == "cli"
    shown = json.loads(cli("threads", "show", "t-cli", "--json", "--data-dir", data).stdout)
    assert [t["turn"] for t in shown["turns"]] == [1, 2, 3]
    assert shown["turns"][1]["runs"][0]["run_id"] == two["run_id"]
    assert shown["turns"][1]["runs"][0]["standalone_question"] == "How is Self-RAG trained?"
    plain = cli("threads", "show", "t-cli", "--data-dir", data).stdout
    assert "understood as: How is Self-RAG trained?" in plain

    # another session's thread: readable in --all, never continued or deleted from here
    store = RunStore(papers_kb.settings.data_dir / "runs.sqlite")
    store.create_thread("browser-1", title="theirs", thread_id="t-browser")
    assert any(r["id"] == "t-browser" for r in json.loads(
        cli("threads", "list", "--all", "--json", "--data-dir", data).stdout))
    assert not any(r["id"] == "t-browser" for r in listed)
    refused = cli("ask", "How is it trained?", "--thread", "t-browser", "--data-dir", data,
                  "--collection", papers_kb.name)
    assert refused.returncode == 2 and "another session" in refused.stderr
    assert cli("threads", "delete", "t-browser", "--data-dir", data).returncode == 2

    assert cli("threads", "delete", "t-cli", "--data-dir", data).returncode == 0
    gone = cli("threads", "show", "t-cli", "--data-dir", data)
    assert gone.returncode == 2 and "no thread" in gone.stderr


# --------------------------------------------------------------------------- rag eval on conversations


def test_eval_asks_a_conversation_in_one_thread_and_splits_first_turns_from_follow_ups(ctx, tmp_path):
    from rag.eval import parse_items, run_eval

    line = json.dumps({"id": "c01", "turns": [
        {"question": "What is Self-RAG?", "source": SELF_RAG_PDF},
        {"question": "How is it trained?", "source": SELF_RAG_PDF},
        {"question": "Which datasets was it evaluated on?", "source": SELF_RAG_PDF}]})
    items = parse_items([line, json.dumps({"id": "q", "question": "What is RAG?"})])
    assert [(i.id, i.conversation, i.turn) for i in items] == [
        ("c01.1", "c01", 1), ("c01.2", "c01", 2), ("c01.3", "c01", 3), ("q", None, None)]
    with pytest.raises(ValueError, match="turn 2"):
        parse_items([json.dumps({"id": "c", "turns": [{"question": "a?"}, {"source": "x"}]})])

    store = RunStore(tmp_path / "runs.sqlite")
    result = run_eval(items[:3], ctx, ["full"], store=store, session_id="eval")
    rows = result.items
    assert [r["turn"] for r in rows] == [1, 2, 3]
    assert [r["standalone_question"] for r in rows] == [
        "What is Self-RAG?", "How is Self-RAG trained?", "Which datasets was Self-RAG evaluated on?"]
    full = result.presets["full"]
    assert full["first_turns"]["questions"] == 1 and full["follow_ups"]["questions"] == 2
    assert full["follow_ups"]["source_hit"] == 1.0, rows
    [thread] = store.list_threads("eval")
    assert thread.turns == 3 and thread.title == "What is Self-RAG?"

    off = run_eval(items[:3], ctx, ["full"], use_history=False)
    assert [r["standalone_question"] for r in off.items][1] == "How is it trained?"
    plain = run_eval(items[3:], ctx, ["naive"])
    assert "follow_ups" not in plain.presets["naive"] and plain.items[0]["turn"] is None


def test_a_question_that_names_its_own_topic_keeps_its_inner_it(papers_kb):
    """'it' after a name and a new clause refers inside the question: nothing is carried over."""
    from rag.engines.local import LocalEngine
    from rag.models import Turn
    from rag.store.bm25 import lexical_stats

    engine = LocalEngine(lexical_stats(papers_kb))
    earlier = [Turn(question="What is the boiling point of tungsten?")]
    q = "What is the retrieval component of RAG and how is it trained?"
    result = engine.contextualize(q, earlier)
    assert result.question == q, result
    follow_up = engine.contextualize("How is it trained?", [Turn(question=q)])
    assert "RAG" in follow_up.question and "turn 1" in follow_up.reasoning
