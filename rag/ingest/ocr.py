"""Optical character recognition of scanned PDF pages, offline.

A page is rendered with pypdfium2 and read with RapidOCR (PP-OCR detection, direction
classification and recognition models in ONNX, shipped inside the ``rapidocr`` wheel and run by
onnxruntime): nothing is downloaded at run time. The engine is built on first use (about 1.5 s)
and shared by the whole process.

Speed (measured with ``python -m rag bench ingest --ocr-files``, against pypdfium2 at 300 dpi
and ``RapidOCR()`` with its defaults): pages are rendered at 108 dpi (144 dpi cost 18 % more CPU for
the same text on the shared scans; 90 dpi and less raised linn's error rate from 2.1 % to 3.4 %, and a
detector limited to 960 pixels lost text on one of them); a page's blank margins are cropped and a
blank page is not read at all; the detector reads the rest whole, and its lines are shared out among
threads (one per core) for recognition, the stage that takes three quarters of the time, all on one
engine whose onnxruntime sessions run one thread each (onnxruntime releases the GIL) with its memory
arena on (6 % less CPU). Recognition runs line by line (a batch pads every line to the widest of the
batch; a batch of 6 cost ~28 % more CPU). A worker process of the pipeline (one per core) shares a page's
lines out the same way, so the last pages of a batch use every core. Cutting a page into pieces read at
once (along blank bands, :mod:`rag.ingest.ocr_regions`) was slower: a page with no blank band near its
middle stayed whole.

Accuracy: the direction classifier's verdicts turn a page's lines only when most of them are called upside
down (:func:`_page_orientation`); RapidOCR turns each such line, and on upright small print scanned at 200
dpi it turned some and garbled them (a 10-K page: CER 8.1 % against 0.56 %). At 144 dpi instead of 108, a
page of formulas read better (CER 18.5 % against 21.3 %) for 17 % more CPU on five test pages.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from rag.ingest.errors import MissingDependency
from rag.ingest.ocr_regions import inked_area

log = logging.getLogger(__name__)

RENDER_SCALE = 1.5
"""Pixels per PDF point when a page is rendered for OCR (1.5 = 108 dpi)."""
MIN_RENDER_SIDE = 1000
"""Pages so small that :data:`RENDER_SCALE` gives fewer pixels on their long side are rendered larger."""
MAX_RENDER_SIDE = 4000
"""Pages so large that :data:`RENDER_SCALE` gives more pixels on their long side are rendered smaller."""

MAX_THREADS = 4
"""At most this many threads recognise one page's lines at once (one per core, in the main process)."""
REC_BATCH = 1
"""Lines per recognition call; RapidOCR pads a batch's lines to its widest (its 6 cost ~28 % more CPU)."""
ENGINE_PARAMS: dict[str, Any] = {
    "Global.log_level": "error",
    "EngineConfig.onnxruntime.intra_op_num_threads": 1,  # recognition threads and worker processes: the cores
    "EngineConfig.onnxruntime.inter_op_num_threads": 1,
    "EngineConfig.onnxruntime.enable_cpu_mem_arena": True,  # RapidOCR turns it off; on, 6 % less CPU
    "Rec.rec_batch_num": REC_BATCH,
    "Cls.cls_thresh": 1.0,  # the classifier turns no line itself: _page_orientation decides for the page
    # Never scale a piece up for the detector (its default, "min" 736, blew narrow bands up 3-4 times).
    "Det.limit_type": "max",
    "Det.limit_side_len": MAX_RENDER_SIDE,
}
"""RapidOCR settings of :func:`engine`, beside the bundled models' paths."""
CLS_FLIP_SCORE = 0.9
"""A line the direction classifier calls upside down with a score over this is so (RapidOCR's threshold)."""

MIN_ALNUM = 3
"""A page whose OCR finds fewer letters and digits than this has no text (it is a picture)."""

_engine: Any = None
_engine_lock = threading.Lock()


