"""Ingestion throughput on the same files in the same run.

Our stages one by one, our whole
pipeline, re-ingesting unchanged files, pypdf text extraction alone (the floor) and a LangChain
reference pipeline (PyPDFLoader, RecursiveCharacterTextSplitter, Chroma.from_documents).
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import shutil
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from pathlib import Path

import chromadb
import pypdf
from langchain_core.embeddings import Embeddings
from langchain_text_splitters import RecursiveCharacterTextSplitter

from rag.bench.data import ratio
from rag.bench.harness import cpu_seconds, fresh_kb, isolated, rate
from rag.bench.ocr import bench_ocr
from rag.ingest.chunking import chunk_document
from rag.ingest.loaders import load_document
from rag.ingest.pipeline import ChunkSettings, ingest_files
from rag.store.embeddings import HashingEmbeddingFunction
from rag.store.writer import RowWriter
from rag.text import terms

BENCH_SUFFIXES = (".pdf", ".txt", ".md", ".markdown")
"""What a directory contributes: the types the LangChain reference reads too (PyPDFLoader,
TextLoader)."""


def discover_files(paths: Iterable[Path | str]) -> tuple[list[Path], list[Path]]:
    """The files to ingest, and the byte-identical copies left out.

    Every contender would otherwise be timed on different work: ours skips a duplicate, the
    reference indexes it again.

    Args:
        paths: files, or directories (which give their .pdf, .txt and .md files, sorted).

    Returns:
        ``(kept, dropped)``: the files to time, and the duplicates left out.

    Raises:
        FileNotFoundError: a path that does not exist.
    """
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.iterdir()
                            if f.is_file() and f.suffix.lower() in BENCH_SUFFIXES)
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(f"no such file or directory: {p}")
    kept: list[Path] = []
    dropped: list[Path] = []
    seen: set[str] = set()
    for f in files:
        sha = hashlib.sha256(f.read_bytes()).hexdigest()
        (dropped if sha in seen else kept).append(f)
        seen.add(sha)
    return kept, dropped


@contextmanager
def _quiet_pypdf():
    """Silence pypdf's warnings (one per odd font): printing them would be timed too, for every contender."""
    log = logging.getLogger("pypdf")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def _pypdf_floor(files: Sequence[Path]) -> tuple[float, int]:
    started = time.perf_counter()
    pages = 0
    for f in files:
        data = f.read_bytes()
        if f.suffix.lower() == ".pdf":
            reader = pypdf.PdfReader(io.BytesIO(data))
            for page in reader.pages:
                page.extract_text()
                pages += 1
        else:
            data.decode("utf-8", errors="replace")
            pages += 1
    return time.perf_counter() - started, pages


