"""Chunking: stable ids, page-bounded chunks, size limits and metadata, on a real paper."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from rag.ingest.chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, chunk_document
from rag.ingest.loaders import LoadedDocument, load_document
from rag.ingest.types import Page

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
PAPER = DATA / "papers" / "2005.11401v4_lewis_rag.pdf"


@pytest.fixture(scope="module")
def paper() -> tuple[LoadedDocument, str]:
    data = PAPER.read_bytes()
    return load_document(PAPER.name, data), hashlib.sha256(data).hexdigest()


def test_defaults() -> None:
    assert DEFAULT_CHUNK_SIZE == 1000
    assert DEFAULT_CHUNK_OVERLAP == 150


def test_ids_are_derived_from_the_sha_and_deterministic(paper: tuple[LoadedDocument, str]) -> None:
    doc, sha = paper
    chunks = chunk_document(doc, doc_sha=sha)
    assert len(chunks) > 19  # more chunks than pages
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert [c.id for c in chunks] == [f"{sha[:16]}-{i:05d}" for i in range(len(chunks))]
    assert len({c.id for c in chunks}) == len(chunks)
    assert chunk_document(doc, doc_sha=sha) == chunks  # same input, same records

    other = chunk_document(doc, doc_sha="f" * 64)
    assert all(c.id.startswith("ffffffffffffffff-") for c in other)
    assert {c.id for c in other}.isdisjoint(c.id for c in chunks)


def test_pages_are_preserved_and_never_spanned(paper: tuple[LoadedDocument, str]) -> None:
    doc, sha = paper
    chunks = chunk_document(doc, doc_sha=sha)
    page_text = {p.number: p.text for p in doc.pages}
    pages = [c.page for c in chunks]
    assert pages == sorted(pages)
    assert set(pages) == set(page_text)  # every page with text has at least one chunk
    for chunk in chunks:
        assert chunk.text in page_text[chunk.page]  # a chunk is a piece of one page
        assert chunk.source == doc.filename
        assert chunk.doc_sha == sha
    assert "Retrieval-Augmented Generation" in next(c.text for c in chunks if c.page == 1)


@pytest.mark.parametrize(("size", "overlap"), [(1000, 150), (400, 0), (200, 50), (50, 49)])
def test_chunk_sizes_stay_within_the_limit(
    paper: tuple[LoadedDocument, str], size: int, overlap: int
) -> None:
    doc, sha = paper
    chunks = chunk_document(doc, doc_sha=sha, chunk_size=size, chunk_overlap=overlap)
    assert chunks
    assert max(len(c.text) for c in chunks) <= size
    assert all(c.text.strip() == c.text and c.text for c in chunks)


def test_overlap_repeats_text(paper: tuple[LoadedDocument, str]) -> None:
    doc, sha = paper
    without = chunk_document(doc, doc_sha=sha, chunk_size=500, chunk_overlap=0)
    with_overlap = chunk_document(doc, doc_sha=sha, chunk_size=500, chunk_overlap=150)
    assert sum(len(c.text) for c in with_overlap) > sum(len(c.text) for c in without)
    assert len(with_overlap) > len(without)


def test_metadata_is_flat_str_and_int(paper: tuple[LoadedDocument, str]) -> None:
    doc, sha = paper
    for chunk in chunk_document(doc, doc_sha=sha):
        position = {k: chunk.metadata[k] for k in ("span_start", "span_end", "pdf_start", "pdf_end")}
        assert chunk.metadata == {
            "source": doc.filename,
            "page": chunk.page,
            "chunk_index": chunk.index,
            "doc_sha": sha,
            **position,
        }
        for value in chunk.metadata.values():
            assert type(value) in (str, int)


def test_spans_locate_each_chunk_in_its_page_and_in_pdfiums_text(paper: tuple[LoadedDocument, str]) -> None:
    """span_* index the normalised page text exactly; pdf_* index PDFium's raw text of the page."""
    import pypdfium2 as pdfium

    from rag.ingest.spans import keys

    doc, sha = paper
    pages = {p.number: p for p in doc.pages}
    pdf = pdfium.PdfDocument(PAPER.read_bytes())
    try:
        raw = {n: pdf[n - 1].get_textpage().get_text_range() for n in pages}
    finally:
        pdf.close()
    chunks = chunk_document(doc, doc_sha=sha)
    for c in chunks:
        m = c.metadata
        assert pages[c.page].text[m["span_start"]:m["span_end"]] == c.text
        cited = raw[c.page][m["pdf_start"]:m["pdf_end"]]
        assert keys(cited) == keys(c.text) and cited[0] == c.text[0] and cited[-1] == c.text[-1]
    # PDFium's text differs from ours (hyphenation, spaces), so the offsets do differ somewhere.
    assert any(c.metadata["pdf_start"] != c.metadata["span_start"] for c in chunks)


