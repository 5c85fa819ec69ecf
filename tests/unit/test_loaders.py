"""Loaders: every real file in ../shared/data/{tricky-pdfs,papers} has an expected outcome, plus edge cases."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pypdf
import pytest
from pypdf.errors import DependencyError

from rag.ingest import pdf as pdf_loader
from rag.ingest.errors import (
    CorruptFile,
    EmptyFile,
    IngestError,
    MissingDependency,
    NoExtractableText,
    PasswordRequired,
    TooLarge,
    UnsupportedType,
    WrongPassword,
)
from rag.ingest.loaders import SUPPORTED_SUFFIXES, LoadedDocument, load_document, normalize_text

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
TRICKY = DATA / "tricky-pdfs"
PAPERS = DATA / "papers"
MARKDOWN = DATA / "markdown"
TABLE_FOLDERS = (TRICKY, PAPERS)

PW = "asdfzxcv"  # user password of the pypdf encryption fixtures (README)


@dataclass(frozen=True)
class Ok:
    """The file loads. ``text_pages``: 1-based numbers of the pages with text (None: all pages)."""

    page_count: int
    contains: tuple[tuple[int, str], ...] = ()  # (page number, substring of that page's text)
    text_pages: tuple[int, ...] | None = None
    password: str | None = None


@dataclass(frozen=True)
class Fails:
    error: type[IngestError]
    password: str | None = None


# Every file in tricky-pdfs/ and papers/ -> the outcomes of loading it (one per password tried).
# Written from ../shared/data/README.md, pypdf-sample-files__files.json and inspection with pypdf 7.1.0.
EXPECTED: dict[str, tuple[Ok | Fails, ...]] = {
    # --- tricky-pdfs/ ---
    "tricky-pdfs/darinzRAG__brk_2024_10-k_sec.pdf": (
        Ok(143, ((1, "SECURITIES AND EXCHANGE COMMISSION"), (1, "BERKSHIRE HATHAWAY INC."), (143, "EXHIBIT 97"))),
    ),
    # Without OCR (these outcomes); with OCR see OCR_EXPECTED.
    "tricky-pdfs/ocrmypdf__c02-22.pdf": (Fails(NoExtractableText),),
    "tricky-pdfs/ocrmypdf__invalid.pdf": (Fails(CorruptFile),),
    "tricky-pdfs/ocrmypdf__kcs.pdf": (Fails(NoExtractableText),),
    # linn.pdf is a scan without a text layer, so there is nothing to compare with linn.txt.
    "tricky-pdfs/ocrmypdf__linn.pdf": (Fails(NoExtractableText),),
    "tricky-pdfs/ocrmypdf__linn.txt": (Ok(1, ((1, "The LinnSequencer"), (1, "32 Track MIDI Sequence Recorder"))),),
    # README says "no text layer", but page 4 (a chart) carries a small OCR-like text layer.
    "tricky-pdfs/ocrmypdf__multipage.pdf": (Ok(6, ((4, "Oppose"),), text_pages=(4,)),),
    "tricky-pdfs/ocrmypdf__skew.pdf": (Fails(NoExtractableText),),
    "tricky-pdfs/pypdf-sample-files__001-trivial__minimal-document.pdf": (Ok(1, ((1, "Lorem ipsum dolor sit amet"),)),),
    "tricky-pdfs/pypdf-sample-files__004-pdflatex-4-pages__pdflatex-4-pages.pdf": (
        Ok(4, ((1, "Hello, here is some text without a meaning"),)),
    ),
    "tricky-pdfs/pypdf-sample-files__005-libreoffice-writer-password__README.md": (Ok(1, ((1, "openpassword"),)),),
    # Encrypted although the README's list of encrypted files only names pypdf__encryption__*.
    "tricky-pdfs/pypdf-sample-files__005-libreoffice-writer-password__libreoffice-writer-password.pdf": (
        Fails(PasswordRequired),
        Fails(WrongPassword, password="nope"),
        Ok(1, ((1, "Lorem ipsum"),), password="openpassword"),  # user password
        Ok(1, ((1, "Lorem ipsum"),), password="permissionpassword"),  # owner password
    ),
    "tricky-pdfs/pypdf-sample-files__007-imagemagick-images__imagemagick-CCITTFaxDecode.pdf": (Fails(NoExtractableText),),
    # README says scanned, but four of the six pages carry the word "Background" as text.
    "tricky-pdfs/pypdf-sample-files__007-imagemagick-images__imagemagick-images.pdf": (
        Ok(6, ((1, "Background"), (6, "Background")), text_pages=(1, 2, 3, 6)),
    ),
    "tricky-pdfs/pypdf-sample-files__009-pdflatex-geotopo__GeoTopo-komprimiert.pdf": (
        # "Auﬂage" in the PDF: NFKC turns the ligature into "fl".
        Ok(117, ((1, "Geometrie und Topologie"), (1, "0. Auflage"), (2, "Vorwort"))),
    ),
    "tricky-pdfs/pypdf-sample-files__011-google-doc-document__google-doc-document.pdf": (
        Ok(1, ((1, "Beautiful is better than ugly."),)),
    ),
    "tricky-pdfs/pypdf-sample-files__012-libreoffice-form__libreoffice-form.pdf": (Ok(1, ((1, "Example for a Form"),)),),
    "tricky-pdfs/pypdf-sample-files__014-outlines__mistitled_outlines_example.pdf": (Ok(4, ((1, "Contents"),)),),
    "tricky-pdfs/pypdf-sample-files__015-arabic__habibi.pdf": (
        Ok(1, ((1, "habibi"), (1, "\u062d\u064e\u0628\u064a\u0628\u064a"))),  # Arabic with a fatha
    ),
    "tricky-pdfs/pypdf-sample-files__017-unreadable-meta-data__unreadablemetadata.pdf": (Fails(CorruptFile),),
    "tricky-pdfs/pypdf-sample-files__019-grayscale-image__grayscale-image.pdf": (Fails(NoExtractableText),),
    "tricky-pdfs/pypdf-sample-files__021-pdfa__crazyones-pdfa.pdf": (
        Ok(1, ((1, "The Crazy Ones"), (1, "The misfits."))),  # "misﬁts" ligature in the PDF
    ),
    "tricky-pdfs/pypdf-sample-files__026-latex-multicolumn__multicolumn.pdf": (
        Ok(3, ((1, "Two-Column Document with Lorem Ipsum"),)),
    ),
    "tricky-pdfs/pypdf-sample-files__LICENSE.txt": (Ok(1, ((1, "Attribution-ShareAlike 4.0 International"),)),),
    "tricky-pdfs/pypdf-sample-files__files.json": (Fails(UnsupportedType),),
    "tricky-pdfs/pypdf__encryption__r2-empty-password.pdf": (
        Ok(1, ((1, "pdf encryption test"),)),
        # A wrong password is ignored when the file opens without one (batch-wide --password).
        Ok(1, ((1, "pdf encryption test"),), password="nope"),
    ),
    "tricky-pdfs/pypdf__encryption__r4-aes-user-password.pdf": (
        Fails(PasswordRequired),
        Fails(PasswordRequired, password=""),
        Fails(WrongPassword, password="nope"),
        Ok(1, ((1, "pdf encryption test"),), password=PW),
    ),
    "tricky-pdfs/pypdf__encryption__r6-owner-password.pdf": (
        Ok(1, ((1, "pdf encryption test"),)),
        Ok(1, ((1, "pdf encryption test"),), password=PW),  # the owner password also opens it
        Ok(1, ((1, "pdf encryption test"),), password="nope"),
    ),
    # The user password is asdfzxcv, but the OWNER password is empty (pypdf's fixture was made with
    # `qpdf --encrypt asdfzxcv "" 256`), and pypdf's decrypt("") accepts it as the owner password.
    # So it opens without a password, unlike r4-aes-user-password.
    "tricky-pdfs/pypdf__encryption__r6-user-password.pdf": (
        Ok(1, ((1, "pdf encryption test"),)),
        Ok(1, ((1, "pdf encryption test"),), password=PW),
        Ok(1, ((1, "pdf encryption test"),), password="nope"),
    ),
    "tricky-pdfs/pypdf__encryption__unencrypted.pdf": (
        Ok(1, ((1, "pdf encryption test"),)),
        Ok(1, ((1, "pdf encryption test"),), password="ignored"),
    ),
    # --- papers/ ---
    "papers/2002.08909v1_realm.pdf": (Ok(12, ((1, "REALM: Retrieval-Augmented Language Model Pre-Training"),)),),
    "papers/2004.04906v3_dense_passage_retrieval.pdf": (
        Ok(13, ((1, "Dense Passage Retrieval for Open-Domain Question Answering"),)),
    ),
    "papers/2005.11401v4_lewis_rag.pdf": (
        Ok(19, ((1, "Retrieval-Augmented Generation"), (1, "Knowledge-Intensive NLP Tasks"))),
    ),
    "papers/2302.00083v3_in_context_ralm.pdf": (Ok(15, ((1, "In-Context Retrieval-Augmented Language Models"),)),),
    "papers/2305.06983v2_active_rag_FLARE.pdf": (Ok(24, ((1, "Active Retrieval Augmented Generation"),)),),
    "papers/2307.03172v3_lost_in_the_middle.pdf": (
        Ok(18, ((1, "Lost in the Middle: How Language Models Use Long Contexts"),)),
    ),
    "papers/2309.15217v2_ragas.pdf": (Ok(8, ((1, "Ragas: Automated Evaluation of Retrieval Augmented Generation"),)),),
    "papers/2310.03025v2_retrieval_meets_long_context_llms.pdf": (
        Ok(16, ((1, "RETRIEVAL MEETS LONG CONTEXT LARGE LANGUAGE"),)),
    ),
    "papers/2310.07713v3_instructretro.pdf": (
        Ok(18, ((1, "InstructRetro: Instruction Tuning post Retrieval-Augmented Pretraining"),)),
    ),
    "papers/2310.11511v1_self_rag.pdf": (Ok(30, ((1, "SELF-RAG: LEARNING TO RETRIEVE, GENERATE, AND"),)),),
    "papers/2312.10997v5_rag_survey.pdf": (Ok(21, ((1, "Language Models: A Survey"),)),),
    "papers/2401.01313v3_hallucination_mitigation_survey.pdf": (
        Ok(19, ((1, "A Comprehensive Survey of Hallucination Mitigation Techniques"),)),
    ),
    "papers/2401.15391v1_multihop_rag_benchmark.pdf": (
        Ok(14, ((1, "MultiHop-RAG: Benchmarking Retrieval-Augmented Generation"),)),
    ),
    "papers/DUPLICATE_of_2312.10997v5_rag_survey.pdf": (Ok(21, ((1, "Language Models: A Survey"),)),),
    "papers/SHA256SUMS": (Fails(UnsupportedType),),
}

def _case_id(rel: str, expected: Ok | Fails) -> str:
    pw = "no-pw" if expected.password is None else f"pw={expected.password!r}"
    return f"{Path(rel).name}[{pw}]"


CASES = [
    pytest.param(rel, expected, id=_case_id(rel, expected))
    for rel, outcomes in EXPECTED.items()
    for expected in outcomes
]


def _read(rel: str) -> bytes:
    return (DATA / rel).read_bytes()


def _assert_clean(doc: LoadedDocument) -> None:
    numbers = [p.number for p in doc.pages]
    assert numbers == sorted(set(numbers)), "page numbers must be increasing and unique"
    assert all(1 <= n <= doc.page_count for n in numbers)
    for page in doc.pages:
        assert page.text and page.text == page.text.strip()
        assert "\x00" not in page.text
        assert "\n\n\n" not in page.text
        assert "  " not in page.text


def test_data_folders_exist() -> None:
    for folder in (*TABLE_FOLDERS, MARKDOWN):
        assert folder.is_dir(), f"missing test data folder {folder}"


def test_table_covers_every_file() -> None:
    present = {f"{folder.name}/{f.name}" for folder in TABLE_FOLDERS for f in folder.iterdir() if f.is_file()}
    assert present, "no data files found"
    missing = sorted(present - EXPECTED.keys())
    stale = sorted(EXPECTED.keys() - present)
    assert not missing, f"files with no expected outcome in EXPECTED: {missing}"
    assert not stale, f"EXPECTED names files that are not present: {stale}"


@pytest.mark.parametrize(("rel", "expected"), CASES)
def test_real_file(rel: str, expected: Ok | Fails) -> None:
    """The text layer of every file (OCR off: OCR costs seconds a page; OCR_EXPECTED covers it)."""
    name = Path(rel).name
    data = _read(rel)
    if isinstance(expected, Fails):
        with pytest.raises(expected.error) as info:
            load_document(name, data, password=expected.password, ocr=False)
        assert type(info.value) is expected.error
        assert info.value.message and "\n" not in info.value.message
        return
    doc = load_document(name, data, password=expected.password, ocr=False)
    assert doc.filename == name
    assert doc.page_count == expected.page_count
    text_pages = expected.text_pages or tuple(range(1, expected.page_count + 1))
    assert tuple(p.number for p in doc.pages) == text_pages
    _assert_clean(doc)
    by_number = {p.number: p.text for p in doc.pages}
    for number, needle in expected.contains:
        assert needle in by_number[number], f"page {number} of {name} lacks {needle!r}"


# --- messages of the errors on real files ---


def test_scanned_pdf_message_counts_pages() -> None:
    with pytest.raises(NoExtractableText, match=r"^no extractable text \(1 page; scanned\? turn OCR on\)$"):
        load_document("ocrmypdf__skew.pdf", _read("tricky-pdfs/ocrmypdf__skew.pdf"), ocr=False)


def test_partly_scanned_pdf_warns_about_empty_pages() -> None:
    doc = load_document("multipage.pdf", _read("tricky-pdfs/ocrmypdf__multipage.pdf"), ocr=False)
    assert any("5 of 6 pages" in w and "turn OCR on" in w for w in doc.warnings)


def test_corrupt_pdf_message() -> None:
    with pytest.raises(CorruptFile, match=r"^corrupt or unreadable PDF: \S"):
        load_document("invalid.pdf", _read("tricky-pdfs/ocrmypdf__invalid.pdf"))


def test_password_messages() -> None:
    data = _read("tricky-pdfs/pypdf__encryption__r4-aes-user-password.pdf")
    with pytest.raises(PasswordRequired, match=r"^encrypted: password required$"):
        load_document("r4.pdf", data)
    with pytest.raises(WrongPassword, match=r"^wrong password$"):
        load_document("r4.pdf", data, password="nope")


def test_linn_true_text_is_readable_even_though_the_scan_is_not() -> None:
    with pytest.raises(NoExtractableText):
        load_document("linn.pdf", _read("tricky-pdfs/ocrmypdf__linn.pdf"), ocr=False)
    doc = load_document("linn.txt", _read("tricky-pdfs/ocrmypdf__linn.txt"))
    assert "LinnSequencer" in doc.pages[0].text
    assert doc.warnings == []


def test_duplicate_paper_loads_identically() -> None:
    a = load_document("a.pdf", _read("papers/2312.10997v5_rag_survey.pdf"))
    b = load_document("a.pdf", _read("papers/DUPLICATE_of_2312.10997v5_rag_survey.pdf"))
    assert a == b


@pytest.mark.parametrize("cut", [10, 200, 1000, 5000, 12000, 16000])
def test_truncated_pdf_never_raises_anything_but_ingest_errors(cut: int) -> None:
    data = _read("tricky-pdfs/pypdf-sample-files__001-trivial__minimal-document.pdf")[:cut]
    try:
        doc = load_document("cut.pdf", data)
    except IngestError:
        return
    _assert_clean(doc)


def test_garbage_named_pdf_is_corrupt() -> None:
    with pytest.raises(CorruptFile):
        load_document("fake.pdf", b"this is not a PDF at all\n" * 10)


# --- pypdf failures mapped to our errors ---


@pytest.fixture
def pypdf_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """PDFium refuses every file, so the pypdf fallback reads it."""
    monkeypatch.setattr(pdf_loader, "_open_pdfium", lambda data, password: None)


def test_missing_cryptography_during_decrypt(monkeypatch: pytest.MonkeyPatch, pypdf_only: None) -> None:
    def no_crypto(self: pypdf.PdfReader, password: str | bytes) -> None:
        raise DependencyError("cryptography>=3.1 is required for AES algorithm")

    monkeypatch.setattr(pypdf.PdfReader, "decrypt", no_crypto)
    data = _read("tricky-pdfs/pypdf__encryption__r4-aes-user-password.pdf")
    with pytest.raises(MissingDependency, match="cryptography") as info:
        load_document("r4.pdf", data, password=PW)
    assert "pip install cryptography" in info.value.message


def test_missing_cryptography_during_text_extraction(monkeypatch: pytest.MonkeyPatch, pypdf_only: None) -> None:
    def no_crypto(self: pypdf.PageObject, *args: object, **kwargs: object) -> str:
        raise DependencyError("cryptography>=3.1 is required for AES algorithm")

    monkeypatch.setattr(pypdf.PageObject, "extract_text", no_crypto)
    with pytest.raises(MissingDependency, match="cryptography"):
        load_document("r4.pdf", _read("tricky-pdfs/pypdf__encryption__r4-aes-user-password.pdf"), password=PW)


def test_one_failing_page_becomes_a_warning_with_pypdf(monkeypatch: pytest.MonkeyPatch, pypdf_only: None) -> None:
    original = pypdf.PageObject.extract_text
    calls = {"n": 0}

    def flaky(self: pypdf.PageObject, *args: object, **kwargs: object) -> str:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyError("/Font")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pypdf.PageObject, "extract_text", flaky)
    doc = load_document("four.pdf", _read("tricky-pdfs/pypdf-sample-files__004-pdflatex-4-pages__pdflatex-4-pages.pdf"))
    assert doc.page_count == 4
    assert [p.number for p in doc.pages] == [1, 3, 4]
    assert any(w.startswith("page 2: text extraction failed:") for w in doc.warnings)


def test_every_page_failing_means_no_text_with_pypdf(monkeypatch: pytest.MonkeyPatch, pypdf_only: None) -> None:
    def broken(self: pypdf.PageObject, *args: object, **kwargs: object) -> str:
        raise ValueError("bad content stream")

    monkeypatch.setattr(pypdf.PageObject, "extract_text", broken)
    with pytest.raises(NoExtractableText, match=r"\(4 pages;"):
        load_document("four.pdf", _read("tricky-pdfs/pypdf-sample-files__004-pdflatex-4-pages__pdflatex-4-pages.pdf"))


# --- PDFium, the text extractor, and what it hands to pypdf ---


def test_pdfium_extracts_text_without_pypdf(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pypdf(*args: object, **kwargs: object) -> None:
        raise AssertionError("pypdf must not be used for a PDF that PDFium opens")

    monkeypatch.setattr(pypdf, "PdfReader", no_pypdf)
    doc = load_document("rag.pdf", _read("papers/2005.11401v4_lewis_rag.pdf"))
    assert doc.page_count == 19 and len(doc.pages) == 19
    assert "Retrieval-Augmented Generation" in doc.pages[0].text
    # PDFium's marker of a word hyphenated at a line end (U+FFFE) joins the word.
    assert "downstream" in doc.pages[0].text and "\ufffe" not in doc.pages[0].text


def test_one_failing_page_becomes_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    import pypdfium2

    original = pypdfium2.PdfTextPage.get_text_range
    calls = {"n": 0}

    def flaky(self: object, *args: object, **kwargs: object) -> str:
        calls["n"] += 1
        if calls["n"] == 2:
            raise pypdfium2.PdfiumError("Failed to load text page.")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pypdfium2.PdfTextPage, "get_text_range", flaky)
    doc = load_document("four.pdf", _read("tricky-pdfs/pypdf-sample-files__004-pdflatex-4-pages__pdflatex-4-pages.pdf"))
    assert doc.page_count == 4
    assert [p.number for p in doc.pages] == [1, 3, 4]
    assert any(w.startswith("page 2: text extraction failed:") for w in doc.warnings)


def test_every_page_failing_means_no_text(monkeypatch: pytest.MonkeyPatch) -> None:
    import pypdfium2

    def broken(self: object, *args: object, **kwargs: object) -> str:
        raise pypdfium2.PdfiumError("Failed to load text page.")

    monkeypatch.setattr(pypdfium2.PdfTextPage, "get_text_range", broken)
    with pytest.raises(NoExtractableText, match=r"\(4 pages;"):
        load_document("four.pdf", _read("tricky-pdfs/pypdf-sample-files__004-pdflatex-4-pages__pdflatex-4-pages.pdf"))


def test_rotated_pages_keep_their_text() -> None:
    import io

    writer = pypdf.PdfWriter()
    for angle in (90, 180, 270):
        reader = pypdf.PdfReader(io.BytesIO(_read("tricky-pdfs/pypdf-sample-files__001-trivial__minimal-document.pdf")))
        writer.add_page(reader.pages[0]).rotate(angle)
    out = io.BytesIO()
    writer.write(out)
    doc = load_document("rotated.pdf", out.getvalue(), ocr=False)
    assert doc.page_count == 3 and [p.number for p in doc.pages] == [1, 2, 3]
    assert all("Lorem ipsum dolor sit amet" in p.text for p in doc.pages)


def test_right_to_left_text_comes_in_logical_order() -> None:
    # PDFium gives Arabic in visual (reversed) order; such pages are read by pypdf.
    doc = load_document("habibi.pdf", _read("tricky-pdfs/pypdf-sample-files__015-arabic__habibi.pdf"))
    assert "\u062d\u064e\u0628\u064a\u0628\u064a" in doc.pages[0].text


def test_on_page_reports_every_page() -> None:
    seen: list[tuple[int, int, bool]] = []
    load_document("four.pdf", _read("tricky-pdfs/pypdf-sample-files__004-pdflatex-4-pages__pdflatex-4-pages.pdf"),
                  on_page=lambda done, total, ocr: seen.append((done, total, ocr)))
    assert seen == [(1, 4, False), (2, 4, False), (3, 4, False), (4, 4, False)]


def test_pdfium_refusals_fall_back_to_pypdf_messages() -> None:
    # PDFium cannot open these; pypdf either reads them or gives the one-line reason.
    with pytest.raises(CorruptFile, match=r"^corrupt or unreadable PDF: startxref not found$"):
        load_document("invalid.pdf", _read("tricky-pdfs/ocrmypdf__invalid.pdf"))
    # Opens only with the empty OWNER password, which PDFium does not try: pypdf reads it.
    doc = load_document("r6.pdf", _read("tricky-pdfs/pypdf__encryption__r6-user-password.pdf"))
    assert "pdf encryption test" in doc.pages[0].text


# --- checks before parsing: type, size, emptiness ---


def test_supported_suffixes() -> None:
    assert SUPPORTED_SUFFIXES == (".pdf", ".txt", ".md", ".markdown", ".docx", ".html", ".htm")


def test_unsupported_type_message() -> None:
    with pytest.raises(UnsupportedType, match=r"^unsupported type '\.doc' \(supported: \.pdf, \.txt, \.md"):
        load_document("report.doc", b"\xd0\xcf\x11\xe0 whatever")


def test_no_extension_is_unsupported() -> None:
    with pytest.raises(UnsupportedType, match="no file extension"):
        load_document("README", b"hello")


def test_unsupported_type_is_checked_before_size_and_emptiness() -> None:
    with pytest.raises(UnsupportedType):
        load_document("big.xlsx", b"x" * 100, max_bytes=10)
    with pytest.raises(UnsupportedType):
        load_document("empty.xlsx", b"")


def test_suffix_is_case_insensitive_and_path_tolerant() -> None:
    data = _read("tricky-pdfs/pypdf-sample-files__001-trivial__minimal-document.pdf")
    assert load_document("MINIMAL.PDF", data).page_count == 1
    assert load_document("some/dir/notes.TXT", b"hello").pages[0].text == "hello"
    assert load_document("notes.markdown", b"# Title").pages[0].text == "# Title"


def test_too_large_message() -> None:
    data = b"a" * 2_300_000
    with pytest.raises(TooLarge, match=r"^file is 2\.3 MB, over the 1\.0 MB limit$"):
        load_document("big.txt", data, max_bytes=1_000_000)


def test_too_large_when_sizes_round_equal_shows_bytes() -> None:
    with pytest.raises(TooLarge, match=r"^file is 1,000,001 bytes, over the 1,000,000-byte limit$"):
        load_document("big.txt", b"a" * 1_000_001, max_bytes=1_000_000)


def test_exactly_at_the_limit_is_fine() -> None:
    assert load_document("ok.txt", b"abcd", max_bytes=4).pages[0].text == "abcd"


def test_too_large_is_checked_before_parsing() -> None:
    with pytest.raises(TooLarge):
        load_document("junk.pdf", b"not a pdf", max_bytes=3)


@pytest.mark.parametrize("name", ["empty.pdf", "empty.txt", "empty.md"])
def test_empty_bytes(name: str) -> None:
    with pytest.raises(EmptyFile, match=r"^empty file \(0 bytes\)$"):
        load_document(name, b"", max_bytes=10)


# --- text files ---


def test_whitespace_only_text_file() -> None:
    with pytest.raises(EmptyFile, match=r"^no text in file$"):
        load_document("blank.txt", b" \n\t\r\n  \n")


def test_nul_bytes_mean_binary() -> None:
    with pytest.raises(CorruptFile, match=r"^binary data in a text file$"):
        load_document("data.txt", b"abc\x00\x01\x02def")


def test_nul_after_the_first_8kb_is_cleaned_not_rejected() -> None:
    data = b"a" * 9000 + b"\x00tail"
    doc = load_document("late.txt", data)
    assert doc.pages[0].text.endswith("a tail")


def test_cp1252_fallback_warns() -> None:
    data = "caf\u00e9 \u2013 na\u00efve \u20ac5".encode("cp1252")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    doc = load_document("legacy.txt", data)
    assert doc.pages[0].text == "caf\u00e9 \u2013 na\u00efve \u20ac5"
    assert len(doc.warnings) == 1 and "cp1252" in doc.warnings[0]


def test_utf8_bom_is_dropped_and_no_warning() -> None:
    doc = load_document("bom.txt", "\ufeffHello w\u00f6rld".encode("utf-8"))
    assert doc.pages[0].text == "Hello w\u00f6rld"
    assert doc.warnings == []


def test_utf16_with_bom_is_text_not_binary() -> None:
    doc = load_document("win.txt", "Hello \u00e9t\u00e9".encode("utf-16"))
    assert doc.pages[0].text == "Hello \u00e9t\u00e9"


def test_real_markdown_file() -> None:
    path = MARKDOWN / "getting-started.md"
    doc = load_document(path.name, path.read_bytes())
    assert doc.filename == "getting-started.md"
    assert doc.page_count == 1
    assert [p.number for p in doc.pages] == [1]
    assert doc.warnings == []
    text = doc.pages[0].text
    assert text.startswith("---\nid: getting-started")
    assert "# Getting Started" in text
    assert "{% Tabs %}" in text  # Markdoc tags are kept as text
    _assert_clean(doc)


def test_every_real_markdown_file_loads() -> None:
    files = sorted(MARKDOWN.glob("*.md"))
    assert len(files) >= 10
    for path in files:
        doc = load_document(path.name, path.read_bytes())
        assert doc.page_count == 1 and len(doc.pages[0].text) > 100, path.name


def test_loaded_document_is_frozen() -> None:
    doc = load_document("a.txt", b"hello")
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.filename = "b.txt"  # type: ignore[misc]


# --- normalize_text ---


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("e\ufb03cient \ufb01le \ufb02ow", "efficient file flow"),  # ligatures
        ("retrie-\nval augmented", "retrieval augmented"),  # hyphenated line break
        ("retrie- \n  val", "retrieval"),  # spaces around the break
        ("Retrieval-\nAugmented", "Retrieval-\nAugmented"),  # uppercase follows: a real hyphen
        ("pages 10-\n12", "pages 10-\n12"),  # digits: kept
        ("\u00e9t\u00e9-\n\u00e9t\u00e9", "\u00e9t\u00e9\u00e9t\u00e9"),  # non-ASCII lowercase
        ("a\x00b\x07c\x1bd", "a b c d"),  # control characters become spaces
        ("col1\tcol2\t\tcol3", "col1 col2 col3"),
        ("many     spaces", "many spaces"),
        ("a\n\n\n\n\nb", "a\n\nb"),
        ("a\n\nb", "a\n\nb"),
        ("line one\r\nline two\rthree", "line one\nline two\nthree"),
        ("trailing   \nspaces", "trailing\nspaces"),
        ("  \n padded \n\n ", "padded"),
        ("soft\u00adhyphen", "softhyphen"),
        ("\uff21\uff22\uff23 \u2460", "ABC 1"),  # full-width letters, circled digit (NFKC)
        ("", ""),
    ],
)
def test_normalize_text(raw: str, expected: str) -> None:
    assert normalize_text(raw) == expected


def test_normalize_text_is_idempotent_on_a_real_paper() -> None:
    doc = load_document("rag.pdf", _read("papers/2005.11401v4_lewis_rag.pdf"))
    for page in doc.pages:
        assert normalize_text(page.text) == page.text
        assert "\ufb01" not in page.text and "\ufb02" not in page.text
