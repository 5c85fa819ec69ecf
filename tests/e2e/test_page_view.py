"""The cited passage on its page from Chat and Trace, through AppTest (real Chroma, real PDFs, real graph).

A PDF citation opens its page as an image with the chunk highlighted; a Markdown citation shows the chunk in
its surrounding text, escaped (a hostile chunk stays text); a scanned PDF's citation says "(OCR)".
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from rag.ingest.pipeline import ingest_files
from tests.conftest import LEWIS, ROOT, TRICKY

APP = str(ROOT / "app.py")
SCANNED = TRICKY / "ocrmypdf__c02-22.pdf"
QUESTION = "What is the retrieval component of RAG and how is it trained?"
HOSTILE = ("Tungsten boils at 5,930 degrees Celsius, the highest boiling point of any metal. "
           "<img src=http://127.0.0.1:9/html> ![y](http://127.0.0.1:9/md) and then some more words. ")


def kb_for(data_dir: Path):
    from rag.config import Settings
    from rag.store.chroma import open_knowledge_base

    return open_knowledge_base(Settings.from_env({}, data_dir=data_dir))


def source_toggles(at: AppTest, prefix: str) -> list:
    return [t for t in at.toggle if t.key and t.key.startswith(prefix) and "_src_" in t.key]


def ask(question: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception, at.exception
    at.chat_input[0].set_value(question).run()
    assert not at.exception, at.exception
    return at


def test_chat_citation_opens_its_pdf_page_highlighted(data_dir):
    [report] = ingest_files(kb_for(data_dir), [LEWIS], workers=1)
    assert report.status == "ingested"
    at = ask(QUESTION)
    toggles = source_toggles(at, "chat_")
    assert toggles and all(t.label == "Show on its page" for t in toggles)
    assert not at.get("image")  # nothing is rendered until asked for
    toggles[0].set_value(True).run()
    assert not at.exception, at.exception
    images = at.get("image")
    assert len(images) == 1
    captions = [c.value.replace("\\", "") for c in at.caption]
    assert any(re.search(rf"{re.escape(LEWIS.name)}, page \d+: the passage highlighted", c) for c in captions)

    # The same citation, from the run's trace.
    at.button(key=next(b.key for b in at.button if b.key and b.key.startswith("chat_trace_"))).click().run()
    assert not at.exception, at.exception
    trace_toggles = source_toggles(at, "trace_")
    assert trace_toggles
    trace_toggles[0].set_value(True).run()
    assert not at.exception, at.exception
    assert len(at.get("image")) == 1


def test_markdown_citation_is_shown_in_its_text_escaped(data_dir, tmp_path):
    note = tmp_path / "metals.md"
    note.write_text("# Metals\n\n" + "Iron rusts in water and air over the years. " * 30 + "\n\n"
                    + HOSTILE * 3 + "\n\n" + "Copper conducts electricity very well indeed. " * 30,
                    encoding="utf-8")
    [report] = ingest_files(kb_for(data_dir), [note], workers=1)
    assert report.status == "ingested"
    at = ask("At what temperature does tungsten boil?")
    toggles = source_toggles(at, "chat_")
    assert toggles and toggles[0].label == "Show in its text"
    toggles[0].set_value(True).run()
    assert not at.exception, at.exception
    [shown] = at.get("html")
    body = shown.proto.body
    assert "<mark>" in body and "Tungsten boils at 5,930" in body
    assert "<img" not in body and "&lt;img src=http://127.0.0.1:9/html&gt;" in body
    assert "Iron rusts" in body or "Copper conducts" in body  # the text around the chunk


def test_ocr_citation_says_ocr_and_shows_its_lines(data_dir):
    kb = kb_for(data_dir)
    [report] = ingest_files(kb, [SCANNED], workers=1)
    assert report.ocr_pages == 1
    assert report.doc_sha == hashlib.sha256(SCANNED.read_bytes()).hexdigest()
    at = ask("What is at the end of the widow's garden?")
    labels = [e.label.replace("\\", "") for e in at.expander]
    assert any(label.endswith(f"{SCANNED.name} p.1 (OCR)") for label in labels), labels
    toggles = source_toggles(at, "chat_")
    toggles[0].set_value(True).run()
    assert not at.exception, at.exception
    assert len(at.get("image")) == 1
    captions = [c.value.replace("\\", "") for c in at.caption]
    assert any("page 1: the OCR lines of the passage highlighted" in c for c in captions), captions


def test_compare_citation_opens_its_pdf_page(data_dir):
    [report] = ingest_files(kb_for(data_dir), [LEWIS], workers=1)
    assert report.status == "ingested"
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception, at.exception
    at.text_input(key="cmp_w_question").input(QUESTION)
    at.button(key="cmp_run").click().run()
    assert not at.exception, at.exception
    toggles = source_toggles(at, "cmp_")
    assert toggles and all(t.label == "Show on its page" for t in toggles)
    toggles[-1].set_value(True).run()
    assert not at.exception, at.exception
    assert len(at.get("image")) == 1
    captions = [c.value.replace("\\", "") for c in at.caption]
    assert any(f"{LEWIS.name}, page" in c and "the passage highlighted" in c for c in captions), captions
