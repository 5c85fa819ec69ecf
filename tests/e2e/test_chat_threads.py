"""The Chat page as a conversation (issue 11), through AppTest.

Saved threads in the sidebar, a follow-up understood with the thread's history, each past answer
with its collapsed step log.
"""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from rag.history import RunStore, thread_turns
from rag.history.checkpoints import CHECKPOINTS_NAME, sqlite_saver
from tests.conftest import ROOT, SELF_RAG
from tests.e2e.conftest import plain

APP = str(ROOT / "app.py")



def open_app(session_id: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["session_id"] = session_id
    at.run()
    assert not at.exception, at.exception
    return at


def test_a_conversation_is_a_saved_thread_with_history_aware_follow_ups(data_dir):
    from rag.config import Settings
    from rag.ingest.pipeline import ingest_files
    from rag.store.chroma import open_knowledge_base

    kb = open_knowledge_base(Settings.from_env({}, data_dir=data_dir))
    assert [r.status for r in ingest_files(kb, [SELF_RAG])] == ["ingested"]

    at = open_app("alice")
    at.chat_input[0].set_value("What is Self-RAG?").run()
    assert not at.exception, at.exception
    at.chat_input[0].set_value("How is it trained?").run()
    assert not at.exception, at.exception

    store = RunStore(data_dir / "runs.sqlite")
    [summary] = store.list_threads("alice")
    assert summary.title == "What is Self-RAG?" and summary.turns == 2
    thread = store.get_thread(summary.id)
    assert thread.turns[1].run.standalone_question == "How is Self-RAG trained?"
    # both turns, the first too, are in the conversation's checkpoints (where the page reads them from)
    saver = sqlite_saver(data_dir / CHECKPOINTS_NAME)
    assert [(t.turn, t.run_id) for t in thread_turns(saver, summary.id)] == [
        (t.turn, t.run.id) for t in thread.turns]
    captions = [plain(c.value) for c in at.caption]
    assert "Understood as: How is Self-RAG trained?" in captions, captions
    # every past answer keeps its collapsed step log
    steps = [e for e in at.expander if plain(e.label).startswith("Steps (")]
    assert len(steps) == 2, [e.label for e in at.expander]
    assert at.button(key=f"chat_t_{summary.id}").proto.type == "primary"
    # the sidebar counts the turn just asked (it lagged one behind)
    assert plain(at.button(key=f"chat_t_{summary.id}").label) == "What is Self-RAG? (2)"

    # a new session (or a refresh with a new session) does not see alice's thread
    bob = open_app("bob")
    assert not [b for b in bob.button if b.key and b.key.startswith("chat_t_")]

    # alice comes back (same session id): the thread is listed and opens with both turns
    again = open_app("alice")
    again.button(key=f"chat_t_{summary.id}").click().run()
    assert not again.exception, again.exception
    assert "Understood as: How is Self-RAG trained?" in [plain(c.value) for c in again.caption]
    again.text_input(key=f"chat_title_{summary.id}").set_value("Self-RAG training").run()
    again.button(key="chat_rename").click().run()
    assert store.get_thread(summary.id).summary.title == "Self-RAG training"
    again.button(key="chat_delete").click().run()
    assert not again.exception, again.exception
    assert store.list_threads("alice") == []
    assert thread_turns(saver, summary.id) == []  # its checkpoints went with it

    # chat history off: the follow-up is asked literally
    again.toggle(key="chat_use_history").set_value(False).run()
    again.chat_input[0].set_value("What is Self-RAG?").run()
    again.chat_input[0].set_value("How is it trained?").run()
    [t2] = store.list_threads("alice")
    last = store.get_thread(t2.id).turns[-1].run
    assert last.standalone_question == "" and "contextualize_question" not in last.path


def test_another_sessions_thread_is_listed_only_in_all_sessions_and_read_only(data_dir, runs):
    store = RunStore(data_dir / "runs.sqlite")
    t = store.create_thread("carol")
    store.add_turn(t.id, "carol", runs["answered"])
    at = open_app("dave")
    assert not [b for b in at.button if b.key == f"chat_t_{t.id}"]
    at.toggle(key="chat_all_threads").set_value(True).run()
    at.button(key=f"chat_t_{t.id}").click().run()
    assert not at.exception, at.exception
    assert "read-only" in plain(at.button(key=f"chat_t_{t.id}").label)
    assert at.chat_input[0].proto.disabled
    assert not [b for b in at.button if b.key in ("chat_rename", "chat_delete")]
    assert any("read-only" in plain(c.value) for c in at.caption)


def popovers(node) -> list:
    """Every ``st.popover`` block under ``node`` (AppTest has no accessor for them)."""
    found = []
    for child in getattr(node, "children", {}).values():
        if getattr(child, "type", "") == "popover":
            found.append(child)
        found += popovers(child)
    return found


def test_markers_regenerate_and_feedback(data_dir):
    from rag.config import Settings, preset_of
    from rag.ingest.pipeline import ingest_files
    from rag.store.chroma import open_knowledge_base

    kb = open_knowledge_base(Settings.from_env({}, data_dir=data_dir))
    assert [r.status for r in ingest_files(kb, [SELF_RAG])] == ["ingested"]
    store = RunStore(data_dir / "runs.sqlite")

    at = open_app("erin")
    at.chat_input[0].set_value("What is Self-RAG?").run()
    assert not at.exception, at.exception
    [summary] = store.list_threads("erin")
    first = store.get_thread(summary.id).turns[0].run
    assert first.citations and "[1]" in first.answer

    # each [n] marker of the answer is a control holding that source's text
    boxes = popovers(at.main)
    labels = [plain(b.proto.popover.label) for b in boxes]
    assert labels and labels[0] == "[1]", labels
    assert f"[{max(int(x[1:-1]) for x in labels)}]" in first.answer
    inside = [t.value for b in boxes[:1] for t in b.text]
    assert inside == [first.citations[0].text], inside

    # thumbs up is saved with the run, and shown again on a fresh visit
    at.feedback(key=f"chat_fb_{first.id}").set_value(1).run()
    assert store.feedback([first.id]) == {first.id: 1}
    again = open_app("erin")
    again.button(key=f"chat_t_{summary.id}").click().run()
    assert again.feedback(key=f"chat_fb_{first.id}").value == 1

    # regenerate with another pipeline: a sibling of turn 1; both answers stay on the page
    again.selectbox(key="chat_w_preset").set_value("naive").run()
    again.button(key=f"chat_regen_{first.id}").click().run()
    assert not again.exception, again.exception
    turn = store.get_thread(summary.id).turns[0]
    assert [r.id for r in turn.runs][0] == first.id and len(turn.runs) == 2
    assert preset_of(turn.runs[1].options) == "naive" and preset_of(first.options) == "full"
    assert store.get_thread(summary.id).summary.turns == 1
    captions = [plain(c.value) for c in again.caption]
    assert "Answer 1 of 2 · Full" in captions and "Answer 2 of 2 · Naive RAG (regenerated)" in captions
    assert again.button(key=f"chat_trace_{first.id}") and again.button(key=f"chat_trace_{turn.runs[1].id}")
    steps = [e for e in again.expander if plain(e.label).startswith("Steps (")]
    assert len(steps) == 2

    # a follow-up continues from the turn's newest answer; another session cannot rate or regenerate
    other = open_app("frank")
    other.toggle(key="chat_all_threads").set_value(True).run()
    other.button(key=f"chat_t_{summary.id}").click().run()
    assert other.feedback(key=f"chat_fb_{first.id}").proto.disabled
    assert not [b for b in other.button if b.key and b.key.startswith("chat_regen_")]


def test_insights_show_feedback_per_pipeline(data_dir, runs):
    store = RunStore(data_dir / "runs.sqlite")
    for r in (runs["answered"], runs["naive"], runs["rewritten"]):
        store.save(r, "gina")
    at = open_app("gina")
    at.switch_page("app_pages/insights.py").run()
    assert not at.exception, at.exception
    assert any("has a thumbs up or down yet" in plain(c.value) for c in at.main.caption)
    store.set_feedback(runs["answered"].id, "gina", 1)
    store.set_feedback(runs["naive"].id, "gina", 0)
    at.run()
    assert not at.exception, at.exception
    table = at.dataframe[-1].value
    rows = {r["pipeline"]: (r["rated"], r["up"], r["down"]) for r in table.to_dict("records")}
    assert rows["Naive RAG"] == (1, 0, 1), rows
    # the share of thumbs up as a percentage; a pipeline with no rating shows a dash, never "None"
    share = {r["pipeline"]: r["up_rate"] for r in table.to_dict("records")}
    assert share["Naive RAG"] == "0 %" and sorted(share.values()) == ["0 %", "100 %", "—"], share
    assert sum(up for _, up, _ in rows.values()) == 1 and sum(n for n, _, _ in rows.values()) == 2
