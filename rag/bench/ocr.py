"""OCR throughput and accuracy on scanned PDFs, against the script a user would write, in the same run.

Ours is the whole pipeline with OCR on (:func:`rag.ingest.pipeline.ingest_files`) over the whole files; the
baseline renders pages with pypdfium2 at 300 dpi and reads them with ``RapidOCR()`` and its defaults, one page
after the other in one process. Both are timed over the same pages: those our pipeline hands to OCR
(:func:`rag.ingest.pdf.ocr_candidates`, decided before any clock starts). The baseline reads each of them;
ours reads them, or renders one and skips it when it is blank. A file's other pages (with a text layer) the
baseline takes from PDFium's text layer, as ours does. Each side's pages/s is those pages over its own wall
seconds, so our pages/s over the baseline's is the baseline's seconds over ours. Each run is in a fresh
process of its own (:func:`rag.bench.harness.isolated`); with ``repeat``, the two alternate (and take turns
going first), and the medians are reported.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from rag.bench.data import ratio
from rag.bench.harness import fresh_kb, isolated, rate
from rag.ingest.loaders import load_document, normalize_text
from rag.ingest.pdf import ocr_candidates
from rag.ingest.pipeline import ingest_files

BASELINE_DPI = 300
"""The resolution the baseline renders pages at (dots per inch)."""
TARGET_VS_BASELINE = 2.0
"""The issue's target: our OCR pages/s at least this many times the baseline's, in the same run."""
TARGET_CER_POINTS = 0.5
"""... with a character error rate at most this many percentage points above the baseline's, per file."""


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


def _truth(path: Path) -> str | None:
    """The true text of scan ``path``: the ``.txt`` of the same name beside it, or None."""
    truth = path.with_suffix(".txt")
    if not truth.is_file():
        return None
    return normalize_text(truth.read_text(encoding="utf-8", errors="replace"))


def page_set(paths: Sequence[Path]) -> tuple[dict[str, list[int]], int]:
    """The pages both sides are timed over: ``({str(path): 1-based pages our pipeline OCRs}, pages in all)``.

    A file that cannot be read or opened has none (and counts 0 pages).
    """
    import pypdfium2 as pdfium

    chosen: dict[str, list[int]] = {}
    total = 0
    for path in paths:
        try:
            data = path.read_bytes()
            chosen[str(path)] = ocr_candidates(data)
            pdf = pdfium.PdfDocument(data)
        except (OSError, pdfium.PdfiumError):
            chosen.setdefault(str(path), [])
            continue
        total += len(pdf)
        pdf.close()
    return chosen, total


def _ours(paths: Sequence[Path], root: Path, workers: int | None, name: str) -> tuple[float, int, list[str]]:
    """Our whole pipeline with OCR on, into a fresh store: ``(seconds, pages read by OCR, failed lines)``."""
    kb = fresh_kb(root, name)
    started = time.perf_counter()
    reports = ingest_files(kb, paths, workers=workers)
    return (time.perf_counter() - started, sum(r.ocr_pages for r in reports),
            [r.line() for r in reports if not r.ok])


def baseline_ocr(paths: Sequence[Path], pages: Mapping[str, Sequence[int]] | None = None
                 ) -> tuple[float, int, int, list[str], dict[str, str]]:
    """The script a user would write: pages rendered at :data:`BASELINE_DPI` and read by ``RapidOCR()``.

    One engine with its defaults, pages one after the other; the recognised lines of a page joined by
    newlines, in the engine's order. ``pages`` (``str(path)`` -> 1-based pages) limits OCR to those pages
    (the others' text is PDFium's text layer); None reads every page. A file PDFium cannot open is a failed
    line.

    Returns:
        ``(seconds, pages read by OCR, those with any text, failed lines, text by file name)``; the time
        includes building the engine.
    """
    import pypdfium2 as pdfium
    from rapidocr import RapidOCR

    started = time.perf_counter()
    engine = RapidOCR()
    read = with_text = 0
    failed: list[str] = []
    texts: dict[str, str] = {}
    for path in paths:
        try:
            pdf = pdfium.PdfDocument(str(path))
        except pdfium.PdfiumError as exc:
            failed.append(f"{path.name}: {exc}")
            continue
        wanted = range(1, len(pdf) + 1) if pages is None else pages.get(str(path), ())
        out = []
        for i in range(len(pdf)):
            page = pdf[i]
            if i + 1 in wanted:
                result = engine(page.render(scale=BASELINE_DPI / 72).to_numpy())
                text = "\n".join(getattr(result, "txts", None) or ())
                read += 1
                with_text += bool(text.strip())
            else:
                text = page.get_textpage().get_text_range()
            out.append(text)
        pdf.close()
        texts[path.name] = "\n".join(out)
    return time.perf_counter() - started, read, with_text, failed, texts


def _side(files: int, pages: int, ocr_pages: int, runs: list[tuple[float, float]], failed: list[str],
          cer: dict[str, float]) -> dict:
    """One side's figures: medians of ``runs`` (``(wall s, CPU s)`` each), pages/s over ``pages``."""
    seconds = statistics.median(s for s, _ in runs)
    return {"files": files, "pages": pages, "ocr_pages": ocr_pages, **rate(seconds, pages, 0),
            "pages_per_s": round(pages / seconds, 3) if seconds else None, "chunks_per_s": None,
            "cpu_seconds": round(statistics.median(c for _, c in runs), 3), "failed": failed, "cer": cer,
            "runs": [round(s, 3) for s, _ in runs], "runs_cpu_seconds": [round(c, 3) for _, c in runs]}