def _bundled_models() -> dict[str, str]:
    """Paths of the ONNX models inside the installed ``rapidocr`` package.

    So the engine never looks elsewhere (and never downloads). Raises MissingDependency when they are absent.
    """
    import rapidocr

    models = Path(rapidocr.__file__).resolve().parent / "models"
    found = {
        "Det.model_path": sorted(models.glob("*det*.onnx")),
        "Cls.model_path": sorted(models.glob("*cls*.onnx")),
        "Rec.model_path": sorted(models.glob("*rec*.onnx")),
    }
    missing = [k.split(".")[0] for k, v in found.items() if not v]
    if missing:
        raise MissingDependency(
            f"OCR models missing from the rapidocr package ({', '.join(missing)}); "
            "reinstall it: pip install rapidocr==3.10.0")
    return {key: str(paths[0]) for key, paths in found.items()}


def engine() -> Any:
    """The shared RapidOCR engine, built on first call from the models bundled in the wheel.

    Raises :class:`MissingDependency` when ``rapidocr`` (or onnxruntime, which it runs on) is not
    installed or its models are missing.
    """
    global _engine
    with _engine_lock:
        if _engine is None:
            try:
                from rapidocr import RapidOCR
            except ImportError as exc:
                raise MissingDependency(
                    f"OCR needs rapidocr and onnxruntime ({exc}); run: pip install rapidocr==3.10.0"
                ) from exc
            _engine = RapidOCR(params={**ENGINE_PARAMS, **_bundled_models()})
            _engine.cls_and_rotate = _page_orientation(_engine.cls_and_rotate)
            if (threads := rec_threads()) > 1:
                _engine.recognize_txt = _parallel_recognition(_engine.recognize_txt, threads)
        return _engine


def render_scale(width_pt: float, height_pt: float) -> float:
    """Scale (pixels per point) for rendering a page of ``width_pt`` x ``height_pt`` points.

    :data:`RENDER_SCALE`, raised so the long side gets at least :data:`MIN_RENDER_SIDE` pixels and lowered so
    it gets at most :data:`MAX_RENDER_SIDE`.
    """
    side = max(width_pt, height_pt, 1e-3)
    scale = RENDER_SCALE
    if side * scale < MIN_RENDER_SIDE:
        scale = MIN_RENDER_SIDE / side
    if side * scale > MAX_RENDER_SIDE:
        scale = MAX_RENDER_SIDE / side
    return scale


def rec_threads() -> int:
    """Threads that share a page's lines for recognition: one per core, up to :data:`MAX_THREADS`.

    In a worker process of the pipeline too (there is one such process per core): while both read pages the
    cores are shared, but the last page of a batch, or a lone one, gets them all (17 scanned pages: 9.2 s
    against 12.0 s with one thread a worker, ``bench ingest --ocr-files``, 2026-11-27).
    """
    return max(1, min(os.cpu_count() or 1, MAX_THREADS))


def _parallel_recognition(recognize: Any, threads: int) -> Any:
    """``recognize`` (RapidOCR's ``recognize_txt``: line images -> TextRecOutput) spread over ``threads``.

    The lines, ordered by width, are dealt out in turn so each thread gets a like share of the work; the
    results come back in the lines' order. A few lines are read in the calling thread.
    """
    def run(imgs: list) -> Any:
        if len(imgs) < 2 * threads:
            return recognize(imgs)
        order = sorted(range(len(imgs)), key=lambda i: imgs[i].shape[1] / max(imgs[i].shape[0], 1))
        shares = [order[k::threads] for k in range(threads)]
        with ThreadPoolExecutor(threads, thread_name_prefix="ocr-rec") as pool:
            parts = list(pool.map(lambda share: recognize([imgs[i] for i in share]), shares))
        txts: list = [""] * len(imgs)
        scores: list = [0.0] * len(imgs)
        words: list = [None] * len(imgs)
        for share, part in zip(shares, parts, strict=True):
            for j, i in enumerate(share):
                txts[i], scores[i] = part.txts[j], part.scores[j]
                words[i] = part.word_results[j] if j < len(part.word_results) else None
        return type(parts[0])(list(imgs), tuple(txts), scores, tuple(words),
                              max(p.elapse or 0.0 for p in parts), viser=parts[0].viser)

    return run


