""".docx (python-docx) and .html (html-text) uploads, on real files written in the test."""

from __future__ import annotations

import io
import zipfile

import docx
import pytest

from rag.ingest.chunking import chunk_document
from rag.ingest.errors import CorruptFile, EmptyFile, TooLarge
from rag.ingest.loaders import load_document


def _docx(build) -> bytes:
    document = docx.Document()
    build(document)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _report(document) -> None:
    document.add_heading("Quarterly retrieval report", level=1)
    document.add_paragraph("The retriever finds passages with BM25 and dense vectors.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "metric", "value"
    table.cell(1, 0).text, table.cell(1, 1).text = "recall@6", "0.81"
    document.add_paragraph("Reciprocal rank fusion merges the two rankings.")


def test_docx_paragraphs_and_tables_in_order() -> None:
    doc = load_document("report.docx", _docx(_report))
    assert doc.filename == "report.docx" and doc.page_count == 1 and doc.warnings == []
    text = doc.pages[0].text
    assert text.index("Quarterly retrieval report") < text.index("BM25") < text.index("recall@6 | 0.81") \
        < text.index("Reciprocal rank fusion")
    chunks = chunk_document(doc, doc_sha="d" * 64)
    assert chunks[0].metadata == {"source": "report.docx", "page": 1, "chunk_index": 0, "doc_sha": "d" * 64,
                                  "span_start": 0, "span_end": len(chunks[0].text)}


def test_docx_bad_input_is_one_line() -> None:
    for data in (b"PK\x03\x04 not really a zip", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1 legacy .doc"):
        with pytest.raises(CorruptFile) as info:
            load_document("broken.docx", data)
        assert info.value.message and "\n" not in info.value.message
    # A zip that is not a Word document.
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("hello.txt", "hi")
    with pytest.raises(CorruptFile, match="Word file"):
        load_document("other.docx", out.getvalue())
    with pytest.raises(EmptyFile, match=r"^no text in file$"):
        load_document("blank.docx", _docx(lambda d: d.add_paragraph("   ")))
    with pytest.raises(TooLarge):
        load_document("big.docx", _docx(_report), max_bytes=100)


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Retrace notes</title>
<style>p { color: red }</style><script>var secret = "do not index";</script></head>
<body><nav>Home</nav><h1>Self-correcting RAG</h1>
<p>The grader <b>rejects</b> off-topic chunks; the query is then rewritten.</p>
<ul><li>retrieve</li><li>grade_documents</li></ul>
<table><tr><td>top_k</td><td>6</td></tr></table>
<!-- a comment --><p>Caf\u00e9 na\u00efve</p></body></html>"""


def test_html_visible_text_only() -> None:
    doc = load_document("notes.html", PAGE.encode("utf-8"))
    text = doc.pages[0].text
    assert doc.page_count == 1 and doc.warnings == []
    assert "The grader rejects off-topic chunks; the query is then rewritten." in text
    assert "retrieve\ngrade_documents" in text
    assert "Self-correcting RAG" in text and "Caf\u00e9 na\u00efve" in text
    assert "secret" not in text and "color" not in text and "comment" not in text


def test_html_declared_charset_and_fallback() -> None:
    latin = '<html><head><meta charset="windows-1252"></head><body><p>\u20ac5 caf\u00e9</p></body></html>'
    assert load_document("old.htm", latin.encode("cp1252")).pages[0].text == "\u20ac5 caf\u00e9"
    undeclared = load_document("old.html", "<p>caf\u00e9</p>".encode("cp1252"))
    assert undeclared.pages[0].text == "caf\u00e9" and "cp1252" in undeclared.warnings[0]


def test_html_bad_input_is_one_line() -> None:
    with pytest.raises(EmptyFile, match=r"^no text in file$"):
        load_document("empty.html", b"<html><head><script>x()</script></head><body>  </body></html>")
    with pytest.raises(CorruptFile, match=r"^binary data in an HTML file$"):
        load_document("image.html", b"\x89PNG\r\n\x1a\n\x00\x00\x00")


def test_ingest_docx_and_html_into_the_store(kb) -> None:
    from rag.ingest.pipeline import ingest_files

    reports = ingest_files(kb, [("report.docx", _docx(_report)), ("notes.html", PAGE.encode())])
    assert [r.status for r in reports] == ["ingested", "ingested"], [r.line() for r in reports]
    assert {d.source for d in kb.documents()} == {"report.docx", "notes.html"}
