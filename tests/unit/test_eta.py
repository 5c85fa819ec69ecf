"""The expected time left of an ingest, from per-page progress, on a clock the test moves."""

from __future__ import annotations

import io

from rag.cli.ingest import page_progress
from rag.ingest.eta import PageEta, format_eta, with_eta


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_time_left_is_the_pages_left_at_this_files_rate() -> None:
    clock = Clock()
    eta = PageEta(clock)
    assert eta.update("scan.pdf", 1, 10) is None  # the first page includes the engine's start
    clock.now += 3.0
    assert eta.update("scan.pdf", 2, 10) == 3.0 * 8
    clock.now += 5.0
    assert eta.update("scan.pdf", 4, 10) == 8.0 / 3 * 6  # 8 s for the 3 pages after the first
    assert eta.update("other.pdf", 1, 5) is None  # each file its own rate
    clock.now += 4.0
    assert eta.update("scan.pdf", 10, 10) == 0.0


def test_with_eta_passes_the_time_left_on() -> None:
    clock = Clock()
    seen: list[tuple] = []
    on_page = with_eta(lambda *args: seen.append(args), clock)
    on_page("a.pdf", 1, 3, True)
    clock.now += 2.0
    on_page("a.pdf", 2, 3, True)
    on_page("a.pdf", 3, 3, True)
    assert seen == [("a.pdf", 1, 3, True, None), ("a.pdf", 2, 3, True, 2.0), ("a.pdf", 3, 3, True, 0.0)]


def test_format_eta() -> None:
    assert format_eta(None) == ""
    assert format_eta(42.4) == "about 42 s left"
    assert format_eta(200) == "about 3 min 20 s left"
    assert format_eta(0.4) == "under a second left"  # not "about 0 s left"
    assert format_eta(0.6) == "about 1 s left"


def test_cli_page_progress_shows_the_time_left_of_a_scan(monkeypatch) -> None:
    clock = Clock()
    monkeypatch.setattr("rag.ingest.eta.time.monotonic", clock)
    stream = io.StringIO()
    show = page_progress(stream)
    show("scan.pdf", 1, 4, True)
    clock.now += 5.0
    show("scan.pdf", 2, 4, True)
    show("scan.pdf", 4, 4, True)
    assert stream.getvalue().splitlines() == ["  scan.pdf: page 1/4 read by OCR",
                                              "  scan.pdf: page 2/4 read by OCR (about 10 s left)",
                                              "  scan.pdf: page 4/4 read by OCR"]
