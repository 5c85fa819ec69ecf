"""Chunk spans mapped from the normalised page text back to PDFium's (or OCR's) text, deterministically."""

from __future__ import annotations

from rag.ingest.spans import keys, map_spans, piece_spans
from rag.ingest.text import normalize_text


def test_keys_ignore_spacing_punctuation_hyphens_and_ligatures() -> None:
    assert keys("The re-\ntrieval  of ﬁles, café!") == keys("The retrieval of files, cafe")
    assert keys("The retrieval of files, cafe") == "Theretrievaloffilescafe"
    assert keys("θ = 2") == "θ2"


def test_piece_spans_find_overlapping_pieces_in_order() -> None:
    text = "alpha beta gamma delta alpha beta"
    pieces = ["alpha beta gamma ", " gamma delta alpha", "alpha beta"]
    assert piece_spans(text, pieces) == [(0, 16), (11, 28), (23, 33)]
    assert piece_spans(text, ["zeta"]) == [None]


def test_spans_map_back_through_normalisation() -> None:
    layer = ("Dense  re-\r\ntrieval (DPR)\r\nuses ﬁne-tuned\u00a0encoders [26].\r\n\r\n\r\n"
             "Next para-\r\ngraph here.")
    text = normalize_text(layer)
    chunk = "retrieval (DPR)\nuses fine-tuned encoders [26]."
    start = text.index(chunk)
    [span] = map_spans(layer, text, [(start, start + len(chunk))])
    assert span is not None
    got = layer[span[0]:span[1]]
    assert got.startswith("re-\r\ntrieval") and got.endswith("[26].")
    assert keys(got) == keys(chunk)


def test_a_text_not_made_from_the_layer_maps_to_nothing() -> None:
    layer = "PDFium read this page"
    assert map_spans(layer, "pypdf read another text", [(0, 5)]) == [None]
    assert map_spans(layer, normalize_text(layer), [(0, 1), None, (6, 6)]) == [(0, 1), None, None]


def test_a_trademark_sign_is_dropped_and_spans_still_map() -> None:
    layer = "brands, such as Squishmallows\u2122, BLDR\u2122 and Adopt Me\u2122.\r\nNext line."
    text = normalize_text(layer)
    assert "Squishmallows, BLDR and Adopt Me." in text and "TM" not in text
    start = text.index("Squishmallows")
    [span] = map_spans(layer, text, [(start, start + len("Squishmallows, BLDR"))])
    assert span is not None and layer[span[0]:span[1]] == "Squishmallows\u2122, BLDR"
