"""Which PDF pages OCR reads: the rule ingestion follows (:func:`needs_ocr`) and what it measures."""

from __future__ import annotations

from collections.abc import Callable

MIN_TEXT_CHARS = 50
"""A page with fewer characters than this in its text layer is "too little text" for OCR."""
MIN_CHARS_PER_SQ_INCH = 5.0
"""A page whose text layer has fewer characters per square inch (A4 has 96.7) is too sparse."""
MIN_IMAGE_COVER = 0.5
"""OCR a page with some text only when images cover at least this share of it (a scan)."""


def image_cover(page) -> float:
    """Share (0-1) of ``page``'s area covered by image objects (bounding boxes, summed, capped)."""
    import pypdfium2 as pdfium

    width, height = page.get_size()
    area = max(width * height, 1e-9)
    covered = 0.0
    for obj in page.get_objects(filter=(pdfium.raw.FPDF_PAGEOBJ_IMAGE,), max_depth=3):
        left, bottom, right, top = obj.get_bounds()
        w = max(0.0, min(right, width) - max(left, 0.0))
        h = max(0.0, min(top, height) - max(bottom, 0.0))
        covered += w * h
    return min(1.0, covered / area)


def needs_ocr(text: str, width_pt: float, height_pt: float,
              image_cover: float | Callable[[], float]) -> bool:
    """Whether a page whose text layer is ``text``.

    (normalised), of ``width_pt`` x ``height_pt`` points with images covering ``image_cover`` (0-1) of it,
    should be read by OCR: it has no text and some image (10% of the page or more), or images cover at least
    :data:`MIN_IMAGE_COVER` of it and its text is under :data:`MIN_TEXT_CHARS` characters or
    :data:`MIN_CHARS_PER_SQ_INCH` per square inch. A page with no image is never OCR'd (a blank page or one
    drawn with vector graphics has nothing to read). ``image_cover`` may be a function, called only when the
    text alone does not settle it (it walks the page's objects, which is slow on text-heavy pages).
    """
    chars = len(text)
    sq_inches = (width_pt / 72.0) * (height_pt / 72.0)
    if chars >= MIN_TEXT_CHARS and chars >= MIN_CHARS_PER_SQ_INCH * sq_inches:
        return False
    cover = image_cover() if callable(image_cover) else image_cover
    return cover >= (0.1 if chars == 0 else MIN_IMAGE_COVER)
