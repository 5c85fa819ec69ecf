"""Chat page: ask questions of the knowledge base and watch the graph decide, live."""

import streamlit as st
from pydantic import ValidationError

from pages import _runs, _shared
from rag.config import PRESETS, Options
from rag.models import Run
from rag.run import make_context, run_question
from rag.samples import load_samples
from rag.store.chroma import StoreError

TOGGLES = {
    "decomposition": ("Decompose the question", "Split multi-hop and comparison questions into "
                                                "sub-questions, each retrieved on its own."),
    "grading": ("Grade chunks", "Grade every retrieved chunk for relevance."),
    "rewriting": ("Rewrite the query", "Rewrite the query when the evidence is weak."),
    "web_fallback": ("Web fallback", "Search the web when the documents are not enough "
                                     "(needs TAVILY_API_KEY)."),
    "grounding_check": ("Grounding check", "Check every answer sentence against the chunks it cites."),
    "answer_check": ("Answer check", "Check that the answer addresses the question."),
}
NUMBERS = {
    "top_k": ("top_k", 1, 50, "Chunks retrieved per query."),
    "min_relevant": ("min_relevant", 1, 50, "Relevant chunks needed to answer without a caveat."),
    "max_rewrites": ("max_rewrites", 0, 5, "Rewrite budget for one run."),
}
DEFAULT_PRESET = "full"

# The chosen options live under "chat_options" (not a widget key), so they survive visits to
# other pages, where Streamlit drops the state of widgets it did not render.
_defaults = Options()
chosen: dict = st.session_state.setdefault("chat_options", {
    "preset": DEFAULT_PRESET, **PRESETS[DEFAULT_PRESET][1],
    **{k: getattr(_defaults, k) for k in NUMBERS}})
for _name, _value in chosen.items():
    st.session_state.setdefault(f"chat_w_{_name}", _value)
messages: list[dict] = st.session_state.setdefault("chat_messages", [])


def _apply_preset() -> None:
    preset = st.session_state["chat_w_preset"]
    for name, value in PRESETS[preset][1].items():
        st.session_state[f"chat_w_{name}"] = value


with st.sidebar:
    st.markdown("**Pipeline**")
    st.selectbox("Preset", list(PRESETS), key="chat_w_preset", on_change=_apply_preset,
                 format_func=lambda k: PRESETS[k][0],
                 help="Naive RAG is everything off; Full is everything on.")
    for name, (label, help_text) in TOGGLES.items():
        st.toggle(label, key=f"chat_w_{name}", help=help_text)
    for name, (label, low, high, help_text) in NUMBERS.items():
        st.number_input(label, min_value=low, max_value=high, step=1, key=f"chat_w_{name}",
                        help=help_text)
    chosen.update({name: st.session_state[f"chat_w_{name}"] for name in chosen})
    preset_toggles = PRESETS[chosen["preset"]][1]
    if any(chosen[k] != v for k, v in preset_toggles.items()):
        st.caption(f"Custom: changed from {PRESETS[chosen['preset']][0]}.")
    if st.button("Clear chat", key="chat_clear", disabled=not messages):
        messages.clear()
        st.rerun()

try:
    options = Options(**{k: v for k, v in chosen.items() if k != "preset"})
except ValidationError as exc:
    st.error("Invalid options: " + "; ".join(e["msg"] for e in exc.errors()))
    st.stop()

st.title("Chat")
kb_name = _shared.current_kb_name()
try:
    kb = _shared.knowledge_base(kb_name)
    n_chunks = kb.count()
except (StoreError, ValueError) as exc:
    st.error(f"Cannot open the knowledge base '{kb_name}': {exc}")
    st.stop()
except Exception as exc:  # Chroma unreachable or corrupt: no stack trace, say what broke
    st.error(f"Cannot read the knowledge base '{kb_name}': {type(exc).__name__}: {exc}")
    st.stop()

