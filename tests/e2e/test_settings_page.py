"""Settings page through AppTest.

Keys typed for one session run the graph on the LLM engine (a local fake OpenAI-compatible server), never
reach os.environ or disk, and never serve another session.
"""

from __future__ import annotations

import os
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.conftest import LEWIS, ROOT
from tests.e2e.conftest import plain

APP = str(ROOT / "app.py")
KEY = "sk-session-typed-SECRET-9d1e"
TAVILY_KEY = "tvly-session-SECRET-3c"
QUESTION = "What is the retrieval component of RAG and how is it trained?"





def settings_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("app_pages/settings.py").run()
    assert not at.exception, at.exception
    return at


def table_text(at: AppTest) -> str:
    return " ".join(plain(str(cell)) for t in at.table
                    for column in t.value.to_dict().values() for cell in column.values())


def test_offline_by_default_and_tests_say_why(data_dir):
    at = settings_page()
    assert "Offline engine (no keys)" in table_text(at)
    at.button(key="settings_test_LLM server").click().run()
    assert "No OpenAI key" in plain(at.info[0].value) and not at.error  # a notice (issue 11)
    at.button(key="settings_test_Vector store (Chroma)").click().run()
    assert "knowledge base(s)" in plain(at.success[0].value)


def test_session_keys_run_the_llm_engine_and_stay_in_the_session(data_dir, fake, tavily):
    at = settings_page()
    at.text_input[0].input(KEY)
    at.text_input[1].input(fake.base_url)
    at.text_input[2].input(TAVILY_KEY)
    at.button[0].click().run()  # "Use for this session"
    assert not at.exception, at.exception
    assert f"OpenAI at {fake.base_url}" in table_text(at)
    assert "Tavily" in table_text(at)

    at.button(key="settings_test_LLM server").click().run()
    assert "replied 'The retriever is" in plain(at.success[0].value)
    assert fake.headers[-1]["authorization"] == f"Bearer {KEY}"

    # the same session asks a question: every judgment goes to the server
    at.switch_page("app_pages/documents.py").run()
    at.switch_page("app_pages/chat.py").run()
    from app_pages import _session
    from rag.ingest.pipeline import ingest_files

    # index through the session's own knowledge base (OpenAI-compatible embeddings)
    with_keys = _session.settings().with_(openai_api_key=KEY, openai_base_url=fake.base_url)
    from rag.store.chroma import open_knowledge_base

    report = ingest_files(open_knowledge_base(with_keys), [LEWIS])[0]
    assert report.status == "ingested", report.line()
    fake.requests.clear()
    at.chat_input[0].set_value(QUESTION).run()
    assert not at.exception, at.exception
    run = next(iter(at.session_state["runs"].values()))
    assert run.engine == "openai" and run.llm_calls == len(fake.kinds()) > 0
    assert "The retriever is a DPR bi-encoder" in run.answer

    # the key went nowhere but the server
    assert KEY not in os.environ.values() and TAVILY_KEY not in os.environ.values()
    for path in Path(data_dir).rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in run.model_dump_json()

    # another browser session sees the offline engine, not this session's key
    other = settings_page()
    assert "Offline engine (no keys)" in table_text(other)


def test_forget_session_keys(data_dir, fake):
    at = settings_page()
    at.text_input[0].input(KEY)
    at.text_input[1].input(fake.base_url)
    at.button[0].click().run()
    assert "OpenAI" in table_text(at)
    at.button[1].click().run()  # "Forget session keys"
    assert "Offline engine (no keys)" in table_text(at)
