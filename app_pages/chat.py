"""Chat page: ask questions of the knowledge base and watch the graph decide, live."""

import uuid

import streamlit as st
from pydantic import ValidationError

from app_pages import _conversation, _links, _login, _pipeline, _samples, _session, _ui
from app_pages._safe import safe
from rag.config import Options, preset_label
from rag.history import ThreadSummary
from rag.models import Run
from rag.trace import formats

DEFAULT_PRESET = "full"

# The chosen options live under "chat_options" (not a widget key), so they survive visits to
# other pages, where Streamlit drops the state of widgets it did not render.
# A link's ?preset= chooses the pipeline the first time the page is drawn in a session.
if "chat_options" not in st.session_state:
    st.session_state["chat_options"] = _pipeline.default_pipeline(_links.preset_from_link() or DEFAULT_PRESET)
chosen: dict = st.session_state["chat_options"]
# Questions that could not be run (not in any thread), shown under the current conversation.
messages: list[dict] = st.session_state.setdefault("chat_messages", [])
# The current conversation: a thread of the run history, or None for a new one.
thread_id: str | None = st.session_state.get(_links.THREAD)
kb_name = _session.current_kb_name()


def pick_thread(tid: str | None, kb: str = "") -> None:
    """Make ``tid`` the current conversation (None: a new one), and select its knowledge base ``kb``."""
    st.session_state[_links.THREAD] = tid
    messages.clear()
    if kb and kb != _session.current_kb_name():
        _session.select_kb(kb)


def load_threads(all_sessions: bool) -> list:
    """Conversations most recently updated first: this user's, or everyone's.

    Returns [] when the history cannot be read (and says so in the sidebar).
    """
    try:
        return _session.store().list_threads(None if all_sessions else _session.session_id())
    except Exception as exc:  # an unreadable history must not take the chat down
        st.caption(f"Saved conversations are unavailable: {safe(exc)}")
        return []


def linked(tid: str) -> ThreadSummary | None:
    """The thread ``tid`` (opened by a link, or not listed) when this user owns it or may read everyone's."""
    try:
        found = _session.store().get_thread(tid)
    except Exception:
        return None
    if found is None:
        return None
    own = found.summary.session_id == _session.session_id()
    return found.summary if own or _login.sees_everyone() else None


with st.sidebar:
    st.markdown("**Conversations**")
    st.button("New conversation", key="chat_new", icon=":material/add_comment:",
              on_click=pick_thread, args=(None,), disabled=thread_id is None)
    # Everyone's conversations: without login the one local user, with login the admins only.
    all_sessions = _login.sees_everyone() and st.toggle(
        _login.all_label(), key="chat_all_threads",
        help="List everyone's conversations; those of others open read-only.")
    every_kb = st.toggle("Every knowledge base", key="chat_all_kbs",
                         help="List the conversations of every knowledge base, not only the selected "
                              "one's; opening one selects its knowledge base.")
    threads = load_threads(all_sessions)
    mine = _session.session_id()
    for t in threads:
        if not (every_kb or t.knowledge_base in (kb_name, "")):
            continue
        other = "" if t.session_id == mine else " · read-only"
        where = f" · {safe(t.knowledge_base)}" if every_kb and t.knowledge_base else ""
        st.button(f"{safe(t.title) or 'Untitled'} ({t.turns}){where}{other}", key=f"chat_t_{t.id}",
                  type="primary" if t.id == thread_id else "tertiary",
                  on_click=pick_thread, args=(t.id, t.knowledge_base))
    current = next((t for t in threads if t.id == thread_id), None)
    if thread_id and current is None:
        current = linked(thread_id)
    if current is not None and current.knowledge_base not in (kb_name, ""):
        current = None  # another knowledge base was selected: its conversations are not this one's
    if thread_id and current is None:  # deleted elsewhere, not this user's, or of another knowledge base
        pick_thread(None)
        thread_id = None
    read_only = current is not None and current.session_id != mine
    if current is not None and not read_only:
        with st.expander("Rename or delete this conversation"):
            title = st.text_input("Title", value=current.title, key=f"chat_title_{current.id}",
                                  max_chars=80)
            c1, c2 = st.columns(2)
            if c1.button("Rename", key="chat_rename", disabled=not title.strip()):
                _session.store().rename_thread(current.id, _session.session_id(), title)
                st.rerun()
            if c2.button("Delete", key="chat_delete", type="primary"):
                _session.store().delete_thread(current.id, _session.session_id(),
                                               checkpoints=_session.checkpoints())
                pick_thread(None)
                st.rerun()
    st.divider()
    _pipeline.pipeline_picker(chosen, "chat_w_")
    use_history = st.toggle("Use chat history", key="chat_use_history", value=True,
                            help="Rewrite a follow-up ('How is it trained?') into a standalone "
                                 "question with the conversation's earlier turns "
                                 "(contextualize_question).")
    _links.to_link(thread_id, chosen["preset"])  # a refresh or a shared link reopens both

try:
    options = Options(**{k: v for k, v in chosen.items() if k != "preset"},
                      use_history=use_history)
except ValidationError as exc:
    st.error("Invalid options: " + "; ".join(safe(e["msg"]) for e in exc.errors()))
    st.stop()

