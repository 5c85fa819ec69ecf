"""What the pages share per process and per browser session.

Cached settings, the Chroma client, knowledge bases, the run history and prices; this session's id, keys and
runs.

Only Streamlit glue lives here; everything the app does is in ``rag/``. Nothing is built at
import time: each resource is made on first use and cached with ``st.cache_resource``.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets as _secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import streamlit as st
from chromadb.api import ClientAPI
from langgraph.checkpoint.base import BaseCheckpointSaver

from app_pages import _login
from app_pages._safe import safe
from rag.config import DEFAULT_COLLECTION, Settings
from rag.history import RunStore, location
from rag.history.checkpoints import open_checkpointer
from rag.models import Run
from rag.store import kbs
from rag.store.chroma import KnowledgeBase, StoreError, make_client, open_knowledge_base
from rag.store.client import EmbeddingKeyMissing
from rag.terminal import printable
from rag.trace import formats
from rag.trace.pricing import DEFAULT_PRICES, PRICES_ENV, Price, load_prices

DEFAULT_KB = DEFAULT_COLLECTION
ENGINE_OFFLINE = "Offline engine (no keys)"
SECRET_NAMES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TAVILY_API_KEY", "TAVILY_API_BASE_URL")
SESSION_KEYS = "settings_session"
"""Session-state key of what a user typed on the Settings page (their keys, for their session
only: never written to disk, os.environ, a trace, a log or an export)."""
SESSION_ID = "session_id"
"""Session-state key of this browser session's random id (its runs are "my runs")."""
SESSION_COOKIE = "retrace_session"
"""The browser cookie that holds :data:`SESSION_ID` across refreshes and server restarts."""
_SESSION_ID_FORM = re.compile(r"[0-9a-f]{16}")
RUNS = "runs"
"""Session-state key of this session's runs (run id -> Run, oldest first)."""
KB_NAME = "kb_name"
"""Session-state key (and sidebar widget key) of the selected knowledge base."""
KB_PENDING = "kb_switch_to"
"""Session-state key of a knowledge base to select on the next run (the sidebar widget's own key
cannot be set once it is drawn)."""


# -- settings and keys ----------------------------------------------------------------------
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
    """The server's settings.

    The environment, plus keys from ``.streamlit/secrets.toml``, then ``.env``; read once per process.
    They hold the operator's keys only, never a user's.

    Raises ValueError on a malformed number in the environment (not cached, so a fix is seen
    on the next rerun).
    """
    return Settings.from_env(_from_secrets(dict(os.environ)), dotenv=True)


def session_settings() -> Settings:
    """This session's settings.

    The server's, with the keys and base URL typed on the Settings page (if any) for this browser session
    only.
    """
    base = settings()
    typed = st.session_state.get(SESSION_KEYS) or {}
    changes = {k: v for k, v in typed.items() if v}
    return base.with_(**changes) if changes else base


def key_fingerprint(secret: str | None) -> str:
    """A short one-way fingerprint of a key, to tell cache entries apart without holding it."""
    return hashlib.sha256(secret.encode()).hexdigest()[:16] if secret else ""


def secrets() -> list[str | None]:
    """The keys this session could hold, for exports to redact (a Run holds none)."""
    s, server = session_settings(), settings()
    return [s.openai_api_key, s.tavily_api_key, server.openai_api_key, server.tavily_api_key]


def engine_label(s: Settings) -> str:
    """The active engine in words.

    For example ``Offline engine (no keys)`` (plain text: it holds a base URL, so render it through
    :func:`app_pages._safe.safe`).
    """
    if s.engine_name == "local":
        return ENGINE_OFFLINE
    where = f" at {s.openai_base_url}" if s.openai_base_url else ""
    return f"OpenAI{where}: grader {s.grader_model}, generator {s.generator_model}"


# -- Chroma and knowledge bases -------------------------------------------------------------
@st.cache_resource(show_spinner=False)
def _client(data_dir: str, host: str | None, port: int) -> ClientAPI:
    return make_client(Settings(data_dir=Path(data_dir), chroma_host=host, chroma_port=port))


def client() -> ClientAPI:
    """The Chroma client for the current settings, one per (data dir, host, port)."""
    s = settings()
    return _client(str(s.data_dir), s.chroma_host, s.chroma_port)


def _store_key(s: Settings) -> tuple:
    # Everything that decides which collection is opened and how it embeds. A knowledge base
    # embeds with the model that built it, which may be OpenAI's whatever is configured, so
    # the cached object may hold a key: entries are told apart by the key's fingerprint and
    # the server, so one user's key never serves another user.
    return (str(s.data_dir), s.chroma_host, s.chroma_port, s.embedding_backend, s.embedding_model,
            s.openai_base_url or "", key_fingerprint(s.openai_api_key))