if notice := st.session_state.pop("chat_notice", None):
    st.success(notice)

if n_chunks == 0:
    st.info(f"The knowledge base '{kb_name}' is empty. Upload documents on the Documents page, "
            "or load the sample knowledge base: Retrace's own documentation (how to use it, how "
            "the graph decides, a glossary).")
    if st.button("Load the sample knowledge base", type="primary", key="chat_load_samples"):
        try:
            with st.spinner("Indexing the sample documents…"):
                reports = load_samples(kb)
        except (StoreError, ValueError) as exc:
            st.error(f"Could not load the samples: {exc}")
        else:
            failed = [r for r in reports if not r.ok]
            for r in failed:
                st.error(_shared.md_escape(r.line()))
            if not failed:
                st.session_state["chat_notice"] = (
                    f"Loaded {len(reports)} sample documents "
                    f"({sum(r.chunks for r in reports)} chunks). Try: "
                    "“When does the graph search the web?”")
                st.rerun()
else:
    st.caption(f"Asking '{kb_name}' ({n_chunks} chunks) with the "
               f"{PRESETS[chosen['preset']][0]} pipeline.")


def show_run(run: Run) -> None:
    """The answer, why the run stopped, its sources, and a way into its trace."""
    if run.error:
        st.error(run.answer)
    else:
        st.markdown(_shared.md_escape(run.answer).replace("\n", "  \n"))
    st.caption(_shared.md_escape(run.stop_reason))
    if run.citations:
        st.markdown("**Sources**")
        for c in run.citations:
            with st.expander(_shared.md_escape(_shared.citation_label(c))):
                if c.origin == "web":
                    st.markdown(f"[{_shared.md_escape(c.source)}]({c.source})")
                st.text(c.text or "(no text stored for this chunk)")
    if st.button("Open trace", key=f"chat_trace_{run.id}", icon=":material/account_tree:"):
        _shared.open_trace(run.id)


for msg in messages:
    with st.chat_message(msg["role"]):
        run = _shared.runs().get(msg.get("run_id")) if msg["role"] == "assistant" else None
        if run is not None:
            show_run(run)
        else:
            st.markdown(_shared.md_escape(msg["content"]))

if question := st.chat_input("Ask about your documents"):
    messages.append({"role": "user", "content": question, "run_id": None})
    with st.chat_message("user"):
        st.markdown(_shared.md_escape(question))
    with st.chat_message("assistant"):
        try:
            context = make_context(_shared.session_settings(), kb)
            status = st.status("Running the graph…", expanded=True)
            answer_box = st.empty()
            streamed: list[str] = []
            checks = [n for n, on in (("grounding check", options.grounding_check),
                                      ("answer check", options.answer_check)) if on]

            def show_tokens(text: str) -> None:
                # The answer streams in, visibly unverified until the checks have passed.
                streamed.append(text)
                note = f"\n\n*verifying: {' and '.join(checks)}…*" if checks else ""
                answer_box.markdown(_shared.md_escape("".join(streamed)) + note)

            run = run_question(question, context, options,
                               on_event=lambda e: status.markdown(_shared.event_line(e)),
                               on_token=show_tokens)
            answer_box.empty()
            status.update(label=_shared.md_escape(run.stop_reason) or "Done",
                          state="error" if run.error else "complete", expanded=False)
        except (StoreError, ValueError) as exc:
            st.error(f"The question could not be run: {exc}")
            messages.append({"role": "assistant", "content": f"Not run: {exc}", "run_id": None})
        except Exception as exc:  # e.g. Chroma failing while reading term statistics
            st.error(f"The question could not be run: {type(exc).__name__}: {exc}")
            messages.append({"role": "assistant", "content": f"Not run: {exc}", "run_id": None})
        else:
            if problem := _runs.keep(run):  # in this session and in the run history
                st.warning(problem)
            messages.append({"role": "assistant", "content": run.answer, "run_id": run.id})
            show_run(run)
