"""UI helpers shared by the pages: cached settings, Chroma client and knowledge bases, session state.

Only Streamlit glue lives here; everything the app does is in ``rag/``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import streamlit as st
from chromadb.api import ClientAPI

from rag.config import Settings
from rag.models import Citation, TraceEvent
from rag.store.chroma import KnowledgeBase, list_knowledge_bases, make_client, open_knowledge_base

DEFAULT_KB = "default"
ENGINE_OFFLINE = "Offline engine (no keys)"
_MD_SPECIAL = set("\\`*_[]<>#|~$")


SECRET_NAMES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TAVILY_API_KEY", "TAVILY_API_BASE_URL")
SESSION_KEYS = "settings_session"
"""Session-state key of what a user typed on the Settings page (their keys, for their session
only: never written to disk, os.environ, a trace, a log or an export)."""


def _from_secrets(env: dict) -> dict:
    try:
        for name in SECRET_NAMES:
            if name in st.secrets and not env.get(name):
                env[name] = str(st.secrets[name])
    except Exception:  # no secrets.toml (the usual case): the environment alone decides
        return env
    return env


@st.cache_resource(show_spinner=False)
def settings() -> Settings:
    """The server's settings: the environment, plus keys from ``.streamlit/secrets.toml``;
    read once per process. They hold the operator's keys only, never a user's.

    Raises ValueError on a malformed number in the environment (not cached, so a fix is seen
    on the next rerun).
    """
    import os

    return Settings.from_env(_from_secrets(dict(os.environ)))


def session_settings() -> Settings:
    """This session's settings: the server's, with the keys and base URL typed on the
    Settings page (if any) for this browser session only."""
    base = settings()
    typed = st.session_state.get(SESSION_KEYS) or {}
    changes = {k: v for k, v in typed.items() if v}
    return base.with_(**changes) if changes else base


def key_fingerprint(secret: str | None) -> str:
    """A short one-way fingerprint of a key, to tell cache entries apart without holding it."""
    import hashlib

    return hashlib.sha256(secret.encode()).hexdigest()[:16] if secret else ""


@st.cache_resource(show_spinner=False)
def _client(data_dir: str, host: str | None, port: int) -> ClientAPI:
    return make_client(Settings(data_dir=Path(data_dir), chroma_host=host, chroma_port=port))


def client() -> ClientAPI:
    """The Chroma client for the current settings, one per (data dir, host, port)."""
    s = settings()
    return _client(str(s.data_dir), s.chroma_host, s.chroma_port)


def _store_key(s: Settings) -> tuple:
    # Everything that decides which collection is opened and how it embeds. With OpenAI
    # embeddings the cached object holds a key, so entries are told apart by the key's
    # fingerprint: one user's key never serves another user.
    openai = s.embedding_backend == "openai"
    return (str(s.data_dir), s.chroma_host, s.chroma_port, s.embedding_backend,
            s.embedding_model if openai else "", s.openai_base_url if openai else "",
            key_fingerprint(s.openai_api_key) if openai else "")


@st.cache_resource(show_spinner=False)
def _knowledge_base(name: str, store_key: tuple, _settings: Settings) -> KnowledgeBase:
    s = _settings
    return open_knowledge_base(s, name, client=_client(str(s.data_dir), s.chroma_host,
                                                       s.chroma_port))


def knowledge_base(name: str | None = None) -> KnowledgeBase:
    """The KnowledgeBase ``name`` (default: the one selected in the sidebar), cached per
    name and store. Raises ValueError for an invalid name, EmbeddingMismatch when the
    collection was built with another embedding model."""
    s = session_settings()
    return _knowledge_base(name or current_kb_name(), _store_key(s), s)


def knowledge_base_names() -> list[str]:
    """Knowledge bases on the store, plus ``default`` (which exists once something is written)."""
    return sorted(set(list_knowledge_bases(client())) | {DEFAULT_KB})


def current_kb_name() -> str:
    """The knowledge base selected in the sidebar (session state ``kb_name``)."""
    return st.session_state.setdefault("kb_name", DEFAULT_KB)


def runs() -> dict:
    """This session's runs: run id -> rag.runner.Run, oldest first."""
    return st.session_state.setdefault("runs", {})


def open_trace(run_id: str) -> None:
    """Show the run ``run_id`` on the Trace page (switches page; does not return)."""
    st.session_state["trace_run_id"] = run_id
    st.switch_page("pages/trace.py")


def engine_label(s: Settings) -> str:
    """The active engine in words, e.g. ``Offline engine (no keys)``."""
    if s.engine_name == "local":
        return ENGINE_OFFLINE
    where = f" at {s.openai_base_url}" if s.openai_base_url else ""
    return f"OpenAI{where}: grader {s.grader_model}, generator {s.generator_model}"


def md_escape(text: str) -> str:
    """``text`` with Markdown/LaTeX specials backslash-escaped, so extracted PDF text renders
    as written (``$`` would start LaTeX, ``*`` and ``_`` emphasis)."""
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in text)


def event_line(e: TraceEvent) -> str:
    """One Markdown line for a trace event: ``**2. grade_documents** — summary → next (why)``."""
    line = f"**{e.step}. {e.node}**"
    if e.attempt > 1:
        line += f" (visit {e.attempt})"
    line += f" — {md_escape(e.summary)}"
    if e.route:
        line += f" → {e.route.get('to', '?')} ({md_escape(e.route.get('why', ''))})"
    return line


def citation_label(c: Citation) -> str:
    """``[n] file.pdf, p. 3`` for a document chunk, ``[n] URL (web)`` for a web result."""
    if c.origin == "web":
        return f"[{c.n}] {c.source} (web)"
    return f"[{c.n}] {c.source}, p. {c.page}"


def human_size(n_bytes: int) -> str:
    """``1.2 MB``, ``830 kB`` or ``512 B`` (decimal units, as max_upload_mb uses)."""
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n_bytes >= factor:
            return f"{n_bytes / factor:.1f} {unit}"
    return f"{n_bytes} B"


def when(ts: float) -> datetime:
    """A UNIX time in seconds as a local datetime (for tables)."""
    return datetime.fromtimestamp(ts)
