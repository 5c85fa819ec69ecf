"""OCR throughput and accuracy on scanned PDFs, against the script a user would write, in the same run.

Ours is the whole pipeline with OCR on (:func:`rag.ingest.pipeline.ingest_files`); the baseline renders
every page with pypdfium2 at 300 dpi and reads it with ``RapidOCR()`` and its defaults, one page after
the other in one process. Each runs in a fresh process of its own (:func:`rag.bench.harness.isolated`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from rag.bench.data import ratio
from rag.bench.harness import fresh_kb, isolated, rate
from rag.ingest.loaders import load_document, normalize_text
from rag.ingest.pipeline import ingest_files

BASELINE_DPI = 300
"""The resolution the baseline renders pages at (dots per inch)."""


def character_error_rate(text: str, truth: str) -> float:
    """Character error rate of ``text`` against ``truth``.

    Levenshtein distance over the length of ``truth``, both with whitespace runs collapsed to
    one space (line breaks differ between OCR engines); rapidfuzz computes it when installed
    (requirements-dev.txt), a pure-Python loop otherwise.

    Raises:
        ValueError: ``truth`` is empty.
    """
    a, b = " ".join(text.split()), " ".join(truth.split())
    if not b:
        raise ValueError("the true text is empty")
    try:
        from rapidfuzz.distance import Levenshtein
    except ImportError:
        prev = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            cur = [i]
            for j, cb in enumerate(b, 1):
                cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
            prev = cur
        return prev[-1] / len(b)
    return Levenshtein.distance(a, b) / len(b)


def _rate(seconds: float, pages: int) -> dict:
    """:func:`rag.bench.harness.rate` of OCR'd pages, with pages/s to 3 places (OCR reads well under 1)."""
    return {**rate(seconds, pages, 0), "pages_per_s": round(pages / seconds, 3) if seconds else None,
            "chunks_per_s": None}


def _truth(path: Path) -> str | None:
    """The true text of scan ``path``: the ``.txt`` of the same name beside it, or None."""
    truth = path.with_suffix(".txt")
    if not truth.is_file():
        return None
    return normalize_text(truth.read_text(encoding="utf-8", errors="replace"))


def _ours(paths: Sequence[Path], root: Path, workers: int | None) -> tuple[float, int, list[str]]:
    """Our whole pipeline with OCR on, into a fresh store: ``(seconds, OCR'd pages, failed lines)``."""
    kb = fresh_kb(root, "ocr")
    started = time.perf_counter()
    reports = ingest_files(kb, paths, workers=workers)
    return (time.perf_counter() - started, sum(r.ocr_pages for r in reports),
            [r.line() for r in reports if not r.ok])


def baseline_ocr(paths: Sequence[Path]) -> tuple[float, int, list[str], dict[str, str]]:
    """The script a user would write: every page rendered at :data:`BASELINE_DPI` and read by ``RapidOCR()``.

    One engine with its defaults, pages one after the other; the recognised lines of a page joined by
    newlines, in the engine's order. A file PDFium cannot open is a failed line.

    Returns:
        ``(seconds, pages read, failed lines, text by file name)``; the time includes building the engine.
    """
    import pypdfium2 as pdfium
    from rapidocr import RapidOCR

    started = time.perf_counter()
    engine = RapidOCR()
    pages = 0
    failed: list[str] = []
    texts: dict[str, str] = {}
    for path in paths:
        try:
            pdf = pdfium.PdfDocument(str(path))
        except pdfium.PdfiumError as exc:
            failed.append(f"{path.name}: {exc}")
            continue
        read = []
        for i in range(len(pdf)):
            page = pdf[i]
            bitmap = page.render(scale=BASELINE_DPI / 72)
            result = engine(bitmap.to_numpy())
            read.append("\n".join(result.txts or ()) if hasattr(result, "txts") else "")
            pages += 1
        pdf.close()
        texts[path.name] = "\n".join(read)
    return time.perf_counter() - started, pages, failed, texts


def bench_ocr(files: Sequence[Path | str], root: Path, *, workers: int | None = None,
              baseline: bool = True) -> dict:
    """OCR throughput and accuracy on scanned PDFs: our pipeline, and the baseline script in the same run.

    Args:
        files: scanned PDFs; one with a ``.txt`` of the same name beside it (its true text)
            also gets its character error rate (:func:`character_error_rate`).
        root: where the fresh store goes.
        workers: worker processes of the pipeline (default one per core).
        baseline: also time :func:`baseline_ocr`.

    Returns:
        ``files``, ``ocr_pages``, ``seconds`` (wall), ``pages_per_s`` (OCR'd pages),
        ``chunks_per_s`` (None), ``cpu_seconds``, ``failed`` (report lines) and ``cer`` (file
        name -> rate, 0-1 and more); ``baseline`` (the same keys, or None) and ``vs_baseline`` (our pages/s
        over the baseline's; ``cer_points_vs_baseline``: our CER minus its, in percentage points,
        per file).
    """
    paths = [Path(f) for f in files]
    (seconds, pages, failed), cpu, _ = isolated(_ours, paths, root, workers)
    truths = {p.name: t for p in paths if (t := _truth(p)) is not None}
    cer = {}
    for p in paths:
        if p.name in truths:
            text = "\n".join(page.text for page in load_document(p.name, p.read_bytes()).pages)
            cer[p.name] = round(character_error_rate(text, truths[p.name]), 4)
    ours = {"files": len(paths), "ocr_pages": pages, **_rate(seconds, pages), "cpu_seconds": round(cpu, 3),
            "failed": failed, "cer": cer}
    base = None
    if baseline:
        (b_seconds, b_pages, b_failed, texts), b_cpu, _ = isolated(baseline_ocr, paths)
        base = {"files": len(paths), "ocr_pages": b_pages, **_rate(b_seconds, b_pages),
                "cpu_seconds": round(b_cpu, 3), "failed": b_failed,
                "cer": {name: round(character_error_rate(texts.get(name, ""), truth), 4)
                        for name, truth in truths.items()}}
    return {**ours, "baseline": base,
            "vs_baseline": ratio(pages / seconds if seconds else 0, b_pages / b_seconds if b_seconds else 0)
            if base else None,
            "cer_points_vs_baseline": {name: round((value - base["cer"][name]) * 100, 2)
                                       for name, value in cer.items() if name in base["cer"]}
            if base else None}
