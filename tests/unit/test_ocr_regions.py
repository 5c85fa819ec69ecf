"""Blank margins and blank bands of a rendered page (rag.ingest.ocr_regions), on drawn images."""

from __future__ import annotations

import numpy as np

from rag.ingest.ocr_regions import MARGIN, inked_area, split


def page(height: int = 400, width: int = 300) -> np.ndarray:
    return np.full((height, width, 3), 250, dtype=np.uint8)


def test_a_blank_page_has_nothing_to_read() -> None:
    noisy = page()
    noisy[100, 100] = 0  # one speck of dust
    assert inked_area(page()) is None and split(page(), 2) == []
    assert split(noisy, 2) == []


def test_margins_are_cropped_and_light_grey_text_counts() -> None:
    image = page()
    image[50:60, 40:200] = 190  # light grey "text" on white
    image[300:310, 40:260, 0] = 0  # a red line: its red channel is dark
    assert inked_area(image) == (50 - MARGIN, 40 - MARGIN, 310 + MARGIN, 260 + MARGIN)


def test_split_cuts_along_the_blank_band_nearest_the_middle() -> None:
    image = page()
    for top in range(20, 380, 30):  # lines of "text" 12 px high, 18 px apart
        image[top:top + 12, 30:270] = 20
    pieces = split(image, 2)
    assert len(pieces) == 2
    (t1, l1, b1, r1), (t2, l2, b2, r2) = pieces
    assert b1 == t2 and (l1, r1) == (l2, r2)
    assert not (image[b1, l1:r1] < 200).any()  # the cut runs through blank pixels only
    assert abs(b1 - 200) <= 30


def test_a_page_with_no_blank_band_is_read_whole() -> None:
    image = page()
    image[20:380, 30:270] = np.random.default_rng(0).integers(0, 120, (360, 240, 3), dtype=np.uint8)
    assert split(image, 2) == [inked_area(image)]


def test_columns_are_cut_at_the_gutter_when_no_row_is_blank() -> None:
    image = page()
    image[20:380, 20:140] = 30  # two solid columns, a 20 px gutter
    image[20:380, 160:280] = 30
    (_, _, _, right), (_, left, _, _) = split(image, 2)
    assert right == left and 140 <= left <= 160
