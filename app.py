"""Retrace: the Streamlit entry point (page config, navigation, and the shared sidebar)."""

import streamlit as st

from pages import _shared

st.set_page_config(page_title="Retrace", layout="wide")

pg = st.navigation([
    st.Page("pages/documents.py", title="Documents", icon=":material/description:"),
    st.Page("pages/chat.py", title="Chat", icon=":material/chat:", default=True),
    st.Page("pages/trace.py", title="Trace", icon=":material/account_tree:"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
    st.Page("pages/insights.py", title="Insights", icon=":material/insights:"),
    st.Page("pages/settings.py", title="Settings", icon=":material/settings:"),
])

try:
    settings = _shared.settings()
except ValueError as exc:
    st.error(f"Retrace cannot start: the configuration is invalid. {exc}")
    st.stop()

with st.sidebar:
    st.markdown("**Engine**")
    active = _shared.session_settings()
    st.caption(_shared.engine_label(active))
    st.caption("Web search: Tavily" if active.web_search_enabled
               else "Web search: off (set TAVILY_API_KEY to turn it on)")
    try:
        names = _shared.knowledge_base_names()
    except Exception as exc:  # server down, bad data dir: say so, keep the app usable
        from rag.store.chroma import StoreError

        where = (f"the Chroma server at {settings.chroma_host}:{settings.chroma_port}"
                 if settings.chroma_host else f"the data directory {settings.data_dir}")
        st.error(str(exc) if isinstance(exc, StoreError)  # already says where and what to do
                 else f"Cannot open {where}: {type(exc).__name__}: {exc}")
        names = [_shared.DEFAULT_KB]
    current = _shared.current_kb_name()
    if current not in names:
        names = sorted({*names, current})
    st.selectbox("Knowledge base", names, key="kb_name")
    if settings.chroma_host:
        st.caption(f"Chroma server: {settings.chroma_host}:{settings.chroma_port}")
    else:
        st.caption(f"Data: `{settings.data_dir.resolve()}`")

pg.run()
