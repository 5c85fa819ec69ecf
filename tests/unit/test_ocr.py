"""OCR of scanned PDF pages with rapidocr's bundled models, offline.

Each OCR'd page costs seconds, so only two one-page scans are read here; ``python -m rag bench ingest``
measures the rest.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from rag.ingest import ocr as ocr_module
from rag.ingest.chunking import chunk_document
from rag.ingest.errors import NoExtractableText
from rag.ingest.loaders import MIN_IMAGE_COVER, load_document, needs_ocr

TRICKY = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "tricky-pdfs"


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every attempt to reach a host fails and is recorded."""
    attempts: list[str] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(repr(args[:2]))
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return attempts


@pytest.mark.slow
def test_scanned_page_is_read_by_ocr_offline(monkeypatch: pytest.MonkeyPatch, no_network: list[str]) -> None:
    monkeypatch.setattr(ocr_module, "_engine", None)  # build the engine here, with no network
    progress: list[tuple[int, int, bool]] = []
    doc = load_document("ocrmypdf__c02-22.pdf", (TRICKY / "ocrmypdf__c02-22.pdf").read_bytes(),
                        on_page=lambda done, total, ocr: progress.append((done, total, ocr)))
    assert no_network == []
    assert doc.page_count == 1 and doc.ocr_pages == (1,)
    page = doc.pages[0]
    assert page.ocr and page.number == 1
    assert "widow" in page.text and "garden" in page.text
    assert progress == [(1, 1, True)]
    chunks = chunk_document(doc, doc_sha="c" * 64)
    assert chunks and all(c.metadata["ocr"] is True for c in chunks)


def test_ocr_off_refuses_the_scan_with_advice() -> None:
    with pytest.raises(NoExtractableText, match=r"^no extractable text \(1 page; scanned\? turn OCR on\)$"):
        load_document("c02-22.pdf", (TRICKY / "ocrmypdf__c02-22.pdf").read_bytes(), ocr=False)


@pytest.mark.slow
def test_a_picture_with_no_text_is_still_no_text() -> None:
    # A drawing of a boy scout: OCR runs and finds no letters.
    with pytest.raises(NoExtractableText, match=r"^no extractable text \(1 page; no text found by OCR either\)$"):
        load_document("grayscale.pdf",
                      (TRICKY / "pypdf-sample-files__019-grayscale-image__grayscale-image.pdf").read_bytes())


def test_text_pages_are_never_ocrd(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(page: object) -> str:
        raise AssertionError("a page with a text layer was sent to OCR")

    monkeypatch.setattr(ocr_module, "ocr_page", fail)
    monkeypatch.setattr(ocr_module, "read_page", fail)
    doc = load_document("geotopo.pdf", (TRICKY / "pypdf-sample-files__009-pdflatex-geotopo__GeoTopo-komprimiert.pdf").read_bytes())
    assert doc.ocr_pages == () and doc.page_count == 117


A4 = (595.0, 842.0)  # points


@pytest.mark.parametrize(
    ("chars", "cover", "expected"),
    [
        (0, 1.0, True),  # a scan
        (0, 0.2, True),  # no text, some image
        (0, 0.05, False),  # no text, a small logo: nothing to read
        (0, 0.0, False),  # a blank page
        (10, 0.9, True),  # a scan with a stray text layer ("Background")
        (300, 0.9, True),  # 300 characters on an A4 page mostly covered by an image
        (300, MIN_IMAGE_COVER - 0.01, False),  # a figure page with a caption
        (3000, 1.0, False),  # a full text layer over a scan (already OCR'd)
    ],
)
def test_needs_ocr(chars: int, cover: float, expected: bool) -> None:
    assert needs_ocr("x" * chars, *A4, cover) is expected


def test_needs_ocr_looks_at_images_only_when_text_is_short() -> None:
    def boom() -> float:
        raise AssertionError("image cover computed for a page full of text")

    assert needs_ocr("x" * 3000, *A4, boom) is False


def test_render_scale_bounds() -> None:
    assert ocr_module.render_scale(*A4) == 1.5  # 108 dpi: 893 x 1263 pixels
    assert ocr_module.render_scale(3.84, 3.84) * 3.84 == pytest.approx(ocr_module.MIN_RENDER_SIDE)
    assert ocr_module.render_scale(3000.0, 3000.0) * 3000.0 == pytest.approx(ocr_module.MAX_RENDER_SIDE)


def _box(x0: float, y0: float, x1: float, y1: float) -> list[list[float]]:
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]


