"""The OCR benchmark's comparison: both sides over the same pages, alternating, with the issue's target.

The runs themselves are faked here (no OCR, no timing); ``tests/integration/test_bench.py`` runs them.
"""

from __future__ import annotations

import shutil
import types
from pathlib import Path

import pytest

from rag.bench import ocr as bench
from rag.cli._bench_tables import format_ocr_comparison
from rag.ingest.pdf import ocr_candidates

TRICKY = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "tricky-pdfs"
TEXT_PDF = TRICKY / "pypdf-sample-files__004-pdflatex-4-pages__pdflatex-4-pages.pdf"
SIDE_KEYS = {"files", "pages", "ocr_pages", "seconds", "pages_per_s", "chunks_per_s", "cpu_seconds", "failed",
             "cer", "runs", "runs_cpu_seconds"}


def test_ocr_candidates_are_the_pages_ingestion_hands_to_ocr() -> None:
    assert ocr_candidates((TRICKY / "ocrmypdf__kcs.pdf").read_bytes()) == [1]
    assert ocr_candidates((TRICKY / "ocrmypdf__multipage.pdf").read_bytes()) == [1, 2, 3, 4, 5, 6]
    assert ocr_candidates(TEXT_PDF.read_bytes()) == []  # a text layer on every page
    assert ocr_candidates((TRICKY / "ocrmypdf__invalid.pdf").read_bytes()) == []  # PDFium cannot open it


def _fake_runs(monkeypatch: pytest.MonkeyPatch, ours_s: list[float], base_s: list[float]) -> list[str]:
    """Fake :func:`rag.bench.harness.isolated` runs of ``ours_s``/``base_s`` seconds; returns their order."""
    order: list[str] = []

    def isolated(fn, *args):
        order.append(fn.__name__)
        if fn is bench._ours:
            return (ours_s.pop(0), 1, []), 5.0, {}
        assert args[1] == {str(p): v for p, v in bench.page_set(args[0])[0].items()}  # the same pages
        return (base_s.pop(0), 1, 1, [], {"kcs.pdf": "Kodak Capture Desktop"}), 15.0, {}

    monkeypatch.setattr(bench, "isolated", isolated)
    monkeypatch.setattr(bench, "load_document", lambda name, data: types.SimpleNamespace(
        pages=[types.SimpleNamespace(text="Kodak Capture Desktop Test")]))
    return order


def test_both_sides_are_timed_over_the_same_pages_in_alternating_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scan = tmp_path / "kcs.pdf"
    shutil.copy(TRICKY / "ocrmypdf__kcs.pdf", scan)
    scan.with_suffix(".txt").write_text("Kodak Capture Desktop Test", encoding="utf-8")
    text = tmp_path / "text.pdf"
    shutil.copy(TEXT_PDF, text)
    order = _fake_runs(monkeypatch, [2.0, 4.0, 3.0], [6.0, 6.0, 12.0])
    result = bench.bench_ocr([scan, text], tmp_path / "stores", repeat=3)
    assert order == ["_ours", "baseline_ocr", "baseline_ocr", "_ours", "_ours", "baseline_ocr"]
    base = result["baseline"]
    assert set(base) == SIDE_KEYS and set(result) > SIDE_KEYS
    assert result["page_set"] == {"kcs.pdf": [1], "text.pdf": []} and result["pages_in_files"] == 5
    assert result["pages"] == base["pages"] == 1  # the scan's page; the text pages count on neither side
    assert result["runs"] == [2.0, 4.0, 3.0] and result["seconds"] == 3.0 and result["pages_per_s"] == 0.333
    assert base["seconds"] == 6.0 and base["pages_per_s"] == 0.167
    assert result["vs_baseline_runs"] == [3.0, 1.5, 4.0] and result["vs_baseline"] == 3.0  # per pair
    assert result["cpu_vs_baseline"] == 3.0
    assert result["cer"] == {"kcs.pdf": 0.0} and base["cer"] == {"kcs.pdf": 0.1923}
    assert result["cer_points_vs_baseline"] == {"kcs.pdf": -19.23}
    assert result["target"] == {"min_vs_baseline": 2.0, "max_cer_points": 0.5, "met": True}
    assert "the same 1 pages" in result["compared"] and "of 5 pages in 2 files" in result["compared"]
    shown = format_ocr_comparison(result)
    assert "ours 0.333 pages/s, baseline 0.167 pages/s: 3.0x (runs: 3.0x, 1.5x, 4.0x)" in shown
    assert shown.endswith("target >= 2.0x and <= +0.5 points: met")


def test_the_target_is_not_met_when_slower_than_twice_the_baseline(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scan = tmp_path / "kcs.pdf"
    shutil.copy(TRICKY / "ocrmypdf__kcs.pdf", scan)
    _fake_runs(monkeypatch, [4.0, 3.0], [6.0, 5.0])
    result = bench.bench_ocr([scan], tmp_path / "stores", repeat=2)
    assert result["vs_baseline_runs"] == [1.5, 1.667] and result["vs_baseline"] == 1.583  # rounded median
    assert result["target"]["met"] is False
    assert format_ocr_comparison(result).endswith(": NOT met")
    assert format_ocr_comparison({**result, "baseline": None}) == ""


def test_without_the_baseline_only_ours_is_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scan = tmp_path / "kcs.pdf"
    shutil.copy(TRICKY / "ocrmypdf__kcs.pdf", scan)
    order = _fake_runs(monkeypatch, [4.0, 5.0], [])
    result = bench.bench_ocr([scan], tmp_path / "stores", baseline=False, repeat=2)
    assert order == ["_ours", "_ours"] and result["baseline"] is None and result["target"] is None
    assert result["seconds"] == 4.5 and result["pages"] == 1
