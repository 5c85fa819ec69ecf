"""Chat page: ask questions of the knowledge base and watch the graph decide, live."""

import time

import streamlit as st
from pydantic import ValidationError

from app_pages import _conversation, _session, _ui
from app_pages._ui import safe
from rag.config import Options, preset_label
from rag.models import Run
from rag.run import make_context, run_live
from rag.samples import SAMPLE_KB, load_samples
from rag.store.chroma import StoreError

DEFAULT_PRESET = "full"

# The chosen options live under "chat_options" (not a widget key), so they survive visits to
# other pages, where Streamlit drops the state of widgets it did not render.
chosen: dict = st.session_state.setdefault("chat_options", _ui.default_pipeline(DEFAULT_PRESET))
# Questions that could not be run (not in any thread), shown under the current conversation.
messages: list[dict] = st.session_state.setdefault("chat_messages", [])
# The current conversation: a thread of the run history, or None for a new one.
thread_id: str | None = st.session_state.get("chat_thread")


def pick_thread(tid: str | None) -> None:
    """Make ``tid`` the current conversation (None: a new one)."""
    st.session_state["chat_thread"] = tid
    messages.clear()


def load_threads(all_sessions: bool) -> list:
    """Conversations most recently updated first: this session's, or every session's.

    Returns [] when the history cannot be read (and says so in the sidebar).
    """
    try:
        return _session.store().list_threads(None if all_sessions else _session.session_id())
    except Exception as exc:  # an unreadable history must not take the chat down
        st.caption(f"Saved conversations are unavailable: {safe(exc)}")
        return []


with st.sidebar:
    st.markdown("**Conversations**")
    st.button("New conversation", key="chat_new", icon=":material/add_comment:",
              on_click=pick_thread, args=(None,), disabled=thread_id is None)
    all_sessions = st.toggle("All sessions", key="chat_all_threads",
                             help="List every session's conversations; those of other sessions "
                                  "open read-only.")
    threads = load_threads(all_sessions)
    mine = _session.session_id()
    for t in threads:
        other = "" if t.session_id == mine else " · read-only"
        st.button(f"{safe(t.title) or 'Untitled'} ({t.turns}){other}", key=f"chat_t_{t.id}",
                  type="primary" if t.id == thread_id else "tertiary",
                  on_click=pick_thread, args=(t.id,))
    current = next((t for t in threads if t.id == thread_id), None)
    if thread_id and current is None:  # deleted elsewhere, or of another session
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
                _session.store().delete_thread(current.id, _session.session_id())
                pick_thread(None)
                st.rerun()
    st.divider()
    _ui.pipeline_picker(chosen, "chat_w_")
    use_history = st.toggle("Use chat history", key="chat_use_history", value=True,
                            help="Rewrite a follow-up ('How is it trained?') into a standalone "
                                 "question with the conversation's earlier turns "
                                 "(contextualize_question).")

try:
    options = Options(**{k: v for k, v in chosen.items() if k != "preset"},
                      use_history=use_history)
except ValidationError as exc:
    st.error("Invalid options: " + "; ".join(safe(e["msg"]) for e in exc.errors()))
    st.stop()

st.title("Chat")
kb_name = _session.current_kb_name()
with _session.stop_on_store_error(kb_name):
    kb = _session.knowledge_base(kb_name)
    n_chunks = kb.count()

if notice := st.session_state.pop("chat_notice", None):
    st.success(safe(notice))


