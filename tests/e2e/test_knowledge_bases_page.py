"""Knowledge bases in the app (AppTest): samples in their own, a key typed later, create, delete, re-index.

Real Chroma in a temporary data dir, the real papers, the real graph; the fake OpenAI-compatible server
(tests/fakes/servers.py) for a knowledge base embedded by OpenAI.
"""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from rag.config import Settings
from rag.ingest.pipeline import ingest_files
from rag.samples import sample_files
from rag.store import kbs
from rag.store.chroma import make_client, open_knowledge_base
from tests.conftest import LEWIS, ROOT, SELF_RAG
from tests.e2e.conftest import plain

APP = str(ROOT / "app.py")
PDF = "application/pdf"
KEY = "sk-typed-later-0b7"
PAPER_QUESTIONS = [
    "What is the retrieval component of RAG and how is it trained?",
    "How does Self-RAG use reflection tokens to decide when to retrieve?",
    "How does retrieval-augmented generation reduce hallucination?",
    "What does the generator condition on when it writes an answer?",
]



def open_app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception, at.exception
    return at


def ask(at: AppTest, question: str):
    before = set(at.session_state["runs"]) if "runs" in at.session_state else set()
    at.chat_input[0].set_value(question).run()
    assert not at.exception, at.exception
    [new] = [r for rid, r in at.session_state["runs"].items() if rid not in before]
    return new


def test_samples_load_into_their_own_kb_and_are_never_cited_for_the_papers(data_dir):
    at = open_app()
    at.button(key="chat_load_samples").click().run()
    assert not at.exception, at.exception
    assert at.session_state["kb_name"] == "sample"

    # back to the user's knowledge base; upload two papers on the Documents page
    at.session_state["kb_name"] = "default"  # AppTest draws app.py's sidebar on its first run only
    at.switch_page("app_pages/documents.py").run()
    at.file_uploader(key="docs_uploader").set_value(
        [(p.name, p.read_bytes(), PDF) for p in (LEWIS, SELF_RAG)]).run()
    at.button(key="docs_index").click().run()
    assert not at.exception, at.exception
    assert sorted(at.dataframe[0].value["File"]) == sorted([LEWIS.name, SELF_RAG.name])

    samples = {p.name for p in sample_files()}
    settings = Settings.from_env({}, data_dir=data_dir)
    assert {d.source for d in open_knowledge_base(settings, "sample").documents()} == samples
    assert {d.source for d in open_knowledge_base(settings).documents()} == {LEWIS.name, SELF_RAG.name}

    at.switch_page("app_pages/chat.py").run()
    cited = []
    for question in PAPER_QUESTIONS:
        run = ask(at, question)
        assert run.error is None, run.error
        sources = {c.source for c in run.citations}
        assert not sources & samples, (question, sources)
        cited += sources
    assert set(cited) <= {LEWIS.name, SELF_RAG.name} and cited  # the papers answered


def test_typing_a_key_on_settings_leaves_the_existing_kb_usable(data_dir, fake):
    [report] = ingest_files(open_knowledge_base(Settings.from_env({}, data_dir=data_dir)), [LEWIS])
    assert report.status == "ingested"
    at = open_app()
    at.switch_page("app_pages/settings.py").run()
    at.text_input[0].input(KEY)
    at.text_input[1].input(fake.base_url)
    at.button[0].click().run()  # "Use for this session"
    assert not at.exception, at.exception

    # Settings says which model the selected knowledge base keeps
    table = " ".join(plain(str(v)) for v in at.table[0].value["value"])
    assert "default: retrace-hashing/dim=1024 embeddings, 88 chunks" in table
    at.switch_page("app_pages/chat.py").run()
    assert not at.error, [e.value for e in at.error]
    assert any("retrace-hashing/dim=1024" in plain(c.value) for c in at.caption)
    fake.requests.clear()
    run = ask(at, PAPER_QUESTIONS[0])
    assert not at.error, [e.value for e in at.error]
    assert run.error is None and run.engine == "openai"  # the typed key runs the LLM engine...
    assert {c.source for c in run.citations} == {LEWIS.name}  # ...over the existing knowledge base
    assert fake.requests and not [r for r in fake.requests if "input" in r]  # embedded offline, as built