class _SameEmbeddings(Embeddings):
    """Our embedding function ``ef`` behind LangChain's Embeddings interface."""

    def __init__(self, ef) -> None:
        self.ef = ef

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [v.tolist() for v in self.ef(texts)]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def _langchain_reference(files: Sequence[Path], root: Path, chunk_size: int, chunk_overlap: int,
                         ef) -> tuple[float, int, int]:
    """Time the LangChain reference pipeline; returns ``(seconds, pages, chunks)``.

    PyPDFLoader (TextLoader for text) -> RecursiveCharacterTextSplitter ->
    Chroma.from_documents, with ``ef`` behind LangChain's Embeddings interface.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # langchain_community announces its sunset on import
        # Imported here: dev-only packages (requirements-dev.txt) for this one baseline, and
        # langchain_community is slow to import; the rest of the benchmark works without them.
        from langchain_chroma import Chroma
        from langchain_community.document_loaders import PyPDFLoader, TextLoader

    started = time.perf_counter()
    docs = []
    for f in files:
        loader = PyPDFLoader(str(f)) if f.suffix.lower() == ".pdf" else TextLoader(str(f), encoding="utf-8")
        docs += loader.load()
    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    chunks = splitter.split_documents(docs)
    Chroma.from_documents(chunks, embedding=_SameEmbeddings(ef), collection_name="reference",
                          persist_directory=str(root / "reference"),
                          client_settings=chromadb.config.Settings(anonymized_telemetry=False))
    return time.perf_counter() - started, len(docs), len(chunks)


def _pipeline_run(files: Sequence[Path], root: Path, name: str, settings: ChunkSettings,
                  workers: int | None) -> tuple[float, list[str]]:
    """Our whole pipeline into a fresh knowledge base ``name`` under ``root``: ``(seconds, failed lines)``."""
    kb = fresh_kb(root, name)
    started = time.perf_counter()
    reports = ingest_files(kb, files, chunking=settings, workers=workers)
    return time.perf_counter() - started, [r.line() for r in reports if not r.ok]


AFTER_EXTRACTION = ("chunk", "embed", "keyword_index", "upsert")
"""The stages after text extraction, whose split :func:`after_extraction` reports."""


def after_extraction(timings: dict[str, float]) -> dict:
    """Where the time goes after extraction: :data:`AFTER_EXTRACTION` from ``timings`` (seconds by stage).

    Returns ``total_ms`` (their sum, ms) and ``stages``: per stage ``ms`` and ``share`` (a fraction of
    ``total_ms``, 0-1; None when it is 0). Raises KeyError for a stage missing from ``timings``.
    """
    total = sum(timings[k] for k in AFTER_EXTRACTION)
    stages = {k: {"ms": round(timings[k] * 1000, 1), "share": round(timings[k] / total, 3) if total else None}
              for k in AFTER_EXTRACTION}
    return {"total_ms": round(total * 1000, 1), "stages": stages}


def _stages(files: Sequence[Path], root: Path, chunk_size: int, chunk_overlap: int, ef
            ) -> tuple[dict[str, float], int, int]:
    """Our stages one file after the other in this process: ``(seconds by stage, pages, chunks)``.

    ``parse`` (text and OCR), ``chunk``, ``embed`` (tokenising once, as the pipeline's workers do, and
    the vectors from those terms), ``keyword_index`` (the store's keyword-index
    transaction, timed inside :class:`rag.store.writer.RowWriter`) and ``upsert``
    (the rest of ``add_document``: Chroma upserts and completion records).
    """
    timings = {"parse": 0.0, "chunk": 0.0, "embed": 0.0, "keyword_index": 0.0, "upsert": 0.0}
    kb = fresh_kb(root, "stages")
    index_keywords = RowWriter._index_keywords

    def timed(self, *args, **kwargs):  # measurement only: the keyword index apart from Chroma
        t = time.perf_counter()
        try:
            return index_keywords(self, *args, **kwargs)
        finally:
            timings["keyword_index"] += time.perf_counter() - t

    setattr(RowWriter, "_index_keywords", timed)  # noqa: B010 (measurement only; restored below)
    try:
        pages, chunks = _stage_files(files, kb, chunk_size, chunk_overlap, ef, timings)
    finally:
        setattr(RowWriter, "_index_keywords", index_keywords)  # noqa: B010
    return timings, pages, chunks


def _stage_files(files: Sequence[Path], kb, chunk_size: int, chunk_overlap: int, ef,
                 timings: dict[str, float]) -> tuple[int, int]:
    """Load, chunk, embed and store ``files`` in turn, adding each stage's seconds to ``timings``."""
    pages = chunks = 0
    for f in files:
        data = f.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        t0 = time.perf_counter()
        doc = load_document(f.name, data)
        t1 = time.perf_counter()
        records = chunk_document(doc, doc_sha=sha, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
        t2 = time.perf_counter()
        toks = [terms(r.text) for r in records]  # tokenised once, for the vectors and the keywords
        vectors = [ef.embed_terms(t) for t in toks]
        t3 = time.perf_counter()
        indexed = timings["keyword_index"]
        kb.add_document(records, pages=doc.page_count, size_bytes=len(data), embeddings=vectors,
                        terms={r.id: t for r, t in zip(records, toks, strict=True)})
        t4 = time.perf_counter()
        timings["parse"] += t1 - t0
        timings["chunk"] += t2 - t1
        timings["embed"] += t3 - t2
        timings["upsert"] += (t4 - t3) - (timings["keyword_index"] - indexed)
        pages += doc.page_count
        chunks += len(records)
    return pages, chunks


def bench_ingest(paths: Iterable[Path | str], *, workdir: Path | None = None,
                 chunk_size: int = 1000, chunk_overlap: int = 150, workers: int | None = None,
                 reference: bool = True, repeat: int = 1,
                 on_stage: Callable[[str], None] | None = None,
                 ocr_files: Sequence[Path | str] = ()) -> dict:
    """Ingestion throughput on the same files, all measured in this call.

    Ours, stage by stage in one process (parse, chunk, embed, keyword index, upsert: pages/s
    and chunks/s of each), and the whole pipeline (:func:`rag.ingest.pipeline.ingest_files`, PDFs parsed in
    ``workers`` processes) into a fresh store; then the same files again (unchanged: only
    hashing, compared with hashing the files alone). Baselines: pypdf text extraction alone
    (the floor every pipeline pays) and, when ``reference``, LangChain's PyPDFLoader +
    RecursiveCharacterTextSplitter + Chroma.from_documents with our embedding function.
    The pipeline and the baselines run ``repeat`` times, interleaved so that they share any
    load on the machine; each figure is the median, and ``runs`` keeps every wall time (s).
    ``cpu_seconds`` (this process and its worker processes) shows the work apart from how
    much of the machine was free. Our whole pipeline and the reference each run in a fresh
    process of their own (see :func:`rag.bench.harness.isolated`), as they would from the command line.

    Args:
        paths: files or directories (see :func:`discover_files`).
        workdir: where the temporary stores go (removed afterwards); default the system's
            temporary directory.
        chunk_size: characters per chunk.
        chunk_overlap: characters shared by neighbouring chunks.
        workers: PDF parsing processes of our pipeline (default one per core).
        reference: also time the LangChain reference pipeline.
        repeat: interleaved runs of the pipeline and the baselines.
        on_stage: called with a name as each measurement starts.
        ocr_files: scanned PDFs measured apart by :func:`rag.bench.ocr.bench_ocr`, against its
            baseline script over the same pages, ``repeat`` alternating runs each (result ``ocr``).

    Returns:
        ``files``, ``pages``, ``chunks``, ``repeat``, ``skipped_duplicates``, ``stages``,
        ``after_extraction`` (:func:`after_extraction`: the split of ``stages`` after parsing, in ms),
        ``pipeline``, ``reingest``, ``baselines`` (``pypdf_parse``, ``langchain_reference``
        or None), ``ratios`` (our pipeline's pages/s over each baseline's), ``peak_rss_mb``
        (peak memory of our first whole-pipeline run: its process, and its largest worker),
        ``ocr`` (:func:`rag.bench.ocr.bench_ocr`, with ``ocr.baseline``; or None),
        ``runs`` and ``runs_cpu_seconds``. Times in seconds.

    Raises:
        FileNotFoundError: a missing path, or no file to ingest.
        ImportError: ``reference`` and its packages (langchain-community, langchain-chroma)
            are missing.
    """
    files, dropped = discover_files(paths)
    if not files:
        raise FileNotFoundError("no .pdf, .txt or .md file to ingest")
    note = on_stage or (lambda name: None)
    root = Path(tempfile.mkdtemp(prefix="retrace-bench-ingest-", dir=workdir))
    ef = HashingEmbeddingFunction()
    settings = ChunkSettings(chunk_size, chunk_overlap)
    runs: dict[str, list[float]] = {"pypdf_parse": [], "pipeline": [], "langchain_reference": []}
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    failed: list[str] = []
    ref_pages = ref_chunks = floor_pages = 0
    try:
        with _quiet_pypdf():
            note("ours, stage by stage")
            timings, pages, chunks = _stages(files, root, chunk_size, chunk_overlap, ef)
            for rep in range(1, max(1, repeat) + 1):
                note(f"pypdf parse alone (run {rep})")
                c = cpu_seconds()
                floor_s, floor_pages = _pypdf_floor(files)
                runs["pypdf_parse"].append(round(floor_s, 3))
                cpu["pypdf_parse"].append(round(cpu_seconds() - c, 3))

                note(f"ours, whole pipeline (run {rep})")
                (pipe_s, failed), pipe_cpu, pipe_peak = isolated(
                    _pipeline_run, files, root, f"pipeline-{rep}", settings, workers)
                runs["pipeline"].append(round(pipe_s, 3))
                cpu["pipeline"].append(round(pipe_cpu, 3))
                if rep == 1:
                    peak = pipe_peak

                if reference:
                    note(f"LangChain reference (run {rep})")
                    (ref_s, ref_pages, ref_chunks), ref_cpu, _ = isolated(
                        _langchain_reference, files, root / f"reference-{rep}", chunk_size, chunk_overlap, ef)
                    runs["langchain_reference"].append(round(ref_s, 3))
                    cpu["langchain_reference"].append(round(ref_cpu, 3))

            note("ours, unchanged files again")
            pipe_kb = fresh_kb(root, f"pipeline-{max(1, repeat)}")  # the store the last run filled
            t = time.perf_counter()
            again = ingest_files(pipe_kb, files, chunking=settings, workers=workers)
            again_s = time.perf_counter() - t
            t = time.perf_counter()
            for f in files:
                hashlib.sha256(f.read_bytes()).hexdigest()
            hash_s = time.perf_counter() - t
            ocr = None
            if ocr_files:
                note("ours, OCR of scanned pages")
                ocr = bench_ocr(ocr_files, root, workers=workers, repeat=repeat)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    median = {k: statistics.median(v) for k, v in runs.items() if v}
    cpu_median = {k: round(statistics.median(v), 3) for k, v in cpu.items() if v}
    pipeline = {**rate(median["pipeline"], pages, chunks), "cpu_seconds": cpu_median["pipeline"],
                "workers": workers or os.cpu_count() or 1, "failed": failed}
    floor = {**rate(median["pypdf_parse"], floor_pages, chunks),
             "cpu_seconds": cpu_median["pypdf_parse"], "pages": floor_pages}
    ref = ({**rate(median["langchain_reference"], ref_pages, ref_chunks),
            "cpu_seconds": cpu_median["langchain_reference"], "pages": ref_pages,
            "chunks": ref_chunks} if reference else None)
    return {
        "files": len(files), "pages": pages, "chunks": chunks, "repeat": max(1, repeat),
        "skipped_duplicates": [f.name for f in dropped],
        "stages": {k: rate(v, pages, chunks) for k, v in timings.items()},
        "after_extraction": after_extraction(timings),
        "pipeline": pipeline,
        "reingest": {"seconds": round(again_s, 3), "hash_only_seconds": round(hash_s, 3),
                     "all_already_indexed": all(r.status == "already indexed" for r in again)},
        "baselines": {"pypdf_parse": floor, "langchain_reference": ref},
        "ratios": {"vs_pypdf_parse": ratio(pipeline["pages_per_s"] or 0, floor["pages_per_s"] or 0),
                   "vs_langchain_reference": ratio(pipeline["pages_per_s"] or 0,
                                                   ref["pages_per_s"] or 0) if ref else None},
        "peak_rss_mb": peak,
        "ocr": ocr,
        "runs": {k: v for k, v in runs.items() if v},
        "runs_cpu_seconds": {k: v for k, v in cpu.items() if v},
    }