def test_reading_order_reads_columns_one_after_the_other() -> None:
    # A full-width title, two columns 20 px apart (line height 22 px), a full-width footer;
    # the detector lists the lines row by row across the gutter.
    lines = [((100, 10, 1000, 40), "Title"),
             ((100, 60, 540, 82), "left 1"), ((560, 62, 1000, 84), "right 1"),
             ((100, 90, 540, 112), "left 2"), ((560, 92, 1000, 114), "right 2"),
             ((100, 120, 540, 142), "left 3"),
             ((100, 170, 1000, 192), "Footer")]
    boxes = [_box(*r) for r, _ in lines]
    got = ocr_module.reading_order(boxes, [t for _, t in lines])
    assert got == ["Title", "left 1", "left 2", "left 3", "right 1", "right 2", "Footer"]


def test_reading_order_undoes_skew() -> None:
    import math

    lines = [((100, 60, 540, 82), "left 1"), ((560, 60, 1000, 82), "right 1"),
             ((100, 90, 540, 112), "left 2"), ((560, 90, 1000, 112), "right 2")]
    turn = math.radians(4)

    def rotate(box: list[list[float]]) -> list[list[float]]:
        return [[x * math.cos(turn) - y * math.sin(turn), x * math.sin(turn) + y * math.cos(turn)] for x, y in box]

    got = ocr_module.reading_order([rotate(_box(*r)) for r, _ in lines], [t for _, t in lines])
    assert got == ["left 1", "left 2", "right 1", "right 2"]


