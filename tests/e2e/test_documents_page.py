"""The Documents page through AppTest: report lines, the OCR column, the confirm step and the samples."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from rag.config import Settings
from rag.ingest.pipeline import ingest_files
from rag.store.chroma import open_knowledge_base
from tests.e2e.conftest import plain

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
ENCRYPTED = DATA / "tricky-pdfs" / "pypdf__encryption__r4-aes-user-password.pdf"
SCANNED = DATA / "tricky-pdfs" / "ocrmypdf__c02-22.pdf"
NOTE = ("note.txt", b"Retrace keeps a trace of every run.", "text/plain")
OTHER = ("other.txt", b"Another short note about grading.", "text/plain")


def documents() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("app_pages/documents.py").run()
    assert not at.exception, at.exception
    return at


def index(at: AppTest, key: str, *files) -> None:
    at.file_uploader(key=key).set_value(list(files)).run()
    at.button(key="docs_index").click().run()
    assert not at.exception, at.exception


def test_one_chunk_is_said_in_the_singular(data_dir):
    at = documents()
    index(at, "docs_uploader", NOTE)
    assert "note.txt: ingested 1 page, 1 chunk" in [plain(s.value) for s in at.success]
    assert "note.txt: 1 chunk over 1 page" in [plain(c.value) for c in at.caption]


def test_the_lines_of_an_earlier_upload_are_cleared_by_the_next(data_dir):
    at = documents()
    index(at, "docs_uploader", NOTE)
    assert any(plain(s.value).startswith("note.txt: ingested") for s in at.success)
    # the next upload: choosing its files clears the earlier lines, indexing shows only its own
    at.file_uploader(key="docs_uploader_1").set_value([OTHER]).run()
    assert not any(plain(s.value).startswith("note.txt: ingested") for s in at.success)
    at.button(key="docs_index").click().run()
    lines = [plain(s.value) for s in at.success]
    assert any(line.startswith("other.txt: ingested") for line in lines), lines
    assert not any(line.startswith("note.txt") for line in lines), lines


def test_the_password_label_holds_no_markdown_escape(data_dir):
    at = documents()
    index(at, "docs_uploader", (ENCRYPTED.name, ENCRYPTED.read_bytes(), "application/pdf"))
    field = at.text_input(key=f"docs_pw_{ENCRYPTED.name}")
    # an input's label is also its accessible name (aria-label), where a backslash escape shows as is
    assert "\\" not in field.label, field.label
    assert f"**{ENCRYPTED.name}**" in [plain(m.value) for m in at.markdown]


def test_the_table_counts_pages_read_by_ocr(data_dir):
    kb = open_knowledge_base(Settings.from_env({}, data_dir=data_dir))
    assert [r.status for r in ingest_files(kb, [SCANNED])] == ["ingested"]
    at = documents()
    table = at.dataframe[0].value
    assert int(table["OCR pages"].iloc[0]) == 1 and int(table["Pages"].iloc[0]) == 1


def test_a_delete_needs_a_confirm_step(data_dir):
    at = documents()
    index(at, "docs_uploader", NOTE)
    sha = at.selectbox(key="docs_preview").value
    assert at.button(key="docs_delete_confirm").disabled  # no tick, no delete
    assert list(at.dataframe[0].value["File"]) == ["note.txt"]
    at.checkbox(key=f"docs_delete_sure_{sha}").check().run()
    at.button(key="docs_delete_confirm").click().run()
    assert "Deleted note.txt (1 chunk)." in [plain(s.value) for s in at.success]


def test_the_sample_knowledge_base_is_one_click_from_documents_with_documents_of_ones_own(data_dir):
    at = documents()
    index(at, "docs_uploader", NOTE)
    at.button(key="docs_samples").click().run()
    assert not at.exception, at.exception
    assert at.session_state["kb_name"] == "sample"
    assert any(plain(s.value).startswith("Loaded 3 sample documents") for s in at.success)
    assert list(at.dataframe[0].value["File"])  # the samples, listed at once
    # a second click on another page just selects it again (nothing is indexed twice)
    at.session_state["kb_switch_to"] = "default"
    at.run()
    at.button(key="docs_samples").click().run()
    assert at.session_state["kb_name"] == "sample"


def test_the_sample_knowledge_base_is_one_click_from_an_empty_evaluate_page(data_dir):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("app_pages/evaluate.py").run()
    assert any("is empty" in i.value for i in at.info)
    at.button(key="ev_samples").click().run()
    assert not at.exception, at.exception
    assert at.session_state["kb_name"] == "sample"
    assert not any("is empty" in i.value for i in at.info)
    assert not at.button(key="ev_run").disabled


def _progress_script(pages: int, seconds_per_page: float) -> None:
    """A bar moved by the Documents page's ``on_page`` callback over ``pages`` OCR pages of one file."""
    import streamlit as st

    from app_pages import _docs

    now = [100.0]
    bar = st.progress(0.0, text="Starting…")
    on_page = _docs.page_progress(bar, {"file": 0, "files": 1}, clock=lambda: now[0])
    for done in range(1, pages + 1):
        on_page("scan.pdf", done, 100, True)
        now[0] += seconds_per_page


def test_a_long_scan_shows_the_expected_time_left(data_dir):
    at = AppTest.from_function(_progress_script, args=(4, 2.0)).run()
    assert not at.exception, at.exception
    # 3 pages in 6 s after the first: 2 s a page, 96 pages left
    assert plain(at.progress[0].text) == ("Indexing scan.pdf: page 4 of 100 read by OCR"
                                          " · about 3 min 12 s left")
    assert at.progress[0].value == 4
    at = AppTest.from_function(_progress_script, args=(1, 2.0)).run()  # one page: no rate measured yet
    assert plain(at.progress[0].text) == "Indexing scan.pdf: page 1 of 100 read by OCR"