def _page_orientation(classify: Any) -> Any:
    """RapidOCR's ``cls_and_rotate`` (set to turn no line) turning lines of upside-down pages only.

    RapidOCR turns every line its direction classifier calls upside down (score over :data:`CLS_FLIP_SCORE`);
    the classifier sees a line's first 192 pixels, and on upright small print it called some lines upside
    down, which then came out garbled (a 10-K page scanned at 200 dpi: CER 8.1 % with it, 0.56 % without).
    Here the lines so called are turned only when they are most of the page's: a page scanned upside down.
    """
    def run(imgs: list) -> Any:
        turned, result = classify(imgs)
        labels = result.cls_res or []
        flip = [i for i, (label, score) in enumerate(labels) if "180" in label and score > CLS_FLIP_SCORE]
        if flip and len(flip) * 2 > len(labels):
            turned = list(turned)
            for i in flip:
                turned[i] = np.ascontiguousarray(turned[i][::-1, ::-1])
            result.img_list = turned
        return turned, result

    return run


OcrLine = tuple[int, int, float, float, float, float]
"""One line read by OCR: ``(start, end, left, top, right, bottom)``; ``start``/``end`` are its character
offsets in the page's OCR text, the box is its bounding box as fractions (0-1) of the page's width and height
as rendered (top-left origin, /Rotate applied)."""


def ocr_page(page) -> str:
    """Text of one ``pypdfium2.PdfPage`` read by OCR.

    Its lines top to bottom, joined by newlines; lines with no letter or digit are dropped, and "" is returned
    when fewer than :data:`MIN_ALNUM` letters and digits are recognised. The page is rendered with its /Rotate
    applied, so rotated scans come out upright. Takes about 1-7 s per page on one core.

    Raises :class:`MissingDependency` as :func:`engine` does.
    """
    return read_page(page)[0]


def read_page(page) -> tuple[str, tuple[OcrLine, ...]]:
    """:func:`ocr_page`'s text of one ``pypdfium2.PdfPage``, and where each of its lines is on the page.

    The lines are :data:`OcrLine` tuples in the text's order (none when the text is ""). Raises
    :class:`MissingDependency` as :func:`engine` does.
    """
    ocr = engine()
    width, height = page.get_size()
    bitmap = page.render(scale=render_scale(width, height), may_draw_forms=True)
    try:
        image = bitmap.to_numpy()
        if image.ndim == 3 and image.shape[2] == 4:
            image = image[:, :, :3]
        area = inked_area(image)
        txts, boxes = _read_area(ocr, image, area) if area else ([], [])
        px_w, px_h = max(bitmap.width, 1), max(bitmap.height, 1)
    finally:
        bitmap.close()
    order = (reading_order_indices(boxes) if txts and all(b is not None for b in boxes)
             else range(len(txts)))
    # Lines with no letter or digit are shapes read as glyphs (a picture's blocks become "■").
    kept = [(txts[i].strip(), boxes[i]) for i in order
            if txts[i] and any(ch.isalnum() for ch in txts[i])]
    if sum(ch.isalnum() for line, _ in kept for ch in line) < MIN_ALNUM:
        return "", ()  # a picture, not text: a stray "1" is not worth a chunk
    lines: list[OcrLine] = []
    at = 0
    for line, box in kept:
        if box is not None:
            xs = [float(p[0]) for p in box]
            ys = [float(p[1]) for p in box]
            lines.append((at, at + len(line), round(max(min(xs) / px_w, 0.0), 4),
                          round(max(min(ys) / px_h, 0.0), 4), round(min(max(xs) / px_w, 1.0), 4),
                          round(min(max(ys) / px_h, 1.0), 4)))
        at += len(line) + 1
    return "\n".join(line for line, _ in kept), tuple(lines)


