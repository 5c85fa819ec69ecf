"""The app on a shared database lists the conversations of its data directory's runs.sqlite (issue 20)."""

from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from rag.history import RunStore
from tests.conftest import ROOT
from tests.e2e.conftest import plain
from tests.integration.test_history_import import _fill

pytestmark = pytest.mark.server


def test_the_chat_sidebar_lists_the_imported_conversation(data_dir, database_url, monkeypatch):
    made = _fill(data_dir, "a-")
    monkeypatch.setenv("RAG_DATABASE_URL", database_url)  # the upgrade: same data dir, now a database
    st.cache_resource.clear()

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.session_state["session_id"] = "alice"
    at.run()
    assert not at.exception, at.exception
    title = RunStore(database_url).get_thread(made["thread"]).summary.title
    assert plain(at.button(key=f"chat_t_{made['thread']}").label) == f"{title} (3)"
