"""The Chat page's per-answer controls: citation markers, feedback and regenerate (issue 11, section 4).

Only Streamlit glue. Every string from data goes through :func:`app_pages._ui.safe`, or ``st.text``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from app_pages import _safe, _session, _ui
from app_pages._safe import safe
from rag.config import Options, preset_label, preset_of
from rag.history import Thread
from rag.models import Citation, Run, Turn
from rag.run import make_context, run_live, run_question
from rag.store.chroma import KnowledgeBase, StoreError

REGENERATE = "chat_regenerate"
"""Session-state key of the answer to regenerate: ``(thread id, turn)``, set by its button."""
_MARKER = re.compile(r"\[(\d+)\]")


def cited(answer: str, citations: list[Citation]) -> list[Citation]:
    """The citations whose ``[n]`` marker appears in ``answer``, in the order they first appear."""
    by_n = {c.n: c for c in citations}
    order = dict.fromkeys(int(n) for n in _MARKER.findall(answer or ""))
    return [by_n[n] for n in order if n in by_n]


def markers(run: Run) -> None:
    """One small control per ``[n]`` marker of the answer; a click opens that source's text in place."""
    items = cited(run.answer, run.citations)
    if not items:
        return
    with st.container(horizontal=True, gap="small", key=f"chat_markers_{run.id}"):
        for c in items:
            with st.popover(safe(f"[{c.n}]"), type="tertiary", help=safe(_ui.citation_label(c)),
                            key=f"chat_marker_{run.id}_{c.n}"):
                st.markdown(f"**{safe(_ui.citation_label(c))}**")
                if c.origin == "web":
                    _safe.link(c.source, key=f"chat_marker_link_{run.id}_{c.n}")
                st.text(c.text or "(no text stored for this chunk)")


def _save_feedback(run_id: str) -> None:
    value = st.session_state.get(f"chat_fb_{run_id}")
    try:
        _session.store().set_feedback(run_id, _session.session_id(), value)
    except Exception as exc:  # the answer stays; say why the thumbs did not stick
        st.session_state["chat_feedback_error"] = f"The feedback could not be saved: {exc}"


def actions(run: Run, *, thread_id: str | None, turn: int | None, rating: int | None,
            read_only: bool) -> None:
    """Thumbs up/down saved with the run, and Regenerate for a turn of this session's thread.

    ``rating`` is the saved feedback (1 up, 0 down, None).
    """
    with st.container(horizontal=True, gap="small", vertical_alignment="center"):
        st.feedback("thumbs", key=f"chat_fb_{run.id}", default=rating, disabled=read_only,
                    on_change=_save_feedback, args=(run.id,))
        if thread_id and turn and not read_only:
            st.button("Regenerate", key=f"chat_regen_{run.id}", icon=":material/refresh:",
                      type="tertiary", on_click=st.session_state.__setitem__,
                      args=(REGENERATE, (thread_id, turn)),
                      help="Ask this question again with the pipeline now chosen in the sidebar. "
                           "The new answer is added beside this one; both stay.")
    if problem := st.session_state.pop("chat_feedback_error", None):
        st.warning(safe(problem))


def sibling_caption(run: Run, i: int, of: int) -> None:
    """``Answer 2 of 2 · Naive RAG (regenerated)`` above each answer of a regenerated turn."""
    if of > 1:
        again = " (regenerated)" if i > 1 else ""
        st.caption(f"Answer {i} of {of} · {safe(preset_label(preset_of(run.options)))}{again}")


def ratings(thread: Thread | None) -> dict[str, int]:
    """The saved feedback of the thread's runs (run id -> 1 up, 0 down); {} when it cannot be read."""
    if thread is None:
        return {}
    try:
        return _session.store().feedback(r.id for t in thread.turns for r in t.runs)
    except Exception:  # the thumbs then start empty; saving says what is wrong
        return {}


def regenerate(thread: Thread, turn: int, options: Options, kb: KnowledgeBase) -> Run | None:
    """Ask turn ``turn``'s question again with ``options``, in place, and add the run as its sibling.

    The earlier turns are its history, as for the first answer. Returns the new run, or None when it could not
    be run or saved (and says why).
    """
    earlier = [h for t, h in zip(thread.turns, thread.history(), strict=True) if t.turn < turn]
    question = next(t.runs[0].question for t in thread.turns if t.turn == turn)
    try:
        status = st.status(f"Regenerating with {preset_label(preset_of(options))}…", expanded=True)
        run = run_question(question, make_context(_session.session_settings(), kb), options,
                           history=earlier, thread_id=thread.id,
                           on_event=lambda e: _show(status, _ui.event_line(e)))
        status.update(label=safe(run.stop_reason) or "Done",
                      state="error" if run.error else "complete", expanded=False)
        _session.runs()[run.id] = run
        _session.store().add_turn(thread.id, _session.session_id(), run, turn=turn)
    except Exception as exc:  # the earlier answer stays; say why there is no new one
        st.error(f"The answer could not be regenerated: {safe(type(exc).__name__)}: {safe(exc)}")
        return None
    return run


def _show(box: DeltaGenerator, markdown: str) -> None:
    box.markdown(markdown)


def ask(question: str, kb: KnowledgeBase, options: Options, *, history: Sequence[Turn],
        thread_id: str | None = None) -> Run | None:
    """Run ``question`` live: its steps in a status box, then the box collapsed under how the run ended.

    The answer streams in below, marked unverified until the checks have run.

    ``thread_id``: the conversation it is a turn of (its LangGraph thread; None: a thread of its own).
    Returns the run, or None when it could not be run (and says why in red).
    """
    try:
        context = make_context(_session.session_settings(), kb)
        status = st.status("Running the graph…", expanded=True)
        answer_box = st.empty()
        streamed: list[str] = []
        checks = [n for n, on in (("grounding check", options.grounding_check),
                                  ("answer check", options.answer_check)) if on]
        note = f"\n\n*verifying: {' and '.join(checks)}…*" if checks else ""
        run: Run | None = None
        started = time.monotonic()
        for kind, item in run_live(question, context, options, history=history, thread_id=thread_id):
            if kind == "event":
                status.markdown(_ui.event_line(item))
            elif kind == "token":
                streamed.append(item)
                answer_box.markdown(safe("".join(streamed), multiline=True) + note)
            elif kind == "run":
                run = item
            if kind != "run":  # the elapsed time, live, while the run goes on
                status.update(label=f"Running the graph… {time.monotonic() - started:.1f} s")
        answer_box.empty()
    except (StoreError, ValueError) as exc:
        st.error(f"The question could not be run: {safe(exc)}")
        return None
    except Exception as exc:  # e.g. Chroma failing while reading term statistics
        st.error(f"The question could not be run: {safe(type(exc).__name__)}: {safe(exc)}")
        return None
    if run is not None:
        label, state = _ui.stop_status(run)
        status.update(label=label, state=state, expanded=False)
    return run


def save_turn(run: Run, thread_id: str, kb_name: str) -> str | None:
    """Add ``run`` as the next turn of the thread ``thread_id`` (created on ``kb_name`` when new).

    Returns the thread's id, or None when it could not be saved (and says why; the answer stays in this
    session).
    """
    try:
        store = _session.store()
        store.create_thread(_session.session_id(), knowledge_base=kb_name, thread_id=thread_id)
        store.add_turn(thread_id, _session.session_id(), run)
    except Exception as exc:
        st.warning(f"The turn could not be saved to the conversation: {safe(exc)}")
        return None
    return thread_id