def _read_area(ocr, image, area: tuple[int, int, int, int]) -> tuple[list[str], list]:
    """``(lines, their boxes)`` read by ``ocr`` in the ``(top, left, bottom, right)`` area of ``image``.

    In the engine's order; each box is a 4-corner polygon in the whole image's pixels, or None when the
    engine gave no box.
    """
    top, left, bottom, right = area
    result = ocr(np.ascontiguousarray(image[top:bottom, left:right]))
    txts = list(getattr(result, "txts", None) or ())
    polys = getattr(result, "boxes", None)
    if polys is None or len(polys) != len(txts):
        return txts, [None] * len(txts)
    return txts, [[(float(x) + left, float(y) + top) for x, y in poly] for poly in polys]


def _gaps(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Empty stretches ``(start, end)`` between the union of 1-D ``spans``, widest first."""
    spans = sorted(spans)
    gaps: list[tuple[float, float]] = []
    reach = spans[0][1]
    for start, end in spans[1:]:
        if start > reach:
            gaps.append((reach, start))
        reach = max(reach, end)
    return sorted(gaps, key=lambda g: g[0] - g[1])


def reading_order(boxes, texts: list[str]) -> list[str]:
    """``texts`` in reading order (see :func:`reading_order_indices`)."""
    return [texts[i] for i in reading_order_indices(boxes)]


def reading_order_indices(boxes) -> list[int]:
    """The indices of ``boxes`` (one 4-corner polygon in pixels per detected line) in reading order.

    By recursive XY-cut: a region is split at its widest vertical gutter (columns, left to right) when one
    at least half a line-height wide runs through all of it, else at its widest horizontal gap (top to
    bottom); a region with neither is read top to bottom, left to right. The boxes are first turned by the
    median slope of their top edges, so a skewed scan's columns still line up. Keeps two-column pages from
    being read across the gutter line by line.
    """
    import math

    # A skewed scan: undo the median slope of the lines' top edges first.
    angles = sorted(math.atan2(float(b[1][1]) - float(b[0][1]), float(b[1][0]) - float(b[0][0]))
                    for b in boxes)
    angle = angles[len(angles) // 2] if angles else 0.0
    cos, sin = math.cos(-angle), math.sin(-angle)
    rects = []
    for i, box in enumerate(boxes):
        points = [(float(p[0]) * cos - float(p[1]) * sin, float(p[0]) * sin + float(p[1]) * cos)
                  for p in box]
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        rects.append((min(xs), min(ys), max(xs), max(ys), i))
    if len(rects) < 2:
        return [r[4] for r in rects]
    heights = sorted(r[3] - r[1] for r in rects)
    line_height = max(heights[len(heights) // 2], 1.0)
    out: list[int] = []

    def cut(region: list[tuple[float, float, float, float, int]]) -> None:
        if len(region) == 1:
            out.append(region[0][4])
            return
        # Boxes overlap a little; shrinking each by a tenth of a line height lets a real gap show.
        pad = line_height * 0.1
        columns = _gaps([(r[0] + pad, r[2] - pad) for r in region])
        if columns and columns[0][1] - columns[0][0] >= line_height * 0.5:
            at = (columns[0][0] + columns[0][1]) / 2
            cut([r for r in region if (r[0] + r[2]) / 2 < at])
            cut([r for r in region if (r[0] + r[2]) / 2 >= at])
            return
        rows = _gaps([(r[1] + pad, r[3] - pad) for r in region])
        if rows:
            at = (rows[0][0] + rows[0][1]) / 2
            cut([r for r in region if (r[1] + r[3]) / 2 < at])
            cut([r for r in region if (r[1] + r[3]) / 2 >= at])
            return
        out.extend(r[4] for r in sorted(region, key=lambda r: (r[1], r[0])))

    cut(rects)
    return out