st.title("Chat")
with _session.stop_on_store_error(kb_name):
    kb = _session.knowledge_base(kb_name)
    n_chunks = kb.count()

_samples.notice()
if warning := st.session_state.pop("chat_warning", None):
    st.warning(safe(warning))
just_asked: str | None = st.session_state.pop("chat_just_asked", None)  # shown with its status once


if n_chunks == 0:
    st.info(f"The knowledge base '{safe(kb_name)}' is empty. Upload documents on the Documents page, or "
            f"load {_samples.ABOUT}.")
    _samples.load_button("chat_load_samples")
else:
    st.caption(f"Asking '{safe(kb_name)}' ({formats.plural(n_chunks, 'chunk')}, embeddings "
               f"{safe(kb.embedding)}) with the "
               f"{preset_label(chosen['preset'])} pipeline.")


def show_run(run: Run, *, turn: int | None = None, rating: int | None = None) -> None:
    """Show one answer of the conversation.

    How the question was understood, the answer with a control per ``[n]`` marker, why the run stopped,
    its sources, its collapsed step log, a way into its trace, feedback, and Regenerate (for ``turn`` of
    this session's thread).
    """
    if run.id == just_asked:  # as it was while it ran: its steps in a status box under how it ended
        label, state = _ui.stop_status(run)
        with st.status(label, state=state, expanded=False):
            for e in run.events:
                st.markdown(_ui.event_line(e))
    if run.standalone_question and run.standalone_question != run.question:
        st.caption(f"Understood as: {safe(run.standalone_question)}")
    _ui.answer(run)
    _conversation.markers(run)
    _ui.stop_caption(run)
    if run.citations:
        st.markdown("**Sources**")
        _ui.citations(run.citations, key=f"chat_{run.id}", knowledge_base=run.knowledge_base)
    with st.expander(f"Steps ({len(run.events)})", expanded=False):
        for e in run.events:
            st.markdown(_ui.event_line(e))
    if st.button("Open trace", key=f"chat_trace_{run.id}", icon=":material/account_tree:"):
        _session.open_trace(run.id)
    _conversation.actions(run, thread_id=thread_id, turn=turn, rating=rating, read_only=read_only)


thread = None
if thread_id:
    try:
        # its turns from the conversation's checkpoints (those from before them: from the run history)
        thread = _session.store().get_thread(thread_id, checkpoints=_session.checkpoints())
    except Exception as exc:
        st.warning(f"The conversation could not be read: {safe(exc)}")
regenerating = st.session_state.pop(_conversation.REGENERATE, None)
rated = _conversation.ratings(thread)
for turn in thread.turns if thread else []:
    with st.chat_message("user"):
        st.markdown(safe(turn.run.question, multiline=True))
    with st.chat_message("assistant"):
        again = thread is not None and regenerating == (thread.id, turn.turn) and not read_only
        n = len(turn.runs) + int(again)
        for i, sibling in enumerate(turn.runs, 1):  # every answer of the turn stays visible
            _conversation.sibling_caption(sibling, i, n)
            show_run(sibling, turn=turn.turn, rating=rated.get(sibling.id))
        if again and thread and (new_run := _conversation.regenerate(thread, turn.turn, options, kb)):
            _conversation.sibling_caption(new_run, n, n)
            show_run(new_run, turn=turn.turn)

for msg in [m for m in messages if not m.get("in_thread")]:
    with st.chat_message(msg["role"]):
        run = _session.runs().get(msg.get("run_id") or "") if msg["role"] == "assistant" else None
        if run is not None:
            show_run(run)
        else:
            st.markdown(safe(msg["content"], multiline=True))

if read_only:
    st.caption("Another session's conversation: read-only. Start a new conversation to ask.")
if question := st.chat_input("Ask about your documents", disabled=read_only):
    messages.append({"role": "user", "content": question, "run_id": None})
    with st.chat_message("user"):
        st.markdown(safe(question, multiline=True))
    with st.chat_message("assistant"):
        # a new conversation's id is chosen now, so its first turn's checkpoints are in its thread too
        asked_in = thread_id or uuid.uuid4().hex
        run = _conversation.ask(question, kb, options, history=thread.history() if thread else [],
                                thread_id=asked_in)
    if run is None:
        messages.append({"role": "assistant", "content": "Not run.", "run_id": None})
    else:
        problem = _session.keep(run)  # in this session and in the run history
        saved = _conversation.save_turn(run, asked_in, kb_name)
        if saved:  # now a turn of the thread, which shows it (and its count in the sidebar) after a rerun
            messages[-1]["in_thread"] = True
            messages.append({"role": "assistant", "content": run.answer, "run_id": run.id, "in_thread": True})
            st.session_state[_links.THREAD] = saved
            if thread is not None:  # a later turn keeps its status box, as it had while it ran
                st.session_state["chat_just_asked"] = run.id
            if problem:
                st.session_state["chat_warning"] = problem
            st.rerun()
        messages.append({"role": "assistant", "content": run.answer, "run_id": run.id})
        with st.chat_message("assistant"):
            show_run(run)
        if problem:
            st.warning(safe(problem))