@st.cache_resource(show_spinner=False)
def _knowledge_base(name: str, store_key: tuple, _settings: Settings) -> KnowledgeBase:
    s = _settings
    return open_knowledge_base(s, name, client=_client(str(s.data_dir), s.chroma_host,
                                                       s.chroma_port))


def knowledge_base(name: str | None = None) -> KnowledgeBase:
    """The KnowledgeBase ``name`` (default: the one selected in the sidebar), cached per name and store.

    It embeds with the model that built it, whatever key is typed later. Raises ValueError for an invalid
    name, EmbeddingKeyMissing when its model needs an OpenAI key this session lacks.
    """
    s = session_settings()
    name = name or current_kb_name()
    # keyed by the collection's id too: a knowledge base deleted or re-indexed elsewhere (the CLI,
    # another session) is opened afresh instead of through its old collection
    return _knowledge_base(name, (*_store_key(s), _collection_id(name)), s)


def _collection_id(name: str) -> str:
    try:
        return next((str(c.id) for c in client().list_collections() if c.name == name), "")
    except Exception:  # the store is down: opening it says so
        return ""


def knowledge_base_names() -> list[str]:
    """Knowledge bases on the store, plus ``default`` (which exists once something is written)."""
    return sorted(set(kbs.names(client())) | {DEFAULT_KB})


def kb_infos() -> list[kbs.KnowledgeBaseInfo]:
    """Every knowledge base on the store with its embedding model and size, sorted by name."""
    return kbs.list_infos(client())


def kb_model_line(s: Settings) -> str:
    """The selected knowledge base and the embedding model it keeps, in words (plain text: render it safely).

    Says when that model needs an OpenAI key ``s`` lacks; ``unavailable`` when the store cannot be listed.
    """
    name = current_kb_name()
    try:
        info = next((i for i in kb_infos() if i.name == name), None)
    except Exception:  # the store is down: the Test connection button says why
        return f"{name} (unavailable)"
    if info is None:
        return f"{name} (empty: new documents get the embeddings above)"
    note = " (needs an OpenAI key)" if info.needs_key and not s.openai_api_key else ""
    return f"{name}: {info.embedding or 'unknown'} embeddings, {formats.plural(info.chunks, 'chunk')}{note}"


def forget_knowledge_bases() -> None:
    """Drop the cached knowledge bases (after one was deleted or re-indexed: they hold its old collection)."""
    _knowledge_base.clear()


def current_kb_name() -> str:
    """The knowledge base selected in the sidebar (or by :func:`select_kb` when the sidebar was not drawn)."""
    if pending := st.session_state.pop(KB_PENDING, None):
        st.session_state[KB_NAME] = pending
    return st.session_state.setdefault(KB_NAME, DEFAULT_KB)


KB_LINK = "_kb_link"


def note_kb_link() -> None:
    """Remember the knowledge base the address names (``?kb=NAME``), once per session, before any redirect."""
    if KB_LINK not in st.session_state:
        st.session_state[KB_LINK] = st.query_params.get("kb") or ""


def kb_from_link(names: list[str]) -> str | None:
    """Select the knowledge base the link named (:func:`note_kb_link`), once per session; never create one.

    Returns None, or one line saying that the named knowledge base does not exist and which do (the
    caller shows it as plain text). Call before :func:`kb_picker` draws the selector.
    """
    wanted = st.session_state.get(KB_LINK)
    if not wanted:
        return None
    st.session_state[KB_LINK] = ""
    if wanted in names:
        st.session_state[KB_NAME] = wanted
        return None
    return (f"The link names a knowledge base that does not exist: '{printable(wanted)}'. "
            f"The knowledge bases are: {', '.join(names) or 'none yet'}.")


def kb_to_link(name: str) -> None:
    """Keep the selected knowledge base in the address (``?kb=NAME``): a refresh or a shared link keeps it."""
    if st.query_params.get("kb") != name:
        st.query_params["kb"] = name


def select_kb(name: str) -> None:
    """Make ``name`` the selected knowledge base from the next run on (call ``st.rerun()`` after)."""
    st.session_state[KB_PENDING] = name


def kb_picker(names: list[str]) -> str:
    """The sidebar's knowledge-base selector over ``names`` (plus the current one); returns the selected name.

    A knowledge base chosen by :func:`select_kb` is selected first.
    """
    current = current_kb_name()  # takes a pending selection before the widget is drawn
    if current not in names:
        names = sorted({*names, current})
    return st.selectbox("Knowledge base", names, key=KB_NAME,
                        help="Questions are asked of this knowledge base; the Documents page manages them.")


