"""The Streamlit pages end to end through AppTest: real Chroma in tmp dirs, real PDFs, real graph."""

from __future__ import annotations

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.e2e.conftest import plain

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
DATA = ROOT.parent / "shared" / "data"
LEWIS = DATA / "papers" / "2005.11401v4_lewis_rag.pdf"
# r6-user-password.pdf opens with the empty owner password, so pypdf reads it without asking;
# the AES r4 file really needs its user password.
ENCRYPTED = DATA / "tricky-pdfs" / "pypdf__encryption__r4-aes-user-password.pdf"
SCANNED = DATA / "tricky-pdfs" / "ocrmypdf__c02-22.pdf"
PASSWORD = "asdfzxcv"
PDF = "application/pdf"
QUESTION = "What is the retrieval component of RAG and how is it trained?"



def upload(path: Path) -> tuple[str, bytes, str]:
    return (path.name, path.read_bytes(), PDF)




def open_app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    return at


def kb_for(data_dir: Path):
    from rag.config import Settings
    from rag.store.chroma import open_knowledge_base

    return open_knowledge_base(Settings.from_env({}, data_dir=data_dir))


def test_sidebar_shows_engine_and_data_dir(data_dir):
    at = open_app()
    side = [plain(c.value) for c in at.sidebar.caption]
    assert "Offline engine (no keys)" in side
    assert any(str(data_dir.resolve()) in c for c in side), side
    assert at.session_state["kb_name"] == "default"


def test_documents_index_password_retry_scanned_and_delete(data_dir):
    at = open_app()
    at.switch_page("app_pages/documents.py").run()
    assert not at.exception
    assert [m.value for m in at.metric] == ["0", "0"]

    at.file_uploader(key="docs_uploader").set_value(
        [upload(LEWIS), upload(ENCRYPTED), upload(SCANNED)]).run()
    assert at.toggle(key="docs_ocr").value is True  # OCR is on by default
    at.toggle(key="docs_ocr").set_value(False).run()  # the scan then fails, with advice
    at.button(key="docs_index").click().run()
    assert not at.exception, at.exception

    ok = [plain(s.value) for s in at.success]
    failed = [plain(e.value) for e in at.error]
    assert f"{LEWIS.name}: ingested 19 pages, 88 chunks" in ok
    assert f"{ENCRYPTED.name}: encrypted: password required" in failed
    assert f"{SCANNED.name}: no extractable text (1 page; scanned? turn OCR on)" in failed, failed

    table = at.dataframe[0].value
    assert list(table["File"]) == [LEWIS.name]
    assert int(table["Pages"].iloc[0]) == 19 and int(table["Chunks"].iloc[0]) == 88
    assert [m.value for m in at.metric] == ["1", "88"]

    # A wrong password is reported and asked for again; the right one indexes the file.
    pw = f"docs_pw_{ENCRYPTED.name}"
    at.text_input(key=pw).input("not-it")
    at.button(key="docs_retry").click().run()
    assert f"{ENCRYPTED.name}: wrong password" in [plain(e.value) for e in at.error]
    assert at.text_input(key=pw).value == ""  # the typed password is not kept
    at.text_input(key=pw).input(PASSWORD)
    at.button(key="docs_retry").click().run()
    assert not at.exception, at.exception
    ok = [plain(s.value) for s in at.success]
    assert any(s.startswith(f"{ENCRYPTED.name}: ingested 1 page") for s in ok), ok
    assert f"{LEWIS.name}: ingested 19 pages, 88 chunks" in ok
    assert not any(t.key == pw for t in at.text_input)
    assert "docs_locked" in at.session_state and at.session_state["docs_locked"] == {}
    assert sorted(at.dataframe[0].value["File"]) == sorted([LEWIS.name, ENCRYPTED.name])

    # Preview the Lewis paper's chunks, then delete it.
    sha = next(d.doc_sha for d in kb_for(data_dir).documents() if d.source == LEWIS.name)
    at.selectbox(key="docs_preview").set_value(sha).run()
    chunks = at.dataframe[1].value
    assert len(chunks) == 88 and list(chunks["Chunk"])[:3] == [0, 1, 2]
    assert set(chunks["Page"]) == set(range(1, 20))
    # a confirm step: the delete button stays disabled until the box is ticked
    assert at.button(key="docs_delete_confirm").disabled
    at.checkbox(key=f"docs_delete_sure_{sha}").check().run()
    assert not at.button(key="docs_delete_confirm").disabled
    at.button(key="docs_delete_confirm").click().run()
    assert not at.exception, at.exception
    assert f"Deleted {LEWIS.name} (88 chunks)." in [plain(s.value) for s in at.success]
    assert list(at.dataframe[0].value["File"]) == [ENCRYPTED.name]
    assert [d.source for d in kb_for(data_dir).documents()] == [ENCRYPTED.name]


