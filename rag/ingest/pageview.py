"""The cited passage where it is: a PDF page rendered with the chunk's text highlighted, or a text in context.

What a citation needs was stored at ingest (:func:`rag.ingest.chunking.position_metadata`): the chunk's
offsets in PDFium's text of its page (``pdf_start``/``pdf_end``), or, for a page read by OCR, the boxes of
the lines it covers (``ocr_boxes``); and, for every file type, its offsets in the normalised page text
(``span_start``/``span_end``). Opening a citation opens only its page of the kept PDF
(:mod:`rag.ingest.sources`) and takes the highlighted boxes from PDFium's positions of those characters
(``PdfTextPage.count_rects``/``get_rect``). Nothing is matched against the LLM's output.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from rag.ingest.pdf import _PDFIUM_LOCK
from rag.ingest.spans import map_spans
from rag.ingest.text import normalize_text
from rag.store import sources
from rag.store.records import row_meta, row_text

PAGE_WIDTH_PX = 1000
"""Pixels across a rendered page (its longer side when it is landscape)."""
HIGHLIGHT_FILL = (255, 214, 0, 96)
"""RGBA of the highlight: a translucent yellow over the text."""
HIGHLIGHT_EDGE = (230, 120, 0, 255)
"""RGBA of the highlight's outline."""
CONTEXT_CHUNKS = 2
"""How many chunks before and after a text chunk are shown around it."""

Box = tuple[int, int, int, int]
"""``(left, top, right, bottom)`` in pixels of the rendered image."""


@dataclass(frozen=True)
class PageView:
    """A PDF page rendered as a PNG image with the cited chunk highlighted.

    ``boxes`` are the highlighted rectangles in pixels (empty when the passage could not be located; ``note``
    then says why). ``page`` is 1-based; ``ocr`` says the boxes are the OCR's lines.
    """

    png: bytes
    width: int
    height: int
    page: int
    boxes: list[Box] = field(default_factory=list)
    ocr: bool = False
    note: str = ""


@dataclass(frozen=True)
class TextView:
    """A text chunk in its surrounding text: ``before + passage + after`` is a stretch of the page.

    ``passage`` is the cited chunk. Plain strings from the document: render them as text, never as markup.
    """

    before: str
    passage: str
    after: str
    note: str = ""


class PassageUnavailable(Exception):
    """The cited chunk cannot be shown (it is no longer in the knowledge base, or its file is gone)."""


def passage_rects(textpage, start: int, end: int) -> list[tuple[float, float, float, float]]:
    """PDFium's rectangles ``(left, bottom, right, top)`` in PDF points of the text ``start:end``.

    Offsets are into ``textpage.get_text_range()`` (PDFium's text of the whole page); they are turned into
    PDFium's character indices first (the two differ where PDFium inserted or left out characters). One
    rectangle per run of characters on a line. Call with :data:`rag.ingest.pdf._PDFIUM_LOCK` held.
    """
    import pypdfium2 as pdfium

    n_chars = textpage.count_chars()
    if n_chars <= 0 or end <= start:
        return []
    first = pdfium.raw.FPDFText_GetCharIndexFromTextIndex(textpage, start)
    last = pdfium.raw.FPDFText_GetCharIndexFromTextIndex(textpage, end - 1)
    if first < 0 or last < first:
        first, last = min(start, n_chars - 1), min(end - 1, n_chars - 1)
    count = textpage.count_rects(first, last - first + 1)
    return [textpage.get_rect(i) for i in range(count)]


def _locate(textpage, text: str) -> tuple[int, int] | None:
    """Offsets in PDFium's text of this page of ``text`` (a chunk stored without them), or None.

    Found in the page's normalised text, and mapped back (:func:`rag.ingest.spans.map_spans`): deterministic.
    """
    layer = textpage.get_text_range()
    page_text = normalize_text(layer)
    at = page_text.find(text)
    if at < 0 or not text:
        return None
    return map_spans(layer, page_text, [(at, at + len(text))])[0]


