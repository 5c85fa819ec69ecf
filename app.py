"""Retrace: the Streamlit entry point (page config, navigation, and the shared sidebar)."""

import streamlit as st

from app_pages import _links, _login, _session
from app_pages._safe import code, safe

# A page icon of our own: without one, the browser would fetch each page's Material icon as
# its favicon from fonts.gstatic.com, and the app makes no request to an outside host.
st.set_page_config(page_title="Retrace", page_icon="🔁", layout="wide")

CHAT = st.Page("app_pages/chat.py", title="Chat", icon=":material/chat:")


def _home() -> None:
    """The app's root URL: the Chat page, under its own address (/chat)."""
    st.switch_page(CHAT)


# The default page is served at the root and has no other address, so Chat is not the default:
# a hidden root page sends the browser on to /chat, and loading /chat directly works too.
pg = st.navigation([
    st.Page("app_pages/documents.py", title="Documents", icon=":material/description:"),
    CHAT,
    st.Page("app_pages/trace.py", title="Trace", icon=":material/account_tree:"),
    st.Page("app_pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
    st.Page("app_pages/evaluate.py", title="Evaluate", icon=":material/fact_check:"),
    st.Page("app_pages/insights.py", title="Insights", icon=":material/insights:"),
    st.Page("app_pages/settings.py", title="Settings", icon=":material/settings:"),
    st.Page(_home, title="Retrace", url_path="", default=True, visibility="hidden"),
])
_session.note_kb_link()  # a link's ?kb= (and ?thread=, ?preset=) is read before the root's redirect drops it
_links.note()
_login.require()  # with login on, nothing below is drawn for a visitor who has not logged in
if pg.url_path == "":  # the root: on to /chat before drawing anything
    _home()

try:
    settings = _session.settings()
except ValueError as exc:
    st.error(f"Retrace cannot start: the configuration is invalid. {safe(exc)}")
    st.stop()

with st.sidebar:
    _login.sidebar()
    st.markdown("**Engine**")
    active = _session.session_settings()
    st.caption(safe(_session.engine_label(active)))
    st.caption("Web search: Tavily" if active.web_search_enabled
               else "Web search: off (set TAVILY_API_KEY to turn it on)")
    try:
        names = _session.knowledge_base_names()
    except Exception as exc:  # server down, bad data dir: say so, keep the app usable
        from rag.store.chroma import StoreError

        where = (f"the Chroma server at {settings.chroma_host}:{settings.chroma_port}"
                 if settings.chroma_host else f"the data directory {settings.data_dir}")
        st.error(safe(str(exc) if isinstance(exc, StoreError)  # says where and what to do
                      else f"Cannot open {where}: {type(exc).__name__}: {exc}"))
        names = [_session.DEFAULT_KB]
    if problem := _session.kb_from_link(names):
        st.error(safe(problem))
    if problem := _links.thread_from_link(names):  # the conversation's knowledge base wins over ?kb=
        st.error(safe(problem))
    _session.kb_to_link(_session.kb_picker(names))
    _session.remember_browser()  # this browser keeps its conversations across refreshes
    if settings.chroma_host:
        st.caption(safe(f"Chroma server: {settings.chroma_host}:{settings.chroma_port}"))
    else:
        st.caption(f"Data: {code(settings.data_dir.resolve())}")

pg.run()
