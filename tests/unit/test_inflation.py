"""rag.ingest.inflation: a PDF stream that inflates past the bound is refused before any parser reads it."""

from __future__ import annotations

import base64
import zlib

import pytest

from rag.ingest.errors import TooLarge
from rag.ingest.inflation import check_inflation
from tests.conftest import PAPERS, TRICKY

MIB = 1 << 20


def _pdf_with(stream: bytes, dictionary: bytes) -> bytes:
    head = b"%%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\n4 0 obj\n<< /Length %d " % len(stream)
    return head + dictionary + b" >>\nstream\n" + stream + b"\nendstream\nendobj\n%%EOF\n"


def test_a_stream_past_the_bound_is_refused_also_chained_or_wrapped_in_ascii85():
    zeros = zlib.compress(bytes(4 * MIB), 9)  # 4 MiB from about 4 KB
    with pytest.raises(TooLarge, match="inflates to more than 1 MB"):
        check_inflation(_pdf_with(zeros, b"/Filter /FlateDecode"), limit=MIB)
    twice = zlib.compress(zeros, 9)  # small enough raw that one inflation could not pass the bound
    assert len(twice) * 1032 < 4 * MIB
    with pytest.raises(TooLarge):
        check_inflation(_pdf_with(twice, b"/Filter [/FlateDecode /FlateDecode]"), limit=MIB)
    wrapped = base64.a85encode(zeros, adobe=True)
    with pytest.raises(TooLarge):
        check_inflation(_pdf_with(wrapped, b"/Filter [/ASCII85Decode /FlateDecode]"), limit=MIB)


def test_streams_within_the_bound_images_and_other_filters_pass():
    small = zlib.compress(bytes(MIB // 2), 9)
    check_inflation(_pdf_with(small, b"/Filter /FlateDecode"), limit=MIB)
    big = zlib.compress(bytes(4 * MIB), 9)  # an image: decoded row by row into its declared bitmap
    image = b"/Subtype /Image /Width 2048 /Height 2048 /BitsPerComponent 8 /Filter /FlateDecode"
    check_inflation(_pdf_with(big, image), limit=MIB)
    check_inflation(_pdf_with(b"not zlib at all" * 1000, b"/Filter /FlateDecode"), limit=1024)  # damaged
    check_inflation(_pdf_with(big, b"/Filter /DCTDecode"), limit=MIB)


def test_every_shared_pdf_passes_the_default_bound():
    pdfs = [*sorted(PAPERS.glob("*.pdf")), *sorted(TRICKY.glob("*.pdf"))]
    assert len(pdfs) > 20
    for path in pdfs:
        check_inflation(path.read_bytes())
