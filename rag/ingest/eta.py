"""The expected time left of an ingest, from its per-page progress.

``ingest_files(on_page=...)`` reports ``(filename, done, total, ocr)`` after each PDF page;
:func:`with_eta` turns a callback that also takes the seconds left into one the pipeline accepts.
A scanned page costs seconds, so the estimate is the file's pages left times its own seconds per
page so far.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

MIN_PAGES = 2
"""Pages of a file done before its time left is estimated (the first includes the engine's start)."""


@dataclass
class PageEta:
    """Seconds left for the file being read, from the ``on_page`` events seen so far.

    Attributes:
        clock: a monotonic clock in seconds (a test passes its own).
    """

    clock: Callable[[], float] = time.monotonic
    _start: dict[str, tuple[float, int]] = field(default_factory=dict)

    def update(self, name: str, done: int, total: int) -> float | None:
        """Record that ``done`` of the ``total`` pages of ``name`` are read; the seconds left, or None.

        None until :data:`MIN_PAGES` pages of the file were read after its first report (so the rate is
        measured on this file's pages); 0.0 when the file is done.
        """
        now = self.clock()
        if done >= total:
            self._start.pop(name, None)
            return 0.0
        started, first = self._start.setdefault(name, (now, done))
        if done - first < MIN_PAGES - 1 or now <= started:
            return None
        return (now - started) / (done - first) * (total - done)


def with_eta(show: Callable[[str, int, int, bool, float | None], None],
             clock: Callable[[], float] | None = None) -> Callable[[str, int, int, bool], None]:
    """An ``on_page(filename, done, total, ocr)`` callback that calls ``show(..., eta_s)``.

    ``eta_s`` is :meth:`PageEta.update`'s seconds left for that file (None while unknown); ``clock``
    defaults to ``time.monotonic``.
    """
    eta = PageEta(clock or time.monotonic)

    def on_page(name: str, done: int, total: int, ocr: bool) -> None:
        show(name, done, total, ocr, eta.update(name, done, total))

    return on_page


def format_eta(seconds: float | None) -> str:
    """The time left in words: ``"about 3 min 20 s left"``, ``"about 40 s left"``, ``"under a second left"``.

    "" when ``seconds`` is None (not known yet).
    """
    if seconds is None:
        return ""
    whole = int(round(seconds))
    if whole < 1:
        return "under a second left"
    if whole >= 60:
        return f"about {whole // 60} min {whole % 60:02d} s left"
    return f"about {whole} s left"
