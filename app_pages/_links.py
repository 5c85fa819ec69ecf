"""The Chat page's address: ``?thread=ID&preset=NAME`` beside ``?kb=NAME`` (issue 20, section 5).

A refresh or a shared link reopens the conversation, its knowledge base and the preset. Like ``?kb=``
(:func:`app_pages._session.note_kb_link`), the address is read once per browser session, before the root's
redirect to /chat can drop it, and written back as the user moves on.
"""

from __future__ import annotations

import streamlit as st

from app_pages import _login, _session
from rag.config import PRESETS

THREAD = "chat_thread"
"""Session-state key of the Chat page's open conversation (a thread id, or None for a new one)."""
_NOTED = "_chat_link"


def note() -> None:
    """Remember the conversation and preset the address names, once per session, before any redirect."""
    if _NOTED not in st.session_state:
        st.session_state[_NOTED] = {"thread": st.query_params.get("thread") or "",
                                    "preset": st.query_params.get("preset") or ""}


def _take(name: str) -> str:
    noted = st.session_state.get(_NOTED) or {}
    value = noted.get(name) or ""
    noted[name] = ""
    return value


def thread_from_link(names: list[str]) -> str | None:
    """Open the conversation the link named and select its knowledge base, once per session.

    A conversation is opened when this user owns it, or may see everyone's (:func:`_login.sees_everyone`:
    then it opens read-only). Returns None, or one line saying the link's conversation cannot be opened (the
    caller shows it as plain text). Call before :func:`app_pages._session.kb_picker` draws the selector.
    """
    wanted = _take("thread")
    if not wanted:
        return None
    try:
        thread = _session.store().get_thread(wanted)
    except Exception as exc:  # an unreadable history: say so, open nothing
        return f"The conversation in the link could not be read: {type(exc).__name__}: {exc}"
    if thread is None or (thread.summary.session_id != _session.session_id()
                          and not _login.sees_everyone()):  # another user's looks the same as none
        return "The link names a conversation that does not exist or is not yours."
    st.session_state[THREAD] = wanted
    if thread.summary.knowledge_base in names:
        st.session_state[_session.KB_NAME] = thread.summary.knowledge_base
    return None


def preset_from_link() -> str | None:
    """The preset the link named (once per session), or None when it named none or an unknown one."""
    wanted = _take("preset")
    return wanted if wanted in PRESETS else None


def to_link(thread_id: str | None, preset: str) -> None:
    """Keep the open conversation and the preset in the address (``?thread=ID&preset=NAME``)."""
    if thread_id:
        if st.query_params.get("thread") != thread_id:
            st.query_params["thread"] = thread_id
    elif "thread" in st.query_params:
        del st.query_params["thread"]
    if st.query_params.get("preset") != preset:
        st.query_params["preset"] = preset
