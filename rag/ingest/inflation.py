"""Refuse a PDF whose streams inflate past a bound (a decompression bomb) before any parser inflates them.

PDFium and pypdf inflate a page's content stream whole: a 2 MB file whose one stream inflates to 2 GiB took
3.2 GB of memory before it was found to hold no text. :func:`check_inflation` reads the file's raw bytes,
finds every stream and its filters, and inflates those that could exceed :data:`MAX_STREAM_BYTES`
(streaming, keeping nothing), so the memory it needs is a few MB whatever the file.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections.abc import Iterator

from rag.ingest.errors import TooLarge

MAX_STREAM_BYTES = 256 << 20
"""The most one stream of a PDF may inflate to (256 MiB): far above any page's content or a 600 dpi scan's
image (about 100 MB), far below what would exhaust memory once a parser holds it."""
MAX_RATIO = 1032
"""The most deflate can expand one byte (RFC 1951: 258 bytes from 2 bits): a stream inflated once whose raw
size times this stays under the bound needs no check."""

_STREAM = re.compile(rb">>\s*stream(?:\r\n|\n|\r)")
_FILTER = re.compile(rb"/Filter\s*(\[[^\]]*\]|/[A-Za-z0-9]+)")
_NAME = re.compile(rb"/([A-Za-z0-9]+)")
_IMAGE = re.compile(rb"/Subtype\s*/Image")
_FLATE = {b"FlateDecode", b"Fl"}
_TEXT = {b"ASCII85Decode", b"A85", b"ASCIIHexDecode", b"AHx"}
_SLICE = 1 << 16
_OUT = 1 << 20


def check_inflation(data: bytes, limit: int = MAX_STREAM_BYTES) -> None:
    """Raise TooLarge (one line) when a stream of the PDF ``data`` inflates to more than ``limit`` bytes.

    Flate streams are measured, also behind ASCII85 or ASCIIHex and chained (``[/FlateDecode
    /FlateDecode]``); other filters (image codecs, LZW) and encrypted streams are left to the parser, and so
    are images, which PDFium decodes row by row into a bitmap of their declared size (a 9000 x 9000 scan
    inflates to 243 MB, legitimately). A stream is inflated only when its raw size could exceed ``limit``,
    so an ordinary file costs a scan of its bytes; memory stays at a few MB.
    """
    for match in _STREAM.finditer(data):
        head = data[max(0, match.start() - 4096):match.start()]
        head = head[head.rfind(b" obj") + 1:]
        found = _FILTER.search(head)
        filters = _NAME.findall(found.group(1)) if found else []
        if not any(f in _FLATE for f in filters) or _IMAGE.search(head):
            continue
        end = data.find(b"endstream", match.end())
        raw = memoryview(data)[match.end():end if end >= 0 else len(data)]
        flates = sum(f in _FLATE for f in filters)
        if flates == 1 and len(raw) * MAX_RATIO <= limit:
            continue
        size = _inflated_size(raw, filters, limit)
        if size > limit:
            raise TooLarge(f"refused: a stream of this PDF inflates to more than {limit >> 20} MB "
                           "(a decompression bomb?)")


def _inflated_size(raw: memoryview, filters: list[bytes], limit: int) -> int:
    """Bytes the ``filters`` (in order) make of ``raw``, counted up to just past ``limit``."""
    chunks: Iterator[bytes] = (bytes(raw[i:i + _SLICE]) for i in range(0, len(raw), _SLICE))
    for name in filters:
        if name in _FLATE:
            chunks = _inflate(chunks)
        elif name in _TEXT:
            chunks = iter([_decode_text(b"".join(chunks), name)])  # text filters shrink their input
        else:
            break  # a filter not measured here: count what came before it
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            break
    return total


def _inflate(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Inflate zlib data given in pieces, in pieces of at most 1 MiB; stops at its end or at damage."""
    inflater = zlib.decompressobj()
    try:
        for chunk in chunks:
            pending = chunk
            while pending and not inflater.eof:
                out = inflater.decompress(pending, _OUT)
                if out:
                    yield out
                pending = inflater.unconsumed_tail
            if inflater.eof:
                return
        yield inflater.flush()
    except zlib.error:  # damaged or not zlib (an encrypted stream): the parser decides
        return


def _decode_text(text: bytes, name: bytes) -> bytes:
    try:
        if name in (b"ASCII85Decode", b"A85"):
            body = text.strip()
            body = body[2:] if body.startswith(b"<~") else body
            return base64.a85decode(body.split(b"~>")[0], ignorechars=b" \t\r\n\x0c\x00")
        digits = re.sub(rb"[^0-9A-Fa-f]", b"", text.split(b">")[0])
        return binascii.unhexlify(digits + b"0" * (len(digits) % 2))
    except (ValueError, binascii.Error):
        return b""