def render_page(pdf_path: Path | bytes, page: int, *, pdf_span: tuple[int, int] | None = None,
                ocr_boxes: list[list[float]] | None = None, text: str = "",
                width_px: int = PAGE_WIDTH_PX, password: str | None = None) -> PageView:
    """Page ``page`` (1-based) of a PDF (a path or its bytes) as a PNG, with a passage highlighted.

    The passage is ``pdf_span`` (offsets in PDFium's text of the page: its characters' boxes are
    highlighted), else ``ocr_boxes`` (fractions 0-1 of the page, top-left origin, as OCR found its lines),
    else ``text`` found on the page. The page is rendered with its /Rotate applied, ``width_px`` pixels on
    its longer side. Raises :class:`PassageUnavailable` when the file cannot be opened or has no such page.
    """
    import pypdfium2 as pdfium

    with _PDFIUM_LOCK:
        try:
            pdf = pdfium.PdfDocument(pdf_path, password=password)
        except pdfium.PdfiumError as exc:
            if getattr(exc, "err_code", None) == pdfium.raw.FPDF_ERR_PASSWORD:
                raise PassageUnavailable("the PDF is encrypted, and Retrace keeps no password") from exc
            raise PassageUnavailable(f"the PDF cannot be opened ({exc})") from exc
        try:
            if not 1 <= page <= len(pdf):
                raise PassageUnavailable(f"the PDF has no page {page}")
            pg = pdf[page - 1]
            width, height = pg.get_size()
            scale = width_px / max(width, height, 1.0)
            bitmap = pg.render(scale=scale)
            image = bitmap.to_pil().convert("RGB")
            boxes: list[Box] = []
            note = ""
            if ocr_boxes:
                boxes = [(int(b[0] * image.width), int(b[1] * image.height),
                          int(b[2] * image.width + 0.999), int(b[3] * image.height + 0.999))
                         for b in ocr_boxes if len(b) == 4]
            else:
                textpage = pg.get_textpage()
                try:
                    span = pdf_span or (_locate(textpage, text) if text else None)
                    rects = passage_rects(textpage, *span) if span else []
                finally:
                    textpage.close()
                convert = bitmap.get_posconv(pg)
                for left, bottom, right, top in rects:
                    x0, y0 = convert.to_bitmap(left, top)
                    x1, y1 = convert.to_bitmap(right, bottom)
                    boxes.append((min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)))
                boxes = merge_boxes(boxes)
                if not boxes:
                    note = "The passage could not be located on this page; the whole page is shown."
            bitmap.close()
            pg.close()
        finally:
            pdf.close()
    return PageView(png=_highlight(image, boxes), width=image.width, height=image.height, page=page,
                    boxes=boxes, ocr=bool(ocr_boxes), note=note)


def merge_boxes(boxes: list[Box]) -> list[Box]:
    """``boxes`` (in text order) with neighbours on one line joined.

    A box that shares at least half its height with the one before it and starts within one line-height of
    its right edge is merged into it: PDFium gives a rectangle per run of characters (a formula gives one per
    glyph), and a line reads better as one band.
    """
    merged: list[Box] = []
    for left, top, right, bottom in boxes:
        if merged:
            l0, t0, r0, b0 = merged[-1]
            height = min(bottom - top, b0 - t0)
            overlap = min(bottom, b0) - max(top, t0)
            near = l0 <= right and left <= r0 + max(bottom - top, b0 - t0)
            if height > 0 and overlap >= height / 2 and near:
                merged[-1] = (min(l0, left), min(t0, top), max(r0, right), max(b0, bottom))
                continue
        merged.append((left, top, right, bottom))
    return merged


def _highlight(image, boxes: list[Box]) -> bytes:
    """``image`` with the union of ``boxes`` tinted and outlined, as PNG bytes.

    Overlapping boxes (OCR lines touch) are tinted once, and only the union's edge is outlined.
    """
    from PIL import Image, ImageDraw, ImageFilter

    base = image.convert("RGBA")
    mask = Image.new("L", base.size, 0)
    draw = ImageDraw.Draw(mask)
    for left, top, right, bottom in boxes:
        draw.rectangle((left - 1, top - 1, right + 1, bottom + 1), fill=255)
    fill = Image.new("RGBA", base.size, HIGHLIGHT_FILL)
    base.paste(Image.alpha_composite(base, fill), (0, 0), mask)
    edge = mask.filter(ImageFilter.FIND_EDGES)
    base.paste(Image.new("RGBA", base.size, HIGHLIGHT_EDGE), (0, 0), edge)
    out = io.BytesIO()
    base.convert("RGB").save(out, format="PNG", optimize=False)
    return out.getvalue()


