"""Documents page section: create, switch, delete and re-index knowledge bases.

Drawn above the document list, so a knowledge base that cannot be opened (its embedding model needs a key
this session lacks) can still be re-indexed, deleted or left for another. Names come from users: they
are validated by :func:`rag.store.kbs.validate_kb_name` and rendered through :func:`app_pages._safe.safe`.
"""

from __future__ import annotations

import streamlit as st

from app_pages import _docs, _session
from app_pages._safe import safe
from rag.ingest.eta import PageEta, format_eta
from rag.store import kbs
from rag.store.chroma import StoreError
from rag.store.embeddings import HASHING_IDENTITY, OPENAI_PREFIX, configured_embedding
from rag.trace import formats

NOTICE = "kb_notice"


def _models() -> list[str]:
    """Embedding models a knowledge base can be built with in this session, the configured one first."""
    s = _session.session_settings()
    models = [configured_embedding(s), HASHING_IDENTITY]
    if s.openai_api_key and s.embedding_model != "hashing":
        models.append(OPENAI_PREFIX + s.embedding_model)
    return list(dict.fromkeys(models))


def _label(identity: str) -> str:
    if identity == HASHING_IDENTITY:
        return f"{identity} (offline, no key)"
    return f"{identity} (needs an OpenAI key)" if identity.startswith(OPENAI_PREFIX) else identity


def _table(infos: list[kbs.KnowledgeBaseInfo], current: str) -> None:
    missing = not _session.session_settings().openai_api_key
    rows = [{"Knowledge base": i.name, "Embedding model": i.embedding or "unknown",
             "Chunks": formats.count(i.chunks),
             "Selected": "yes" if i.name == current else "",
             "Note": "needs an OpenAI key (Settings)" if i.needs_key and missing else ""} for i in infos]
    if rows:  # a table's cells are Markdown: every one goes through safe()
        st.table({col: [safe(r[col]) for r in rows] for col in rows[0]})
    else:
        st.caption("No knowledge base yet: the selected one is created when you index files into it.")


def _switch(names: list[str], current: str) -> None:
    # keyed by the selection, so it shows the selected knowledge base whenever that changes
    target = st.selectbox("Switch to", names, index=names.index(current) if current in names else 0,
                          key=f"kb_w_switch_{current}")
    if st.button("Switch", key="kb_switch") and target != current:
        _session.select_kb(target)
        st.rerun()


def _create() -> None:
    with st.form("kb_create_form", clear_on_submit=False):
        name = st.text_input("New knowledge base", key="kb_w_new_name", max_chars=63,
                             placeholder="e.g. papers-2024",
                             help="3-63 letters, digits, '.', '_' or '-', starting and ending with a letter "
                                  "or digit.")
        model = st.selectbox("Embedding model", _models(), format_func=_label, key="kb_w_new_model",
                             help="The model that embeds its documents and questions. It stays with the "
                                  "knowledge base whatever key is typed later.")
        go = st.form_submit_button("Create", type="primary")
    if not go:
        return
    try:
        info = kbs.create(_session.client(), _session.session_settings(), name.strip(), model)
    except (ValueError, StoreError) as exc:
        st.error(safe(exc))
        return
    st.session_state[NOTICE] = f"Created the knowledge base '{info.name}' ({info.embedding}), now selected."
    _session.select_kb(info.name)
    st.rerun()


def _delete(current: str, info: kbs.KnowledgeBaseInfo | None) -> None:
    if info is None:
        return
    with st.popover(f"Delete '{safe(current)}'", icon=":material/delete_forever:"):
        st.warning(f"This deletes the knowledge base '{safe(current)}' and its "
                   f"{formats.plural(info.chunks, 'chunk')}. Runs that cited it keep their trace.")
        sure = _docs.confirm(f"kb_delete_sure_{current}")
        if st.button("Delete the knowledge base", type="primary", key="kb_delete_confirm", disabled=not sure):
            try:
                n = kbs.delete(_session.client(), current, _session.settings().data_dir)
            except (ValueError, StoreError) as exc:
                st.error(safe(exc))
                return
            _session.forget_knowledge_bases()
            st.session_state[NOTICE] = (f"Deleted the knowledge base '{current}' "
                                        f"({formats.plural(n, 'chunk')}).")
            _session.select_kb(_session.DEFAULT_KB)
            st.rerun()


def _reindex(current: str, info: kbs.KnowledgeBaseInfo | None) -> None:
    if info is None or not info.chunks:
        return
    with st.popover(f"Re-index '{safe(current)}'", icon=":material/autorenew:"):
        st.caption("Re-embeds its stored chunks with another model (no file is read again). Until it is "
                   "done, the knowledge base keeps serving as it is.")
        model = st.selectbox("Embedding model", _models(), format_func=_label, key="kb_w_reindex_model")
        if not st.button("Re-index", type="primary", key="kb_reindex"):
            return
        bar = st.progress(0.0, text="Re-embedding…")
        eta = PageEta()  # its units are chunks here

        def progress(done: int, total: int) -> None:
            """Move the bar to ``done`` of ``total`` chunks, with the expected time left once known."""
            left = format_eta(eta.update(current, done, total)) if done < total else ""
            bar.progress(done / total if total else 1.0,
                         text=f"Re-embedded {formats.count(done)} of {formats.plural(total, 'chunk')}"
                              + (f" · {left}" if left else ""))

        try:
            n = kbs.reindex(_session.client(), _session.session_settings(), current, model,
                            on_progress=progress)
        except Exception as exc:  # the old knowledge base is intact whatever happened
            bar.empty()
            st.error(safe(f"Could not re-index '{current}': {exc}"))
            return
        _session.forget_knowledge_bases()
        st.session_state[NOTICE] = (f"Re-indexed '{current}': {formats.plural(n, 'chunk')}, "
                                    f"now embedded by {model}.")
        st.rerun()


def manage() -> None:
    """The knowledge-base section: a table of them; switch, create, delete and re-index the selected one."""
    current = _session.current_kb_name()
    if notice := st.session_state.pop(NOTICE, None):
        st.success(safe(notice))
    with st.expander(f"Knowledge bases (selected: {safe(current)})", icon=":material/database:"):
        try:
            infos = _session.kb_infos()
        except Exception:  # the store is down: the page below says so, in one line
            st.caption("The knowledge bases cannot be listed right now.")
            return
        _table(infos, current)
        by_name = {i.name: i for i in infos}
        names = sorted({*by_name, current, _session.DEFAULT_KB})
        left, right = st.columns(2)
        with left:
            _switch(names, current)
        with right:
            _create()
        a, b = st.columns(2)
        with a:
            _delete(current, by_name.get(current))
        with b:
            _reindex(current, by_name.get(current))
