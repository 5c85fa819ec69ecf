"""Re-run from here: a step of a run re-run with changed options, then opened in Compare beside its parent."""

from __future__ import annotations

import streamlit as st

from app_pages import _session
from app_pages._safe import safe
from rag.config import TOGGLE_LABELS, Options
from rag.models import Comparison, Run
from rag.rerun import rerun_from
from rag.run import make_context

MODES = ("bm25", "dense", "hybrid")
"""The retrieval modes, as Options.retrieval names them."""


def rerun_popover(run: Run, step: int, *, key: str) -> None:
    """A **Re-run from here** popover for step ``step`` (1-based) of ``run``.

    Its options start at the run's (switches, top_k, retrieval mode, deadline in seconds); its button forks
    the run from the checkpoint before the step (:func:`rag.rerun.rerun_from`), keeps the child in this
    session and the history, and opens it in Compare beside its parent (does not return then).
    """
    if not run.thread_id:
        st.caption("This run kept no checkpoints (it was made before they were kept): ask it again to "
                   "re-run its steps.")
        return
    node = run.events[step - 1].node
    o = run.options
    p = f"{key}_rr_{run.id}_"  # per run: the options stay as set while the slider moves
    with st.popover("Re-run from here", icon=":material/call_split:",
                    help=f"Re-run step {step} ({node}) and what follows, with other options."):
        st.caption(f"Steps 1 to {step - 1} are reused from this run, not executed again; step {step} "
                   f"({safe(node)}) and every step after it run with these options."
                   if step > 1 else "Every step runs again, with these options.")
        toggles = {name: st.toggle(label, value=bool(getattr(o, name)), key=f"{p}{name}", help=help_text)
                   for name, (label, help_text) in TOGGLE_LABELS.items()}
        top_k = st.number_input("top_k", 1, 50, o.top_k, step=1, key=f"{p}top_k",
                                help="Chunks retrieved per query.")
        mode = st.radio("Retrieval mode", MODES, index=MODES.index(o.retrieval), key=f"{p}mode",
                        horizontal=True)
        deadline = st.number_input("Deadline (s)", 1.0, 3600.0,
                                   float(o.deadline_s or _session.settings().run_deadline_s), step=5.0,
                                   key=f"{p}deadline", help="The time budget of the re-run, in seconds.")
        if st.button("Re-run from here", type="primary", key=f"{p}go_{step}", icon=":material/play_arrow:"):
            options = Options.model_validate({**o.model_dump(), **toggles, "top_k": int(top_k),
                                              "min_relevant": min(o.min_relevant, int(top_k)),
                                              "retrieval": mode, "deadline_s": float(deadline)})
            _fork(run, step, options)


def _fork(run: Run, step: int, options: Options) -> None:
    """Run the fork, keep the child, open both in Compare; a failure is one red line."""
    try:
        kb = _session.knowledge_base(run.knowledge_base)
        context = make_context(_session.session_settings(), kb)
        with st.spinner(f"Re-running from step {step}…"):
            child = rerun_from(run, step, context, options)
    except Exception as exc:  # no checkpoint, store down, a bad knowledge base: say so, keep the page
        st.error(f"The re-run could not be made: {safe(type(exc).__name__)}: {safe(exc)}")
        return
    if problem := _session.keep(child):
        st.warning(safe(problem))
    cmp = Comparison(question=run.question, runs=[run, child],
                     labels=[f"Run {run.id[:8]}", f"Re-run from step {step} ({child.from_node})"])
    st.session_state.setdefault("cmp_comparisons", {})[cmp.id] = cmp
    st.session_state["cmp_current"] = cmp.id
    st.switch_page("app_pages/compare.py")