def test_chat_on_empty_kb_offers_and_loads_samples(data_dir):
    at = open_app()
    assert "is empty" in at.info[0].value
    at.button(key="chat_load_samples").click().run()
    assert not at.exception, at.exception
    assert any(s.value.startswith("Loaded 3 sample documents") for s in at.success)
    assert not any("is empty" in i.value for i in at.info)
    # into their own knowledge base, now selected; never into the user's
    assert at.session_state["kb_name"] == "sample"
    from rag.config import Settings
    from rag.store.chroma import open_knowledge_base

    kb = open_knowledge_base(Settings.from_env({}, data_dir=data_dir), "sample")
    assert kb.count() > 0
    assert sorted(d.source for d in kb.documents()) == [
        "glossary.md", "how-the-graph-decides.md", "using-retrace.md"]
    assert kb_for(data_dir).count() == 0


def test_chat_answers_with_citations_and_opens_trace(data_dir):
    from rag.ingest.pipeline import ingest_files

    [report] = ingest_files(kb_for(data_dir), [LEWIS])
    assert report.status == "ingested"

    at = open_app()
    at.chat_input[0].set_value(QUESTION).run()
    assert not at.exception, at.exception

    runs = at.session_state["runs"]
    assert len(runs) == 1
    run = next(iter(runs.values()))
    assert run.error is None and run.answer and run.citations
    labels = [plain(e.label) for e in at.expander]
    cited = [lab for lab in labels if re.fullmatch(rf"\[\d+\] {re.escape(LEWIS.name)} p\.\d+", lab)]
    assert cited, labels
    body = [plain(m.value) for m in at.markdown]
    # issue 13: route_question opens the run in Full
    assert any(line.startswith("**1. route_question** —") for line in body), body
    assert any(line.startswith("**2. decompose_query** —") for line in body), body
    assert any(line.startswith("**3. retrieve** —") for line in body), body
    assert any(line.startswith("**4. grade_documents** —") and "→" in line for line in body)
    assert plain(run.stop_reason) in [plain(c.value) for c in at.caption]
    assert at.session_state["chat_messages"][-1]["run_id"] == run.id

    at.button(key=f"chat_trace_{run.id}").click().run()
    assert not at.exception, at.exception
    assert at.session_state["trace_run_id"] == run.id
    assert len(at.chat_input) == 0  # the chat page is no longer the one rendered
    titles = [t.value for t in at.title]
    assert "Chat" not in titles and "Trace" in titles, titles


def test_presets_set_the_toggles_and_survive_page_switches(data_dir):
    at = open_app()
    toggles = ["grading", "rewriting", "web_fallback", "grounding_check", "answer_check"]

    def state():
        return {name: at.toggle(key=f"chat_w_{name}").value for name in toggles}

    assert at.selectbox(key="chat_w_preset").value == "full"
    assert all(state().values())

    at.selectbox(key="chat_w_preset").set_value("naive").run()
    assert not any(state().values())
    at.selectbox(key="chat_w_preset").set_value("self-rag").run()
    assert state() == {"grading": True, "rewriting": False, "web_fallback": False,
                       "grounding_check": True, "answer_check": True}
    at.toggle(key="chat_w_rewriting").set_value(True).run()
    assert any("Custom" in c.value for c in at.sidebar.caption)

    at.switch_page("app_pages/documents.py").run()
    at.switch_page("app_pages/chat.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="chat_w_preset").value == "self-rag"
    assert state()["rewriting"] is True and state()["web_fallback"] is False


def test_bad_configuration_is_an_error_message_not_a_traceback(data_dir, monkeypatch):
    monkeypatch.setenv("CHROMA_PORT", "eight thousand")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    assert any("CHROMA_PORT must be a number" in plain(e.value) for e in at.error)


def test_a_kb_link_selects_an_existing_kb_and_never_creates_one(data_dir):
    from rag.config import Settings
    from rag.store import kbs
    from rag.store.chroma import make_client

    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["kb"] = "no-such-kb"
    at.run()
    assert not at.exception, at.exception
    errors = [plain(e.value) for e in at.sidebar.error]
    assert any("does not exist: 'no-such-kb'" in e for e in errors), errors
    assert at.session_state["kb_name"] == "default"
    client = make_client(Settings.from_env({}, data_dir=data_dir))
    assert "no-such-kb" not in kbs.names(client)
    assert at.query_params["kb"] in ("default", ["default"])  # the address now names the selected one