def _compared(pages: int, total: int, files: int, runs: int) -> str:
    """The comparison of :func:`bench_ocr` in words."""
    return (f"both sides timed over the same {pages} pages: those our pipeline hands to OCR (no usable "
            f"text layer, an image on the page), of {total} pages in {files} files; the baseline reads each "
            "of them at 300 dpi with RapidOCR(), ours reads each or skips it when blank, and both take the "
            "other pages from the text layer; pages/s = these pages / wall seconds (ours: the whole "
            "pipeline, store included), so vs_baseline = the baseline's seconds / ours (median of "
            f"{runs} alternating run(s))")


def bench_ocr(files: Sequence[Path | str], root: Path, *, workers: int | None = None,
              baseline: bool = True, repeat: int = 1) -> dict:
    """OCR throughput and accuracy on scanned PDFs: our pipeline, and the baseline script in the same run.

    Args:
        files: scanned PDFs; one with a ``.txt`` of the same name beside it (its true text)
            also gets its character error rate (:func:`character_error_rate`).
        root: where the fresh stores go.
        workers: worker processes of the pipeline (default one per core).
        baseline: also time :func:`baseline_ocr`, over the same pages (:func:`page_set`).
        repeat: runs of each side, alternating (run 1 ours first, run 2 the baseline first, ...).

    Returns:
        ``files``, ``pages`` (the pages both sides are timed over: those our pipeline hands to OCR),
        ``ocr_pages`` (those whose text came from OCR: ours, when OCR read more than the text layer; the
        baseline's, when it read anything), ``seconds`` (median wall), ``pages_per_s`` (``pages`` over it),
        ``chunks_per_s`` (None), ``cpu_seconds`` (median), ``failed`` (report lines), ``cer`` (file name
        -> rate, 0-1 and more), ``runs`` and ``runs_cpu_seconds`` (every run's seconds); ``baseline``
        (the same keys, or None); ``vs_baseline`` (our pages/s over the baseline's, the median over the
        runs paired in order), ``vs_baseline_runs``, ``cpu_vs_baseline`` (its median CPU seconds over
        ours), ``cer_points_vs_baseline`` (our CER minus its, in percentage points, per file),
        ``page_set`` (file name -> the pages), ``pages_in_files``, ``compared`` (the comparison in words)
        and ``target`` (the issue's: ``min_vs_baseline``, ``max_cer_points`` and whether both are ``met``).
    """
    paths = [Path(f) for f in files]
    chosen, total = page_set(paths)
    pages = sum(len(v) for v in chosen.values())
    ours_runs: list[tuple[float, float]] = []
    base_runs: list[tuple[float, float]] = []
    ocr_pages = 0
    failed: list[str] = []
    b_read = b_text = 0
    b_failed: list[str] = []
    texts: dict[str, str] = {}
    for rep in range(max(1, repeat)):
        for side in (("ours", "baseline") if rep % 2 == 0 else ("baseline", "ours")):
            if side == "ours":
                (seconds, ocr_pages, failed), cpu, _ = isolated(_ours, paths, root, workers, f"ocr-{rep + 1}")
                ours_runs.append((seconds, cpu))
            elif baseline:
                (seconds, b_read, b_text, b_failed, texts), cpu, _ = isolated(baseline_ocr, paths, chosen)
                base_runs.append((seconds, cpu))
    truths = {p.name: t for p in paths if (t := _truth(p)) is not None}
    cer = {}
    for p in paths:
        if p.name in truths:
            text = "\n".join(page.text for page in load_document(p.name, p.read_bytes()).pages)
            cer[p.name] = round(character_error_rate(text, truths[p.name]), 4)
    ours = _side(len(paths), pages, ocr_pages, ours_runs, failed, cer)
    out = {**ours, "baseline": None, "vs_baseline": None, "vs_baseline_runs": None, "cpu_vs_baseline": None,
           "cer_points_vs_baseline": None, "page_set": {Path(k).name: v for k, v in chosen.items()},
           "pages_in_files": total, "compared": None, "target": None}
    if not baseline:
        return out
    base = _side(len(paths), b_read, b_text, base_runs, b_failed,
                 {name: round(character_error_rate(texts.get(name, ""), truth), 4)
                  for name, truth in truths.items()})
    each = [ratio(pages / s if s else 0, b_read / b if b else 0)
            for (s, _), (b, _) in zip(ours_runs, base_runs, strict=True)]
    known = [r for r in each if r is not None]
    vs = round(statistics.median(known), 3) if known else None
    points = {name: round((value - base["cer"][name]) * 100, 2) for name, value in cer.items()
              if name in base["cer"]}
    return {**out, "baseline": base, "vs_baseline": vs, "vs_baseline_runs": each,
            "cpu_vs_baseline": ratio(base["cpu_seconds"], ours["cpu_seconds"]),
            "cer_points_vs_baseline": points,
            "compared": _compared(pages, total, len(paths), len(each)),
            "target": {"min_vs_baseline": TARGET_VS_BASELINE, "max_cer_points": TARGET_CER_POINTS,
                       "met": vs is not None and vs >= TARGET_VS_BASELINE
                       and all(p <= TARGET_CER_POINTS for p in points.values())}}