def test_an_openai_kb_without_a_key_says_so_in_one_line_and_can_be_reindexed(data_dir, fake):
    settings = Settings.from_env({}, data_dir=data_dir)
    online = settings.with_(openai_api_key="sk-builder", openai_base_url=fake.base_url)
    kbs.create(make_client(settings), online, "oa-papers", "openai/text-embedding-3-small")
    [report] = ingest_files(open_knowledge_base(online, "oa-papers"), [LEWIS])
    assert report.status == "ingested"

    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["kb_name"] = "oa-papers"
    at.run()
    assert not at.exception, at.exception
    [error] = [plain(e.value) for e in at.error]  # Chat: one line, nothing else broken
    assert "\n" not in error and "'oa-papers'" in error
    assert "need an OpenAI key" in error and "Settings" in error

    at.switch_page("app_pages/documents.py").run()
    assert not at.exception, at.exception
    assert [plain(e.value) for e in at.error] == [error]
    # the knowledge-base section is still there: re-index it with the offline model
    assert at.selectbox(key="kb_w_reindex_model").value == "retrace-hashing/dim=1024"
    at.button(key="kb_reindex").click().run()
    assert not at.exception, at.exception
    assert "Re-indexed 'oa-papers': 88 chunks, now embedded by retrace-hashing/dim=1024." in [
        plain(s.value) for s in at.success]
    assert not at.error
    assert open_knowledge_base(settings, "oa-papers").embedding == "retrace-hashing/dim=1024"

    at.switch_page("app_pages/chat.py").run()
    run = ask(at, PAPER_QUESTIONS[0])
    assert run.error is None and {c.source for c in run.citations} == {LEWIS.name}


def test_create_switch_and_delete_knowledge_bases_on_the_documents_page(data_dir):
    at = open_app()
    at.switch_page("app_pages/documents.py").run()
    at.text_input(key="kb_w_new_name").input("bad name <b>x</b>")
    at.button(key="FormSubmitter:kb_create_form-Create").click().run()
    assert not at.exception, at.exception
    [error] = [plain(e.value) for e in at.error]
    assert error.startswith("invalid knowledge base name 'bad name <b>x</b>'")  # shown as text

    at.text_input(key="kb_w_new_name").input("my-papers")
    at.button(key="FormSubmitter:kb_create_form-Create").click().run()
    assert not at.exception, at.exception
    assert ("Created the knowledge base 'my-papers' (retrace-hashing/dim=1024), now selected."
            in [plain(s.value) for s in at.success])
    assert at.session_state["kb_name"] == "my-papers"
    table = at.table[0].value
    assert [plain(v) for v in table["Knowledge base"]] == ["default", "my-papers"]  # Chat opened default
    assert list(table["Selected"]) == ["", "yes"]

    # each has its own document list: a file in my-papers is not in default
    at.file_uploader(key="docs_uploader").set_value([(LEWIS.name, LEWIS.read_bytes(), PDF)]).run()
    at.button(key="docs_index").click().run()
    assert [m.value for m in at.metric] == ["1", "88"]
    at.selectbox(key="kb_w_switch_my-papers").set_value("default").run()
    at.button(key="kb_switch").click().run()
    assert at.session_state["kb_name"] == "default"
    assert [m.value for m in at.metric] == ["0", "0"]

    at.selectbox(key="kb_w_switch_default").set_value("my-papers").run()
    at.button(key="kb_switch").click().run()
    assert [m.value for m in at.metric] == ["1", "88"]
    assert at.button(key="kb_delete_confirm").disabled  # until the confirm box is ticked
    at.checkbox(key="kb_delete_sure_my-papers").check().run()
    at.button(key="kb_delete_confirm").click().run()
    assert not at.exception, at.exception
    assert "Deleted the knowledge base 'my-papers' (88 chunks)." in [plain(s.value) for s in at.success]
    assert at.session_state["kb_name"] == "default"
    assert "my-papers" not in kbs.names(make_client(Settings.from_env({}, data_dir=data_dir)))


def test_a_knowledge_base_reindexed_elsewhere_is_reopened_not_served_stale(data_dir):
    settings = Settings.from_env({}, data_dir=data_dir)
    ingest_files(open_knowledge_base(settings), [LEWIS])
    at = open_app()
    assert any("retrace-hashing/dim=1024" in plain(c.value) for c in at.caption)
    kbs.reindex(make_client(settings), settings, "default", "hashing/dim=256")  # as `kb reindex` would
    at.run()
    assert not at.error, [e.value for e in at.error]
    assert any("retrace-hashing/dim=256" in plain(c.value) for c in at.caption)
    run = ask(at, PAPER_QUESTIONS[0])
    assert run.error is None and {c.source for c in run.citations} == {LEWIS.name}