def offer_samples() -> None:
    """Offer the sample documents, loaded into their own knowledge base ``sample`` (then selected)."""
    st.info(f"The knowledge base '{safe(kb_name)}' is empty. Upload documents on the Documents "
            "page, or load the sample knowledge base: Retrace's own documentation (how to use "
            f"it, how the graph decides, a glossary), into its own knowledge base '{SAMPLE_KB}'.")
    if not st.button("Load the sample knowledge base", type="primary", key="chat_load_samples"):
        return
    try:
        with st.spinner("Indexing the sample documents…"), _session.stop_on_store_error(SAMPLE_KB):
            reports = load_samples(_session.knowledge_base(SAMPLE_KB))  # never the user's
    except (StoreError, ValueError) as exc:
        st.error(f"Could not load the samples: {safe(exc)}")
        return
    failed = [r for r in reports if not r.ok]
    for r in failed:
        _ui.file_report(r)
    if not failed:
        st.session_state["chat_notice"] = (
            f"Loaded {len(reports)} sample documents ({sum(r.chunks for r in reports)} chunks) into "
            f"the knowledge base '{SAMPLE_KB}', now selected. Try: “When does the graph search the web?”")
        _session.select_kb(SAMPLE_KB)
        st.rerun()


if n_chunks == 0:
    offer_samples()
else:
    st.caption(f"Asking '{safe(kb_name)}' ({n_chunks} chunks, embeddings {safe(kb.embedding)}) with the "
               f"{preset_label(chosen['preset'])} pipeline.")


def show_run(run: Run, *, turn: int | None = None, rating: int | None = None) -> None:
    """Show one answer of the conversation.

    How the question was understood, the answer with a control per ``[n]`` marker, why the run stopped,
    its sources, its collapsed step log, a way into its trace, feedback, and Regenerate (for ``turn`` of
    this session's thread).
    """
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
        thread = _session.store().get_thread(thread_id)
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
        run = _session.runs().get(msg.get("run_id")) if msg["role"] == "assistant" else None
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
        try:
            context = make_context(_session.session_settings(), kb)
            status = st.status("Running the graph…", expanded=True)
            answer_box = st.empty()
            streamed: list[str] = []
            checks = [n for n, on in (("grounding check", options.grounding_check),
                                      ("answer check", options.answer_check)) if on]

            def show_tokens(text: str) -> None:
                """Show the answer as it streams, marked unverified until the checks have run."""
                # The answer streams in, visibly unverified until the checks have passed.
                streamed.append(text)
                note = f"\n\n*verifying: {' and '.join(checks)}…*" if checks else ""
                answer_box.markdown(safe("".join(streamed), multiline=True) + note)

            history = thread.history() if thread else []
            started = time.monotonic()
            for kind, item in run_live(question, context, options, history=history):
                if kind == "event":
                    status.markdown(_ui.event_line(item))
                elif kind == "token":
                    show_tokens(item)
                elif kind == "run":
                    run = item
                if kind != "run":  # the elapsed time, live, while the run goes on
                    status.update(label=f"Running the graph… {time.monotonic() - started:.1f} s")
            answer_box.empty()
            label, state = _ui.stop_status(run)
            status.update(label=label, state=state, expanded=False)
        except (StoreError, ValueError) as exc:
            st.error(f"The question could not be run: {safe(exc)}")
            messages.append({"role": "assistant", "content": f"Not run: {exc}", "run_id": None})
        except Exception as exc:  # e.g. Chroma failing while reading term statistics
            st.error(f"The question could not be run: {safe(type(exc).__name__)}: {safe(exc)}")
            messages.append({"role": "assistant", "content": f"Not run: {exc}", "run_id": None})
        else:
            if problem := _session.keep(run):  # in this session and in the run history
                st.warning(safe(problem))
            new_thread, turn_no = False, None
            try:
                store = _session.store()
                if thread is None:
                    thread_id = store.create_thread(_session.session_id(), knowledge_base=kb_name).id
                    st.session_state["chat_thread"] = thread_id
                turn_no = store.add_turn(thread_id, _session.session_id(), run)
                new_thread = thread is None
                # now a turn of the thread, which shows it: not shown again from here
                messages[-1]["in_thread"] = True
                messages.append({"role": "assistant", "content": run.answer, "run_id": run.id,
                                 "in_thread": True})
            except Exception as exc:  # the answer stays on screen and in this session
                st.warning(f"The turn could not be saved to the conversation: {safe(exc)}")
                messages.append({"role": "assistant", "content": run.answer, "run_id": run.id})
            show_run(run, turn=turn_no)
            if not problem and new_thread:
                st.rerun()  # list the new conversation in the sidebar