def _row(kb, chunk_id: str) -> tuple[str, dict]:
    got = kb.collection.get(ids=[chunk_id], include=["documents", "metadatas"])
    if not got["ids"]:
        raise PassageUnavailable("the cited chunk is no longer in the knowledge base")
    return row_text(got["documents"][0], got["metadatas"][0]), row_meta(got["metadatas"][0])


def open_passage(kb, chunk_id: str, *, width_px: int = PAGE_WIDTH_PX) -> PageView | TextView:
    """The cited chunk ``chunk_id`` of knowledge base ``kb`` where it is.

    For a PDF whose file was kept: a :class:`PageView` of its page. For other files (text, Markdown, Word,
    HTML): a :class:`TextView` of the chunk between its neighbours on the page. For a PDF indexed before files
    were kept, a :class:`TextView` whose ``note`` says so. Raises :class:`PassageUnavailable` when the chunk
    is gone or its page cannot be rendered, and the store's errors when the knowledge base cannot be read.
    """
    text, meta = _row(kb, chunk_id)
    page = int(meta.get("page", 0) or 0)
    sha = str(meta.get("doc_sha", ""))
    source = str(meta.get("source", ""))
    if source.lower().endswith(".pdf"):
        path = sources.find(getattr(kb, "data_dir", None), kb.name, sha)
        if path is not None and page >= 1:
            boxes = _boxes(meta.get("ocr_boxes"))
            span = ((int(meta["pdf_start"]), int(meta["pdf_end"]))
                    if "pdf_start" in meta and "pdf_end" in meta else None)
            view = render_page(path, page, pdf_span=span, ocr_boxes=boxes, text=text if not span else "",
                               width_px=width_px)
            if meta.get("ocr") and not boxes:
                view = PageView(view.png, view.width, view.height, page, view.boxes, True,
                                "This page was read by OCR; where the passage is on it was not recorded.")
            return view
        around = _in_context(kb, text, meta)
        return TextView(around.before, around.passage, around.after,
                        note="The original PDF was not kept (indexed before Retrace kept files); "
                             "re-index it to see the passage on its page.")
    return _in_context(kb, text, meta)


def _boxes(raw: object) -> list[list[float]] | None:
    if not isinstance(raw, str) or not raw:
        return None
    try:
        boxes = json.loads(raw)
    except ValueError:
        return None
    return [list(map(float, b)) for b in boxes if isinstance(b, list) and len(b) == 4] or None


def _in_context(kb, text: str, meta: dict) -> TextView:
    """``text`` between the chunks before and after it on its page (:data:`CONTEXT_CHUNKS` each side).

    Overlaps are merged using the chunks' ``span_start``/``span_end``; without them the neighbours are
    joined with an ellipsis.
    """
    index = int(meta.get("chunk_index", 0) or 0)
    where = {"$and": [{"doc_sha": str(meta.get("doc_sha", ""))}, {"page": int(meta.get("page", 0) or 0)},
                      {"chunk_index": {"$gte": index - CONTEXT_CHUNKS}},
                      {"chunk_index": {"$lte": index + CONTEXT_CHUNKS}}]}
    got = kb.collection.get(where=where, include=["documents", "metadatas"])
    rows = sorted(((row_meta(m), row_text(d, m))
                   for m, d in zip(got["metadatas"], got["documents"], strict=False)),
                  key=lambda r: int(r[0].get("chunk_index", 0)))
    start, end = meta.get("span_start"), meta.get("span_end")
    if start is None or end is None or any("span_start" not in m for m, _ in rows):
        before = " … ".join(d for m, d in rows if int(m.get("chunk_index", 0)) < index)
        after = " … ".join(d for m, d in rows if int(m.get("chunk_index", 0)) > index)
        return TextView(before + (" … " if before else ""), text, (" … " if after else "") + after)
    # Lay the chunks out at their offsets; a gap (whitespace the splitter dropped) becomes a space.
    page: dict[int, str] = {}
    for m, d in rows:
        for i, ch in enumerate(d):
            page.setdefault(int(m["span_start"]) + i, ch)
    lo, hi = min(page), max(page) + 1
    laid = "".join(page.get(i, " ") for i in range(lo, hi))
    s, e = int(start) - lo, int(end) - lo
    return TextView(laid[:s], laid[s:e], laid[e:])