def _linn_truth() -> str:
    from rag.ingest.loaders import normalize_text

    return normalize_text((TRICKY / "ocrmypdf__linn.txt").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_lines_shared_among_threads_read_as_in_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # linn: a letter-size typed page with its true text (2.1 % CER at 108 dpi).
    import pypdfium2 as pdfium

    from rag.bench.ocr import character_error_rate

    pdf = pdfium.PdfDocument(str(TRICKY / "ocrmypdf__linn.pdf"))
    try:
        monkeypatch.setattr(ocr_module, "rec_threads", lambda: 2)
        monkeypatch.setattr(ocr_module, "_engine", None)
        shared = ocr_module.read_page(pdf[0])
        assert ocr_module._engine.recognize_txt.__qualname__.startswith("_parallel_recognition")
        monkeypatch.setattr(ocr_module, "rec_threads", lambda: 1)
        monkeypatch.setattr(ocr_module, "_engine", None)
        alone = ocr_module.read_page(pdf[0])
    finally:
        pdf.close()
    assert shared == alone
    assert character_error_rate(shared[0], _linn_truth()) < 0.025


def test_parallel_recognition_puts_each_line_back_in_its_place() -> None:
    import numpy as np

    class Out:
        def __init__(self, imgs: list, txts: tuple, scores: list, words: tuple, elapse: float,
                     viser: object = None) -> None:
            self.imgs, self.txts, self.scores, self.word_results = imgs, txts, scores, words
            self.elapse, self.viser = elapse, viser

    calls: list[int] = []

    def recognize(imgs: list) -> Out:  # "reads" each line as its width
        calls.append(len(imgs))
        return Out(imgs, tuple(str(i.shape[1]) for i in imgs), [i.shape[1] / 100 for i in imgs],
                   tuple((str(i.shape[1]), 1.0, None) for i in imgs), 0.1)

    widths = [50, 10, 90, 30, 70, 20, 60]
    lines = [np.zeros((10, w, 3), dtype=np.uint8) for w in widths]
    out = ocr_module._parallel_recognition(recognize, 2)(lines)
    assert out.txts == tuple(str(w) for w in widths)
    assert out.scores == [w / 100 for w in widths]
    assert [w[0] for w in out.word_results] == [str(w) for w in widths]
    assert sorted(calls) == [3, 4]  # dealt out in turn by width
    calls.clear()
    assert ocr_module._parallel_recognition(recognize, 2)(lines[:3]).txts == ("50", "10", "90")
    assert calls == [3]  # too few lines to share


def test_the_engine_is_built_with_the_measured_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    import rapidocr

    built: list[dict] = []

    class Fake:
        def __init__(self, params: dict) -> None:
            built.append(params)

        def recognize_txt(self, imgs: list) -> None:
            return None

        def cls_and_rotate(self, imgs: list) -> None:
            return None

    monkeypatch.setattr(rapidocr, "RapidOCR", Fake)
    monkeypatch.setattr(ocr_module, "_engine", None)
    monkeypatch.setattr(ocr_module, "rec_threads", lambda: 2)
    engine = ocr_module.engine()
    params = built[0]
    assert params["EngineConfig.onnxruntime.intra_op_num_threads"] == 1
    assert params["EngineConfig.onnxruntime.inter_op_num_threads"] == 1
    assert params["EngineConfig.onnxruntime.enable_cpu_mem_arena"] is True
    assert params["Rec.rec_batch_num"] == 1
    assert params["Det.limit_type"] == "max" and params["Det.limit_side_len"] == ocr_module.MAX_RENDER_SIDE
    assert params["Rec.model_path"].endswith(".onnx")
    assert params["Cls.cls_thresh"] >= 1  # (a score over it) no line is turned by itself: the page decides
    assert engine.cls_and_rotate.__qualname__.startswith("_page_orientation")
    assert engine.recognize_txt.__qualname__.startswith("_parallel_recognition")
    monkeypatch.setattr(ocr_module, "_engine", None)
    monkeypatch.setattr(ocr_module, "rec_threads", lambda: 1)
    assert ocr_module.engine().recognize_txt.__qualname__.endswith("Fake.recognize_txt")


def test_lines_are_turned_only_when_most_of_the_page_is_upside_down() -> None:
    import types

    import numpy as np

    def classify(labels: list[tuple[str, float]]):
        def run(imgs: list):
            return imgs, types.SimpleNamespace(img_list=imgs, cls_res=labels)
        return ocr_module._page_orientation(run)

    imgs = [np.arange(6).reshape(2, 3) + 10 * k for k in range(3)]
    upright = [("0", 0.99), ("180", 0.95), ("0", 0.8)]  # one line called upside down: a mistake
    turned, result = classify(upright)(imgs)
    assert all((a == b).all() for a, b in zip(turned, imgs, strict=True))
    upside_down = [("180", 0.99), ("180", 0.95), ("0", 0.6)]  # most lines: the page is upside down
    turned, result = classify(upside_down)(imgs)
    assert (turned[0] == imgs[0][::-1, ::-1]).all() and (turned[1] == imgs[1][::-1, ::-1]).all()
    assert (turned[2] == imgs[2]).all() and result.img_list is turned
    weak = [("180", 0.85), ("180", 0.8), ("0", 0.6)]  # under RapidOCR's own threshold
    assert all((a == b).all() for a, b in zip(classify(weak)(imgs)[0], imgs, strict=True))


def test_a_worker_process_recognises_with_a_thread_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    import multiprocessing
    import sys
    import types

    assert ocr_module.rec_threads() == min(os.cpu_count() or 1, ocr_module.MAX_THREADS)
    # spawn re-runs the parent's __main__ in the child: under a whole test session that may be a file
    # another test ran as __main__ (a Streamlit page), whose child would die and be respawned forever
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        # the last scanned page of a batch then uses every core, not one
        assert pool.apply_async(ocr_module.rec_threads).get(timeout=120) == ocr_module.rec_threads()


def test_a_blank_page_is_not_sent_to_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    import pypdfium2 as pdfium

    def fail(*args: object) -> None:
        raise AssertionError("a blank page was read by OCR")

    monkeypatch.setattr(ocr_module, "_engine", fail)
    pdf = pdfium.PdfDocument.new()
    try:
        page = pdf.new_page(595, 842)
        assert ocr_module.read_page(page) == ("", ())
    finally:
        pdf.close()