def test_text_files_get_spans_but_no_pdf_offsets() -> None:
    text = "Alpha beta gamma. " * 200
    doc = LoadedDocument(filename="a.txt", pages=[Page(1, text.strip())], page_count=1, warnings=[])
    chunks = chunk_document(doc, doc_sha="b" * 64, chunk_size=300, chunk_overlap=50)
    assert len(chunks) > 3
    for c in chunks:
        assert doc.pages[0].text[c.metadata["span_start"]:c.metadata["span_end"]] == c.text
        assert "pdf_start" not in c.metadata and "ocr_boxes" not in c.metadata


@pytest.mark.parametrize(
    ("size", "overlap", "message"),
    [
        (49, 0, "chunk_size must be at least 50"),
        (0, 0, "chunk_size must be at least 50"),
        (100, -1, "chunk_overlap must be 0 or more"),
        (100, 100, r"chunk_overlap \(100\) must be smaller than chunk_size \(100\)"),
        (100, 150, r"chunk_overlap \(150\) must be smaller than chunk_size \(100\)"),
        (100.0, 10, "chunk_size must be an integer"),
    ],
)
def test_invalid_sizes(size: int, overlap: int, message: str) -> None:
    doc = LoadedDocument(filename="a.txt", pages=[Page(1, "hello")], page_count=1, warnings=[])
    with pytest.raises(ValueError, match=message):
        chunk_document(doc, doc_sha="ab" * 32, chunk_size=size, chunk_overlap=overlap)


def test_empty_sha_is_rejected() -> None:
    doc = LoadedDocument(filename="a.txt", pages=[Page(1, "hello")], page_count=1, warnings=[])
    with pytest.raises(ValueError, match="doc_sha"):
        chunk_document(doc, doc_sha="")


def test_smallest_valid_settings() -> None:
    doc = LoadedDocument(filename="a.txt", pages=[Page(1, "word " * 100)], page_count=1, warnings=[])
    chunks = chunk_document(doc, doc_sha="ab" * 32, chunk_size=50, chunk_overlap=0)
    assert chunks and all(len(c.text) <= 50 for c in chunks)


def test_whitespace_only_pages_give_no_chunks_and_indexes_stay_dense() -> None:
    doc = LoadedDocument(
        filename="gaps.pdf",
        pages=[Page(2, "Alpha text."), Page(5, " \n\n \t "), Page(7, "Omega text.")],
        page_count=7,
        warnings=[],
    )
    chunks = chunk_document(doc, doc_sha="0123456789abcdef0123")
    assert [(c.id, c.page, c.index, c.text) for c in chunks] == [
        ("0123456789abcdef-00000", 2, 0, "Alpha text."),
        ("0123456789abcdef-00001", 7, 1, "Omega text."),
    ]


def test_document_without_pages_gives_no_chunks() -> None:
    doc = LoadedDocument(filename="none.pdf", pages=[], page_count=3, warnings=[])
    assert chunk_document(doc, doc_sha="ab" * 32) == []


def test_real_markdown_file_is_one_page() -> None:
    path = DATA / "markdown" / "configure.md"
    data = path.read_bytes()
    chunks = chunk_document(load_document(path.name, data), doc_sha=hashlib.sha256(data).hexdigest())
    assert len(chunks) > 5
    assert {c.page for c in chunks} == {1}
    assert all(len(c.text) <= DEFAULT_CHUNK_SIZE for c in chunks)