@contextmanager
def stop_on_store_error(name: str) -> Iterator[None]:
    """Around opening and reading the knowledge base ``name``.

    A failure becomes one red line saying what broke (no stack trace), and the page stops there.
    """
    try:
        yield
    except EmbeddingKeyMissing as exc:  # one line: which model, which key, what to do
        st.error(safe(str(exc)))
        st.stop()
    except (StoreError, ValueError) as exc:  # bad name, other embedding model
        st.error(safe(f"Cannot open the knowledge base '{name}': {exc}"))
        st.stop()
    except Exception as exc:  # Chroma unreachable or corrupt
        st.error(safe(f"Cannot read the knowledge base '{name}': {type(exc).__name__}: {exc}"))
        st.stop()


# -- this session's runs and the history ----------------------------------------------------
def session_id() -> str:
    """The owner of what this session makes: ``user:<email>`` with login on, else this browser's random id.

    Without login the id is made once per browser, never shared, and kept in the browser's cookie
    :data:`SESSION_COOKIE` (see :func:`remember_browser`), so a page refresh or a server restart keeps the
    session's runs and conversations; another browser (or a private window) has its own.
    """
    if (user := _login.owner_id()) is not None:
        return user
    sid = st.session_state.get(SESSION_ID)
    if sid is None:
        try:
            saved = st.context.cookies.get(SESSION_COOKIE) or ""
        except Exception:  # no browser (AppTest, bare mode): a new id
            saved = ""
        sid = (saved if isinstance(saved, str) and _SESSION_ID_FORM.fullmatch(saved)
               else _secrets.token_hex(8))
        st.session_state[SESSION_ID] = sid
    return sid


def remember_browser() -> None:
    """Write this session's id to the browser's cookie, when the browser does not hold it yet.

    A first-party cookie on this server's path only, written by a script of ours (the id is 16 hex digits,
    never data); the app makes no other use of cookies.
    """
    if _login.enabled():  # the login's own cookie says who this is
        return
    sid = session_id()
    try:
        held = st.context.cookies.get(SESSION_COOKIE)
    except Exception:
        return
    if held is not None and not isinstance(held, str):  # no browser (AppTest): nothing to write to
        return
    if held != sid and _SESSION_ID_FORM.fullmatch(sid) and not st.session_state.get("_cookie_written"):
        st.session_state["_cookie_written"] = True
        st.html(f"<script>document.cookie = '{SESSION_COOKIE}={sid}; path=/; max-age=31536000; "
                "SameSite=Strict';</script>", unsafe_allow_javascript=True)


def runs() -> dict[str, Run]:
    """This session's runs: run id -> Run, oldest first."""
    return st.session_state.setdefault(RUNS, {})


@st.cache_resource(show_spinner=False)
def _store(path: str, data_dir: str) -> RunStore:
    return RunStore.opened(path, data_dir)  # a database URL: data_dir's runs.sqlite imported into it once


def store() -> RunStore:
    """The run store: the database ``RAG_DATABASE_URL`` names, else ``data_dir/runs.sqlite``.

    With a database URL, ``data_dir/runs.sqlite``'s runs and conversations are copied into it the first time.
    Raises OSError when it cannot be opened.
    """
    return _store(location(settings()), str(settings().data_dir))


def checkpoints() -> BaseCheckpointSaver:
    """The graph's checkpointer, where a conversation's turns are (opened once per process and database).

    Raises OSError when its database cannot be opened.
    """
    return open_checkpointer(session_settings())


def keep(run: Run, *, comparison_id: str | None = None) -> str | None:
    """Keep ``run`` in this session and save it to the history.

    Returns None, or why it could not be saved (the run stays usable in this session).
    """
    runs()[run.id] = run
    try:
        store().save(run, session_id(), comparison_id=comparison_id)
    except Exception as exc:  # a full disk must not lose the answer the user just got
        return f"The run could not be saved to the history: {type(exc).__name__}: {exc}"
    return None


def open_trace(run_id: str) -> None:
    """Show the run ``run_id`` on the Trace page, with its knowledge base selected (switches page; no return).

    A run of another owner (an admin's read-only view) is opened with the Trace page's list of everyone's.
    """
    st.session_state["trace_run_id"] = run_id
    run = runs().get(run_id)
    try:
        run = run or store().get(run_id)
        others = run is not None and run_id not in runs() and store().owner(run_id) != session_id()
    except Exception:  # an unreadable history: the Trace page says so
        others = False
    if run is not None and run.knowledge_base:
        select_kb(run.knowledge_base)
    if others and _login.sees_everyone():
        st.session_state["trace_w_all"] = True
    st.switch_page("app_pages/trace.py")


@st.cache_resource(show_spinner=False)
def _prices(raw: str) -> dict[str, Price]:
    return load_prices({PRICES_ENV: raw})


def prices() -> dict[str, Price]:
    """The price table (RAG_PRICES_JSON over the defaults).

    When RAG_PRICES_JSON is malformed, says so in red and returns the built-in prices.
    """
    try:
        return _prices(os.environ.get(PRICES_ENV, ""))
    except ValueError as exc:
        st.error(safe(f"{exc}. Costs use the built-in prices."))
        return dict(DEFAULT_PRICES)
