"""UI glue for run history and exports: this browser session's id, the run store, the price
table, keeping a run (in the session and in SQLite), and the secrets an export must never hold.

Only Streamlit glue lives here; the history itself is ``rag.history``.
"""

from __future__ import annotations

import os
import secrets as _secrets
from pathlib import Path
from typing import Optional

import streamlit as st

from pages import _shared
from rag.trace.pricing import PRICES_ENV, Price, load_prices
from rag.history import DB_NAME, RunStore
from rag.config import preset_label

SESSION_ID = "session_id"
"""Session-state key of this browser session's random id (its runs are "my runs")."""


def session_id() -> str:
    """This browser session's id: random, made once per session, never shared."""
    return st.session_state.setdefault(SESSION_ID, _secrets.token_hex(8))


@st.cache_resource(show_spinner=False)
def _store(path: str) -> RunStore:
    return RunStore(path)


def store() -> RunStore:
    """The run store at ``data_dir/runs.sqlite``. Raises OSError/sqlite3.Error when the data
    directory cannot hold it."""
    return _store(str(Path(_shared.settings().data_dir) / DB_NAME))


@st.cache_resource(show_spinner=False)
def _prices(raw: str) -> dict[str, Price]:
    return load_prices({PRICES_ENV: raw})


def prices() -> dict[str, Price]:
    """The price table (RAG_PRICES_JSON over the defaults). Raises ValueError when
    RAG_PRICES_JSON is malformed."""
    return _prices(os.environ.get(PRICES_ENV, ""))


def secrets() -> list[Optional[str]]:
    """The keys this session could hold, for exports to redact (a Run holds none)."""
    s = _shared.session_settings()
    return [s.openai_api_key, s.tavily_api_key, _shared.settings().openai_api_key,
            _shared.settings().tavily_api_key]


def keep(run, *, comparison_id: str | None = None) -> Optional[str]:
    """Keep ``run`` in this session and save it to the history. Returns None, or why it could
    not be saved (the run stays usable in this session)."""
    _shared.runs()[run.id] = run
    try:
        store().save(run, session_id(), comparison_id=comparison_id)
    except Exception as exc:  # a full disk must not lose the answer the user just got
        return f"The run could not be saved to the history: {type(exc).__name__}: {exc}"
    return None


def run_label(created_at: float, preset: str, question: str) -> str:
    """``14:03:22 · Full · What is …`` for pickers."""
    from datetime import date

    question = question if len(question) <= 80 else question[:79] + "…"
    when = _shared.when(created_at)
    stamp = f"{when:%H:%M:%S}" if when.date() == date.today() else f"{when:%Y-%m-%d %H:%M}"
    return f"{stamp} · {preset_label(preset)} · {question}"
