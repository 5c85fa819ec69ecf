"""Where a rendered page has ink: its blank margins, and the blank bands that split it into pieces.

Pure numpy on the page's pixels (a fraction of a second a page). :mod:`rag.ingest.ocr` reads only the inked
part of a page (:func:`inked_area`). :func:`split` cuts it along blank bands (so no line of text is cut); OCR
no longer reads pages in such pieces (sharing a whole page's lines among threads for recognition was
faster: a page with no blank band near its middle could not be cut).
"""

from __future__ import annotations

import numpy as np

INK_CONTRAST = 48
"""A pixel whose darkest channel is darker than the paper by more than this (0-255) is ink; the paper is the
page's 90th percentile of brightness, so light grey text on white and dark text on a grey scan both count."""
INK_SHARE = 0.002
"""A row or column with fewer ink pixels than this share of its length is blank (scanner specks)."""
MIN_BAND = 4
"""A blank band must be at least this many pixels high (or wide) to be cut along."""
MARGIN = 12
"""Pixels of blank kept around the inked area when the margins are cropped."""

Box = tuple[int, int, int, int]
"""A rectangle of the page's pixels: ``(top, left, bottom, right)``, bottom and right exclusive."""


def _blank(ink: np.ndarray, length: int) -> np.ndarray:
    """Which of the rows (or columns) whose ink pixel counts are ``ink`` are blank, as a bool array."""
    return ink <= max(1, int(length * INK_SHARE))


def ink_profile(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ink pixels per row and per column of an ``(H, W)`` or ``(H, W, C)`` uint8 image."""
    gray = image if image.ndim == 2 else image[:, :, :3].min(axis=2)
    paper = float(np.percentile(gray[::4, ::4], 90))
    ink = gray < paper - INK_CONTRAST
    return ink.sum(axis=1), ink.sum(axis=0)


def inked_area(image: np.ndarray) -> Box | None:
    """The smallest rectangle holding every non-blank row and column, :data:`MARGIN` around it.

    None when the image is blank.
    """
    height, width = image.shape[:2]
    rows, cols = ink_profile(image)
    full_rows = np.flatnonzero(~_blank(rows, width))
    full_cols = np.flatnonzero(~_blank(cols, height))
    if not len(full_rows) or not len(full_cols):
        return None
    return (max(int(full_rows[0]) - MARGIN, 0), max(int(full_cols[0]) - MARGIN, 0),
            min(int(full_rows[-1]) + 1 + MARGIN, height), min(int(full_cols[-1]) + 1 + MARGIN, width))


def _bands(blank: np.ndarray) -> list[tuple[int, int]]:
    """Runs ``(start, end)`` of True in ``blank`` at least :data:`MIN_BAND` long, end exclusive."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], blank.astype(np.int8), [0]))))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True) if b - a >= MIN_BAND]


def split(image: np.ndarray, pieces: int) -> list[Box]:
    """Up to ``pieces`` rectangles covering the inked area of ``image``, cut along blank bands.

    Cut across (along blank rows) near equal heights, or, when no blank row runs near where a cut should
    go, down (along blank columns, such as a gutter). A cut never goes through ink, so no line of text is
    split; a page with no blank band where it is needed comes back whole. Returns [] for a blank image.
    """
    area = inked_area(image)
    if area is None:
        return []
    top, left, bottom, right = area
    if pieces < 2:
        return [area]
    crop = image[top:bottom, left:right]
    rows, cols = ink_profile(crop)
    height, width = bottom - top, right - left
    for axis, ink, length, span in ((0, rows, width, height), (1, cols, height, width)):
        bands = _bands(_blank(ink, length))
        cuts: list[int] = []
        for k in range(1, pieces):
            target, window = span * k / pieces, span / (2 * pieces)
            near = [(abs((a + b) / 2 - target), (a + b) // 2) for a, b in bands
                    if abs((a + b) / 2 - target) <= window]
            if near:
                cuts.append(min(near)[1])
        cuts = sorted(set(cuts))
        if cuts:
            edges = [0, *cuts, span]
            if axis == 0:
                return [(top + a, left, top + b, right) for a, b in zip(edges, edges[1:], strict=False)]
            return [(top, left + a, bottom, left + b) for a, b in zip(edges, edges[1:], strict=False)]
    return [area]
