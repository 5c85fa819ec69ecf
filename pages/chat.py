"""Chat page: ask questions of the knowledge base and watch the graph decide, live."""

import streamlit as st
from pydantic import ValidationError

from pages import _session, _ui
from pages._ui import safe
from rag.config import Options, preset_label
from rag.models import Run
from rag.run import make_context, run_question
from rag.samples import load_samples
from rag.store.chroma import StoreError

DEFAULT_PRESET = "full"

# The chosen options live under "chat_options" (not a widget key), so they survive visits to
# other pages, where Streamlit drops the state of widgets it did not render.
chosen: dict = st.session_state.setdefault("chat_options", _ui.default_pipeline(DEFAULT_PRESET))
messages: list[dict] = st.session_state.setdefault("chat_messages", [])

with st.sidebar:
    _ui.pipeline_picker(chosen, "chat_w_")
    if st.button("Clear chat", key="chat_clear", disabled=not messages):
        messages.clear()
        st.rerun()

try:
    options = Options(**{k: v for k, v in chosen.items() if k != "preset"})
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

if n_chunks == 0:
    st.info(f"The knowledge base '{safe(kb_name)}' is empty. Upload documents on the Documents "
            "page, or load the sample knowledge base: Retrace's own documentation (how to use "
            "it, how the graph decides, a glossary).")
    if st.button("Load the sample knowledge base", type="primary", key="chat_load_samples"):
        try:
            with st.spinner("Indexing the sample documents…"):
                reports = load_samples(kb)
        except (StoreError, ValueError) as exc:
            st.error(f"Could not load the samples: {safe(exc)}")
        else:
            failed = [r for r in reports if not r.ok]
            for r in failed:
                _ui.file_report(r)
            if not failed:
                st.session_state["chat_notice"] = (
                    f"Loaded {len(reports)} sample documents "
                    f"({sum(r.chunks for r in reports)} chunks). Try: "
                    "“When does the graph search the web?”")
                st.rerun()
else:
    st.caption(f"Asking '{safe(kb_name)}' ({n_chunks} chunks) with the "
               f"{preset_label(chosen['preset'])} pipeline.")


def show_run(run: Run) -> None:
    """The answer, why the run stopped, its sources, and a way into its trace."""
    _ui.answer(run)
    st.caption(safe(run.stop_reason))
    if run.citations:
        st.markdown("**Sources**")
        _ui.citations(run.citations, key=f"chat_{run.id}")
    if st.button("Open trace", key=f"chat_trace_{run.id}", icon=":material/account_tree:"):
        _session.open_trace(run.id)


for msg in messages:
    with st.chat_message(msg["role"]):
        run = _session.runs().get(msg.get("run_id")) if msg["role"] == "assistant" else None
        if run is not None:
            show_run(run)
        else:
            st.markdown(safe(msg["content"], multiline=True))

if question := st.chat_input("Ask about your documents"):
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

            run = run_question(question, context, options,
                               on_event=lambda e: status.markdown(_ui.event_line(e)),
                               on_token=show_tokens)
            answer_box.empty()
            status.update(label=safe(run.stop_reason) or "Done",
                          state="error" if run.error else "complete", expanded=False)
        except (StoreError, ValueError) as exc:
            st.error(f"The question could not be run: {safe(exc)}")
            messages.append({"role": "assistant", "content": f"Not run: {exc}", "run_id": None})
        except Exception as exc:  # e.g. Chroma failing while reading term statistics
            st.error(f"The question could not be run: {safe(type(exc).__name__)}: {safe(exc)}")
            messages.append({"role": "assistant", "content": f"Not run: {exc}", "run_id": None})
        else:
            if problem := _session.keep(run):  # in this session and in the run history
                st.warning(safe(problem))
            messages.append({"role": "assistant", "content": run.answer, "run_id": run.id})
            show_run(run)
