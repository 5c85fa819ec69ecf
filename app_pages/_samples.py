"""The sample knowledge base, one click away: from Chat and Evaluate when empty, and from Documents always."""

from __future__ import annotations

import streamlit as st

from app_pages import _docs, _session
from app_pages._safe import safe
from rag.samples import SAMPLE_KB, load_samples
from rag.store.chroma import StoreError
from rag.trace import formats

NOTICE = "samples_notice"
"""Session-state key of the line that says the samples were loaded (shown once, on the next run)."""
ABOUT = ("the sample knowledge base: Retrace's own documentation (how to use it, how the graph decides, a "
         f"glossary), in its own knowledge base '{SAMPLE_KB}'")
"""What the samples are, in words (plain text)."""


def notice() -> None:
    """Say once, in green, that the samples were loaded and selected."""
    if line := st.session_state.pop(NOTICE, None):
        st.success(safe(line))


def load_button(key: str, *, primary: bool = True) -> None:
    """``Load the sample knowledge base``, keyed ``key``: indexes the samples, selects their knowledge base.

    Once loaded (it is never the user's own), a click just selects it. A file that fails says why in red.
    """
    loaded = SAMPLE_KB in _existing()
    label = "Open the sample knowledge base" if loaded else "Load the sample knowledge base"
    if not st.button(label, type="primary" if primary else "secondary", key=key,
                     icon=":material/school:", help=safe(f"Select {ABOUT}.")):
        return
    if loaded:
        st.session_state[NOTICE] = f"Selected the sample knowledge base '{SAMPLE_KB}'."
        _session.select_kb(SAMPLE_KB)
        st.rerun()
    try:
        with st.spinner("Indexing the sample documents…"), _session.stop_on_store_error(SAMPLE_KB):
            reports = load_samples(_session.knowledge_base(SAMPLE_KB))  # never the user's
    except (StoreError, ValueError) as exc:
        st.error(f"Could not load the samples: {safe(exc)}")
        return
    failed = [r for r in reports if not r.ok]
    for r in failed:
        _docs.file_report(r)
    if failed:
        return
    st.session_state[NOTICE] = (
        f"Loaded {formats.plural(len(reports), 'sample document')} "
        f"({formats.plural(sum(r.chunks for r in reports), 'chunk')}) into the knowledge base "
        f"'{SAMPLE_KB}', now selected. Try: “When does the graph search the web?”")
    _session.select_kb(SAMPLE_KB)
    st.rerun()


def _existing() -> list[str]:
    try:
        return [i.name for i in _session.kb_infos() if i.chunks]
    except Exception:  # the store is down: loading says why
        return []
