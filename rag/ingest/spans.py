"""Where a chunk sits on its page: character spans, mapped back to the text PDFium (or OCR) gave.

A chunk is cut from its page's *normalised* text (:func:`rag.ingest.text.normalize_text`), which differs
from the text layer PDFium extracted (spaces collapsed, hyphenated line ends joined, ligatures expanded). To
find the chunk's characters on the page, its span is mapped to the *layer* (PDFium's
``PdfTextPage.get_text_range()`` of the whole page, or the OCR's lines joined by newlines) deterministically:
normalisation never adds, drops or reorders letters and digits, so the k-th letter or digit of the normalised
text is the k-th of the layer (both compared after NFKD, so a ligature counts as its letters). Nothing here
reads the LLM's output.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Sequence

_ASCII_DROP = bytes(c for c in range(128) if not chr(c).isalnum())  # bytes.translate deletes these
_NON_ASCII = re.compile(r"[^\x00-\x7f]")

Span = tuple[int, int]
"""``(start, end)`` character offsets, end exclusive."""


def _char_keys(ch: str) -> str:
    """The letters and digits of one character after NFKD (``ﬁ`` -> ``fi``, ``é`` -> ``e``, ``-`` -> ``).

    A trademark or service-mark sign has none: :func:`rag.ingest.text.normalize_text` drops it.
    """
    if ch.isascii():
        return ch if ch.isalnum() else ""
    if ch in "\u2122\u2120":
        return ""
    return "".join(d for d in unicodedata.normalize("NFKD", ch) if d.isalnum())


def keys(text: str) -> str:
    """The letters and digits of ``text``, each character decomposed by NFKD, in order.

    Two texts that differ only in spacing, punctuation, hyphenation and compatibility forms have the same
    keys.
    """
    if text.isascii():
        return _ascii_keys(text)
    out: list[str] = []
    last = 0
    for m in _NON_ASCII.finditer(text):
        out.append(_ascii_keys(text[last:m.start()]))
        out.append(_char_keys(m.group()))
        last = m.end()
    out.append(_ascii_keys(text[last:]))
    return "".join(out)


def _ascii_keys(text: str) -> str:
    return text.encode("ascii").translate(None, _ASCII_DROP).decode("ascii")


def piece_spans(text: str, pieces: Sequence[str]) -> list[Span | None]:
    """Spans in ``text`` of ``pieces``, consecutive substrings of it in order (a splitter's output).

    Each is found at or after the previous piece's start (overlapping pieces share text); leading and trailing
    whitespace is left out of the span, as the chunker strips it. None for a piece not found (never for a
    splitter that keeps its separators).
    """
    spans: list[Span | None] = []
    cursor = 0
    for piece in pieces:
        at = text.find(piece, cursor)
        if at < 0:
            spans.append(None)
            continue
        cursor = at + 1
        start = at + len(piece) - len(piece.lstrip())
        end = at + len(piece.rstrip())
        spans.append((start, end) if end > start else None)
    return spans


class _KeyIndex:
    """Finds the character of ``text`` that holds its k-th key, from key counts kept every 64 characters."""

    STEP = 64

    def __init__(self, text: str) -> None:
        self.text = text
        self.counts: list[int] = []  # counts[i]: keys in text[:i * STEP]
        total = 0
        for at in range(0, len(text), self.STEP):
            self.counts.append(total)
            total += len(keys(text[at:at + self.STEP]))

    def position(self, k: int) -> int | None:
        """Index of the character holding key ``k`` (0-based), or None when ``text`` has fewer keys."""
        block = bisect.bisect_right(self.counts, k) - 1
        if block < 0:
            return None
        pos, count = block * self.STEP, self.counts[block]
        for ch in self.text[pos:pos + self.STEP]:
            n = (1 if ch.isalnum() else 0) if ch.isascii() else len(_char_keys(ch))
            if count + n > k:
                return pos
            count, pos = count + n, pos + 1
        return None


def map_spans(layer: str, text: str, spans: Sequence[Span | None]) -> list[Span | None]:
    """Map ``spans`` of ``text`` (``normalize_text(layer)``, or any text with the same keys) onto ``layer``.

    Each span ``(s, e)`` of ``text`` becomes the span of ``layer`` from the character holding its first letter
    or digit to the one holding its last, widened over the punctuation the chunk has around them (an opening
    bracket, a full stop). None where a span has no letter or digit; every span is None when the layer's
    keys differ from the text's (``text`` was not made from ``layer``: a page taken from pypdf, a changed
    normaliser). Cost is linear in the page.
    """
    if keys(layer) != keys(text):
        return [None] * len(spans)
    bounds = sorted({b for span in spans if span for b in span})
    before: dict[int, int] = {}  # offset of text -> keys before it
    count, last = 0, 0
    for b in bounds:
        count += len(keys(text[last:b]))
        before[b] = count
        last = b
    index = _KeyIndex(layer)
    out: list[Span | None] = []
    for span in spans:
        if not span or before[span[1]] <= before[span[0]]:
            out.append(None)
            continue
        a = index.position(before[span[0]])
        z = index.position(before[span[1]] - 1)
        out.append(None if a is None or z is None else _widen(layer, text, span, a, z + 1))
    return out


def _widen(layer: str, text: str, span: Span, a: int, b: int) -> Span:
    """Extend ``layer[a:b]`` over as many non-space, keyless characters as ``text[span]`` has at its ends."""
    chunk = text[span[0]:span[1]]
    lead, trail = _edge(chunk), _edge(reversed(chunk))
    while lead and a > 0 and not layer[a - 1].isspace() and not _char_keys(layer[a - 1]):
        a, lead = a - 1, lead - 1
    while trail and b < len(layer) and not layer[b].isspace() and not _char_keys(layer[b]):
        b, trail = b + 1, trail - 1
    return a, b


def _edge(chars) -> int:
    """How many non-space characters without a key come before the first one with a key."""
    n = 0
    for c in chars:
        if _char_keys(c):
            break
        n += not c.isspace()
    return n
