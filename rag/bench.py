"""Benchmarks on real data, as a library (``python -m rag bench`` prints what these return):
question answering over a BEIR corpus through the graph, retrieval recall per mode,
ingestion throughput against pypdf and a LangChain reference pipeline, and retrieval
latency in a store of 100k chunks. Every figure comes with a baseline measured in the same
run."""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
import shutil
import string
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Sequence

from rag.config import Options
from rag.ingest.types import ChunkRecord

Progress = Optional[Callable[[int, int], None]]
"""``on_progress(done, total)``: called as work advances."""


# -- data ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BeirData:
    """A BEIR-layout dataset: ``corpus`` rows ``{_id, title, text}``; ``queries`` rows
    ``{_id, text, answers}`` (only those with qrels, in file order); ``qrels`` maps a query id
    to its supporting corpus ids (score > 0)."""

    corpus: list[dict]
    queries: list[dict]
    qrels: dict[str, frozenset[str]]


def read_jsonl(path: Path) -> list[dict]:
    """The JSON object of every non-blank line of ``path`` (UTF-8). Raises OSError, ValueError."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_beir(corpus: Path, queries: Path, qrels: Path, *, limit: int | None = None) -> BeirData:
    """Read a BEIR dataset: corpus and queries as JSON lines, qrels as TSV with a header line
    (``query-id  corpus-id  score``). ``limit`` keeps the first N questions that have qrels;
    the corpus is always read whole. Raises OSError for an unreadable file and ValueError for
    a malformed line or a corpus row without ``_id``/``text``."""
    rows = read_jsonl(Path(corpus))
    for row in rows:
        if "_id" not in row or "text" not in row:
            raise ValueError(f"corpus row without _id or text: {str(row)[:120]}")
    gold: dict[str, set[str]] = {}
    with open(qrels, encoding="utf-8") as f:
        next(f, None)  # header
        for n, line in enumerate(f, 2):
            if not line.strip():
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                raise ValueError(f"{qrels}:{n}: expected query-id, corpus-id, score")
            if float(parts[2]) > 0:
                gold.setdefault(parts[0], set()).add(parts[1])
    qs = [q for q in read_jsonl(Path(queries)) if q.get("_id") in gold]
    if limit is not None:
        qs = qs[:max(0, limit)]
    return BeirData(corpus=rows, queries=qs,
                    qrels={q["_id"]: frozenset(gold[q["_id"]]) for q in qs})


def corpus_documents(corpus: Iterable[dict]) -> list[tuple[list[ChunkRecord], int, int]]:
    """Each corpus row as one document of exactly one chunk, ready for
    ``KnowledgeBase.add_documents``: ``(chunks, pages=1, size_bytes)``.

    A BEIR passage is already a retrieval unit, so it is not split further. The chunk text is
    the title on its own line, then the text (the usual BEIR indexing); ``source`` is the title;
    metadata ``doc_id`` keeps the corpus ``_id``. The document hash covers ``_id``, title and
    text, so two rows with the same text stay two documents.
    """
    docs = []
    for row in corpus:
        title = str(row.get("title") or "").strip()
        text = f"{title}\n{row['text']}".strip() if title else str(row["text"]).strip()
        payload = json.dumps([row["_id"], title, row["text"]], ensure_ascii=False).encode("utf-8")
        sha = hashlib.sha256(payload).hexdigest()
        source = title or str(row["_id"])
        record = ChunkRecord(id=f"{sha[:16]}-00000", text=text, source=source, page=1, index=0,
                             doc_sha=sha, metadata={"source": source, "page": 1, "chunk_index": 0,
                                                    "doc_sha": sha, "doc_id": str(row["_id"])})
        docs.append(([record], 1, len(payload)))
    return docs


@dataclass
class CorpusIndex:
    """The result of :func:`index_corpus`: chunk id -> corpus ``_id``, and what it cost."""

    chunk_to_doc: dict[str, str]
    added: int
    already: int
    seconds: float
    bm25_seconds: float = 0.0


def index_corpus(kb, corpus: list[dict], *, batch_size: int = 1024,
                 on_progress: Progress = None) -> CorpusIndex:
    """Store every corpus row in ``kb`` (one chunk each, see :func:`corpus_documents`) unless
    it is stored already, then build (or load) the BM25 index. Returns the chunk -> corpus id
    map, counts and seconds (wall time)."""
    from rag.retrieval import lexical_index

    started = time.perf_counter()
    docs = corpus_documents(corpus)
    ids = [chunks[0].id for chunks, _, _ in docs]
    existing: set[str] = set()
    for start in range(0, len(ids), 2000):
        existing.update(kb.collection.get(ids=ids[start:start + 2000], include=[])["ids"])
    todo = [d for d in docs if d[0][0].id not in existing]
    for start in range(0, len(todo), batch_size):
        kb.add_documents(todo[start:start + batch_size], batch_size=batch_size)
        if on_progress:
            on_progress(min(start + batch_size, len(todo)), len(todo))
    seconds = time.perf_counter() - started
    t = time.perf_counter()
    lexical_index(kb)
    return CorpusIndex(chunk_to_doc={chunks[0].id: chunks[0].metadata["doc_id"] for chunks, _, _ in docs},
                       added=len(todo), already=len(docs) - len(todo), seconds=round(seconds, 3),
                       bm25_seconds=round(time.perf_counter() - t, 3))


# -- scoring ---------------------------------------------------------------------------------
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = frozenset(string.punctuation)
_MARKER = re.compile(r"\s*\[\d+\]")


def normalize_answer(text: str) -> str:
    """SQuAD normalisation (Rajpurkar et al. 2016, the official evaluation script): lower
    case, drop punctuation, drop the articles a/an/the, collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_hit(answer: str, gold: Sequence[str]) -> bool:
    """True when some gold answer, normalised, appears in the normalised ``answer`` as whole
    words (citation markers ``[n]`` removed first). Whole words, not a raw substring, so the
    gold answer "no" is not found inside "not"."""
    said = f" {normalize_answer(_MARKER.sub('', answer))} "
    return any(g and f" {g} " in said for g in (normalize_answer(str(a)) for a in gold))


def recall(found: Iterable[str], supporting: Iterable[str]) -> tuple[bool, bool, float]:
    """``(all, any, share)`` of the ``supporting`` ids present in ``found``. With no
    supporting ids, all is True and any is False (share 1.0)."""
    found, supporting = set(found), set(supporting)
    if not supporting:
        return True, False, 1.0
    hit = len(found & supporting)
    return hit == len(supporting), hit > 0, hit / len(supporting)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation (numpy's default); 0.0 for no
    values."""
    import numpy as np

    return float(np.percentile(values, q)) if len(values) else 0.0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


# -- question answering through the graph ----------------------------------------------------
class _TimedEngine:
    """Wraps an engine and adds the wall time of every method call to ``ms`` (whatever the
    methods are, so engines with more judgments are timed too)."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.ms = 0.0

    def __getattr__(self, name: str):
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                self.ms += (time.perf_counter() - started) * 1000

        return timed


@dataclass
class QuestionResult:
    """One question through the graph. Times in ms; ``evidence`` holds the corpus ids of the
    chunks given to the generator (at most k, in order)."""

    qid: str
    question: str
    supporting: list[str]
    evidence: list[str]
    answer: str
    recall_all: bool
    recall_any: bool
    answer_hit: bool
    llm_calls: int
    rewrites: int
    steps: int
    latency_ms: float
    engine_ms: float
    retrieval_ms: float
    stop_reason: str
    error: Optional[str] = None

    @property
    def graph_ms(self) -> float:
        """Time in the graph itself: the run minus engine and retrieval calls."""
        return max(0.0, self.latency_ms - self.engine_ms - self.retrieval_ms)


def generator_evidence(run, k: int) -> list[str]:
    """Chunk ids the generator saw in ``run`` (its last ``generate`` event), at most ``k``; empty
    when the run never generated."""
    for event in reversed(run.events):
        if event.node == "generate":
            return [c["id"] for c in event.detail.get("evidence", [])][:k]
    return []


def committed_answer(run) -> str:
    """The answer the run committed to: the last generated answer when it ended in finalize or
    finalize_with_caveat (without the caveat line), else "" (it abstained or failed)."""
    if run.error or not run.path or run.path[-1] not in ("finalize", "finalize_with_caveat"):
        return ""
    for event in reversed(run.events):
        if event.node == "generate":
            return str(event.detail.get("answer", ""))
    return ""


def run_qa(kb, data: BeirData, chunk_to_doc: dict[str, str], options: Options, *,
           settings=None, engine=None, on_progress: Progress = None) -> list[QuestionResult]:
    """Run every question of ``data`` through the graph with ``options`` and score it.

    Recall counts the supporting corpus ids among the chunks given to the generator (at most
    ``options.top_k``); the answer is scored by :func:`answer_hit` against the gold answers.
    The engine (default: the one ``settings`` configures, the offline engine without keys) and
    the retriever are wrapped in timers, so each result splits its latency into engine,
    retrieval and graph time.
    """
    from rag.config import Settings
    from rag.runner import make_context, run_question

    settings = settings or Settings.from_env()
    base = make_context(settings, kb, engine=engine)
    timed = _TimedEngine(base.engine)
    spent = {"retrieval": 0.0}
    inner_retriever = base.retriever

    def retriever(*args, **kwargs):
        started = time.perf_counter()
        try:
            return inner_retriever(*args, **kwargs)
        finally:
            spent["retrieval"] += (time.perf_counter() - started) * 1000

    context = replace(base, engine=timed, retriever=retriever)
    results = []
    for n, q in enumerate(data.queries, 1):
        timed.ms, spent["retrieval"] = 0.0, 0.0
        run = run_question(q["text"], context, options)
        supporting = sorted(data.qrels[q["_id"]])
        evidence = [chunk_to_doc.get(cid, cid) for cid in generator_evidence(run, options.top_k)]
        all_, any_, _ = recall(evidence, supporting)
        answer = committed_answer(run)
        results.append(QuestionResult(
            qid=q["_id"], question=q["text"], supporting=supporting, evidence=evidence,
            answer=answer, recall_all=all_, recall_any=any_,
            answer_hit=answer_hit(answer, q.get("answers") or []),
            llm_calls=run.llm_calls, rewrites=run.rewrites, steps=len(run.events),
            latency_ms=run.duration_ms, engine_ms=round(timed.ms, 3),
            retrieval_ms=round(spent["retrieval"], 3), stop_reason=run.stop_reason,
            error=run.error))
        if on_progress:
            on_progress(n, len(data.queries))
    return results


def summarize_qa(results: Sequence[QuestionResult], *, preset: str, options: Options,
                 engine: str = "local") -> dict:
    """The figures of one preset: ``questions``, ``k``, ``preset``, ``retrieval``, ``engine``,
    ``recall_all``, ``recall_any``, ``answer_hit`` (shares in [0, 1]), ``llm_calls_mean``,
    ``rewrites_mean``, ``steps_mean``, ``latency_ms_p50``/``_p95``, the mean engine and
    retrieval ms per question, ``graph_overhead_ms_per_step`` (graph time over all node steps)
    and ``errors``."""
    n = len(results)
    lat = [r.latency_ms for r in results]
    steps = sum(r.steps for r in results)
    return {
        "questions": n, "k": options.top_k, "preset": preset, "retrieval": options.retrieval,
        "engine": engine,
        "recall_all": round(_mean([r.recall_all for r in results]), 4),
        "recall_any": round(_mean([r.recall_any for r in results]), 4),
        "answer_hit": round(_mean([r.answer_hit for r in results]), 4),
        "llm_calls_mean": round(_mean([r.llm_calls for r in results]), 3),
        "rewrites_mean": round(_mean([r.rewrites for r in results]), 3),
        "steps_mean": round(steps / n, 3) if n else 0.0,
        "latency_ms_p50": round(percentile(lat, 50), 2),
        "latency_ms_p95": round(percentile(lat, 95), 2),
        "engine_ms_mean": round(_mean([r.engine_ms for r in results]), 2),
        "retrieval_ms_mean": round(_mean([r.retrieval_ms for r in results]), 2),
        "graph_overhead_ms_per_step": round(sum(r.graph_ms for r in results) / steps, 3) if steps else 0.0,
        "errors": sum(1 for r in results if r.error),
    }


def ratio(value: float, baseline: float) -> Optional[float]:
    """``value / baseline`` rounded to 3 places; None when the baseline is 0."""
    return round(value / baseline, 3) if baseline else None


# -- retrieval recall per mode ---------------------------------------------------------------
def retrieval_recall(kb, data: BeirData, chunk_to_doc: dict[str, str], *, k: int = 6,
                     modes: Sequence[str] = ("dense", "bm25", "hybrid"),
                     on_progress: Progress = None) -> list[dict]:
    """Recall@k of each retrieval mode alone (no graph): per mode ``recall_all``,
    ``recall_any``, ``recall_mean`` (share of supporting ids found, averaged) and query
    latency ``latency_ms_p50``/``_p95``. Raises ValueError for an unknown mode."""
    from rag.retrieval import retrieve

    out = []
    total = len(modes) * len(data.queries)
    done = 0
    for mode in modes:
        alls, anys, shares, lat = [], [], [], []
        for q in data.queries:
            started = time.perf_counter()
            chunks = retrieve(kb, q["text"], k, mode)
            lat.append((time.perf_counter() - started) * 1000)
            a, b, s = recall([chunk_to_doc.get(c.id, c.id) for c in chunks], data.qrels[q["_id"]])
            alls.append(a), anys.append(b), shares.append(s)
            done += 1
            if on_progress:
                on_progress(done, total)
        out.append({"mode": mode, "k": k, "questions": len(data.queries),
                    "recall_all": round(_mean(alls), 4), "recall_any": round(_mean(anys), 4),
                    "recall_mean": round(_mean(shares), 4),
                    "latency_ms_p50": round(percentile(lat, 50), 2),
                    "latency_ms_p95": round(percentile(lat, 95), 2)})
    return out


# -- ingestion throughput --------------------------------------------------------------------
def discover_files(paths: Iterable[Path | str]) -> tuple[list[Path], list[Path]]:
    """The files to ingest from ``paths`` (a directory gives its .pdf, .txt and .md files,
    sorted), and the byte-identical copies left out (every contender would otherwise be timed
    on different work: ours skips a duplicate, the reference indexes it again). Raises
    OSError for a path that does not exist."""
    from rag.ingest.loaders import SUPPORTED_SUFFIXES

    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.iterdir()
                            if f.is_file() and f.suffix.lower() in SUPPORTED_SUFFIXES)
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(f"no such file or directory: {p}")
    kept, dropped, seen = [], [], set()
    for f in files:
        sha = hashlib.sha256(f.read_bytes()).hexdigest()
        (dropped if sha in seen else kept).append(f)
        seen.add(sha)
    return kept, dropped


@contextmanager
def _quiet_pypdf():
    """pypdf logs a warning per odd font; printing those would be timed too, for every contender."""
    log = logging.getLogger("pypdf")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (user + system), in seconds; 0.0
    where the platform has no ``resource`` module."""
    try:
        import resource
    except ImportError:
        return 0.0
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _rate(seconds: float, pages: int, chunks: int) -> dict:
    return {"seconds": round(seconds, 3),
            "pages_per_s": round(pages / seconds, 2) if seconds else None,
            "chunks_per_s": round(chunks / seconds, 2) if seconds else None}


def _fresh_kb(root: Path, name: str):
    from rag.config import Settings
    from rag.store import open_knowledge_base

    return open_knowledge_base(Settings.from_env({}, data_dir=root / name), name)


def _pypdf_floor(files: Sequence[Path]) -> tuple[float, int]:
    import io

    import pypdf

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


def _langchain_reference(files: Sequence[Path], root: Path, chunk_size: int, chunk_overlap: int,
                         ef) -> tuple[float, int, int]:
    """PyPDFLoader (TextLoader for text) -> RecursiveCharacterTextSplitter ->
    Chroma.from_documents, with ``ef`` behind LangChain's Embeddings interface."""
    import chromadb
    from langchain_core.embeddings import Embeddings
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # langchain_community announces its sunset on import
        from langchain_chroma import Chroma
        from langchain_community.document_loaders import PyPDFLoader, TextLoader

    class SameEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [v.tolist() for v in ef(texts)]

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    started = time.perf_counter()
    docs = []
    for f in files:
        loader = PyPDFLoader(str(f)) if f.suffix.lower() == ".pdf" else TextLoader(str(f), encoding="utf-8")
        docs += loader.load()
    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    chunks = splitter.split_documents(docs)
    Chroma.from_documents(chunks, embedding=SameEmbeddings(), collection_name="reference",
                          persist_directory=str(root / "reference"),
                          client_settings=chromadb.config.Settings(anonymized_telemetry=False))
    return time.perf_counter() - started, len(docs), len(chunks)


def _stages(files: Sequence[Path], root: Path, chunk_size: int, chunk_overlap: int, ef
            ) -> tuple[dict[str, float], int, int]:
    from rag.ingest.chunking import chunk_document
    from rag.ingest.loaders import load_document

    timings = {"parse": 0.0, "chunk": 0.0, "embed": 0.0, "upsert": 0.0}
    kb = _fresh_kb(root, "stages")
    pages = chunks = 0
    for f in files:
        data = f.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        t0 = time.perf_counter()
        doc = load_document(f.name, data)
        t1 = time.perf_counter()
        records = chunk_document(doc, doc_sha=sha, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
        t2 = time.perf_counter()
        vectors = ef([r.text for r in records])
        t3 = time.perf_counter()
        kb.add_document(records, pages=doc.page_count, size_bytes=len(data), embeddings=vectors)
        t4 = time.perf_counter()
        for key, dt in zip(timings, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            timings[key] += dt
        pages += doc.page_count
        chunks += len(records)
    return timings, pages, chunks


def _peak_rss_mb() -> dict:
    """Peak resident set size in MB (10^6 bytes) so far: of this process, and of the largest
    child process reaped so far (the ingest workers); None where ``resource`` is missing."""
    try:
        import resource
    except ImportError:
        return {"self": None, "largest_child": None}
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * scale
    return {"self": round(own / 1e6, 1), "largest_child": round(kids / 1e6, 1)}


def character_error_rate(text: str, truth: str) -> float:
    """Levenshtein distance between ``text`` and ``truth`` over the length of ``truth``, both
    with whitespace runs collapsed to one space (line breaks differ between OCR engines);
    rapidfuzz computes it when installed. Raises ValueError for an empty ``truth``."""
    a, b = " ".join(text.split()), " ".join(truth.split())
    if not b:
        raise ValueError("the true text is empty")
    try:
        from rapidfuzz.distance import Levenshtein

        return Levenshtein.distance(a, b) / len(b)
    except ImportError:
        prev = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            cur = [i]
            for j, cb in enumerate(b, 1):
                cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
            prev = cur
        return prev[-1] / len(b)


def bench_ocr(files: Sequence[Path | str], root: Path, *, workers: int | None = None) -> dict:
    """OCR throughput and accuracy: ``files`` (scanned PDFs) through the whole pipeline with OCR
    on, into a fresh store under ``root``. Returns the OCR'd pages, wall seconds, pages/s, and
    for each PDF with a ``.txt`` of the same name beside it (its true text) the character error
    rate (:func:`character_error_rate`) of its OCR'd text."""
    from rag.ingest.loaders import load_document, normalize_text
    from rag.ingest.pipeline import ingest_files

    files = [Path(f) for f in files]
    kb = _fresh_kb(root, "ocr")
    started = time.perf_counter()
    reports = ingest_files(kb, files, workers=workers)
    seconds = time.perf_counter() - started
    pages = sum(r.ocr_pages for r in reports)
    cer = {}
    for f in files:
        truth = f.with_suffix(".txt")
        if truth.is_file():
            doc = load_document(f.name, f.read_bytes())
            cer[f.name] = round(character_error_rate(
                "\n".join(p.text for p in doc.pages),
                normalize_text(truth.read_text(encoding="utf-8", errors="replace"))), 4)
    return {"files": len(files), "ocr_pages": pages, **_rate(seconds, pages, 0),
            "failed": [r.line() for r in reports if not r.ok], "cer": cer}


def bench_ingest(paths: Iterable[Path | str], *, workdir: Path | None = None,
                 chunk_size: int = 1000, chunk_overlap: int = 150, workers: int | None = None,
                 reference: bool = True, repeat: int = 1,
                 on_stage: Optional[Callable[[str], None]] = None,
                 ocr_files: Sequence[Path | str] = ()) -> dict:
    """Ingestion throughput on the same files, all measured in this call.

    Ours, stage by stage in one process (parse, chunk, embed, upsert: pages/s and chunks/s of
    each), and the whole pipeline (:func:`rag.ingest.pipeline.ingest_files`, PDFs parsed in
    ``workers`` processes) into a fresh store; then the same files again (unchanged: only
    hashing, compared with hashing the files alone). Baselines: pypdf text extraction alone
    (the floor every pipeline pays) and, when ``reference``, LangChain's PyPDFLoader +
    RecursiveCharacterTextSplitter + Chroma.from_documents with our embedding function.
    The pipeline and the baselines run ``repeat`` times, interleaved so that they share any
    load on the machine; each figure is the median, and ``runs`` keeps every wall time (s).
    ``cpu_seconds`` (this process and its worker processes) shows the work apart from how
    much of the machine was free.
    ``ratios`` divide our pipeline's pages/s by each baseline's. ``peak_rss_mb`` is the peak
    memory after our runs (this process, which also ran the stage-by-stage pass, and the
    largest worker), before the reference runs. ``ocr_files`` (scanned PDFs) are measured
    apart by :func:`bench_ocr` (``ocr``). Stores live in a temporary
    directory under ``workdir``, removed afterwards. ``on_stage(name)`` is called as each
    measurement starts. Raises OSError for a missing path, ImportError when the reference's
    packages (langchain-community, langchain-chroma) are missing.
    """
    import os
    import statistics

    from rag.embeddings import HashingEmbeddingFunction
    from rag.ingest.pipeline import ChunkSettings, ingest_files

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
                c = _cpu_seconds()
                floor_s, floor_pages = _pypdf_floor(files)
                runs["pypdf_parse"].append(round(floor_s, 3))
                cpu["pypdf_parse"].append(round(_cpu_seconds() - c, 3))

                note(f"ours, whole pipeline (run {rep})")
                pipe_kb = _fresh_kb(root, f"pipeline-{rep}")
                c, t = _cpu_seconds(), time.perf_counter()
                reports = ingest_files(pipe_kb, files, chunking=settings, workers=workers)
                runs["pipeline"].append(round(time.perf_counter() - t, 3))
                cpu["pipeline"].append(round(_cpu_seconds() - c, 3))
                failed = [r.line() for r in reports if not r.ok]
                if rep == 1:
                    peak = _peak_rss_mb()  # before the reference loads its own stack

                if reference:
                    note(f"LangChain reference (run {rep})")
                    c = _cpu_seconds()
                    ref_s, ref_pages, ref_chunks = _langchain_reference(
                        files, root / f"reference-{rep}", chunk_size, chunk_overlap, ef)
                    runs["langchain_reference"].append(round(ref_s, 3))
                    cpu["langchain_reference"].append(round(_cpu_seconds() - c, 3))

            note("ours, unchanged files again")
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
                ocr = bench_ocr(ocr_files, root, workers=workers)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    median = {k: statistics.median(v) for k, v in runs.items() if v}
    cpu_median = {k: round(statistics.median(v), 3) for k, v in cpu.items() if v}
    pipeline = {**_rate(median["pipeline"], pages, chunks), "cpu_seconds": cpu_median["pipeline"],
                "workers": workers or os.cpu_count() or 1, "failed": failed}
    floor = {**_rate(median["pypdf_parse"], floor_pages, chunks),
             "cpu_seconds": cpu_median["pypdf_parse"], "pages": floor_pages}
    ref = ({**_rate(median["langchain_reference"], ref_pages, ref_chunks),
            "cpu_seconds": cpu_median["langchain_reference"], "pages": ref_pages,
            "chunks": ref_chunks} if reference else None)
    return {
        "files": len(files), "pages": pages, "chunks": chunks, "repeat": max(1, repeat),
        "skipped_duplicates": [f.name for f in dropped],
        "stages": {k: _rate(v, pages, chunks) for k, v in timings.items()},
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


# -- retrieval at scale ----------------------------------------------------------------------
def synthetic_documents(corpus: Sequence[dict], n_chunks: int, *, seed: int = 0,
                        chunks_per_doc: int = 20) -> Iterator[tuple[list[ChunkRecord], int, int]]:
    """``n_chunks`` chunks of real prose for a scale test: each is 4 to 8 sentences drawn at
    random (seeded) from ``corpus`` texts, about 600 characters, grouped into documents of
    ``chunks_per_doc`` chunks. Yields ``(chunks, pages, size_bytes)`` per document; the same
    seed gives the same ids and texts."""
    from rag.text import sentences

    pool = [s for row in corpus for s in sentences(str(row.get("text", ""))) if len(s) > 20]
    if not pool:
        raise ValueError("the corpus has no sentences to sample")
    rng = random.Random(seed)
    made = 0
    doc_no = 0
    while made < n_chunks:
        sha = hashlib.sha256(f"retrace-scale/{seed}/{doc_no}".encode()).hexdigest()
        source = f"synthetic-{doc_no:06d}.txt"
        records = []
        for index in range(min(chunks_per_doc, n_chunks - made)):
            text = " ".join(rng.choice(pool) for _ in range(rng.randint(4, 8)))
            records.append(ChunkRecord(
                id=f"{sha[:16]}-{index:05d}", text=text, source=source, page=1, index=index,
                doc_sha=sha, metadata={"source": source, "page": 1, "chunk_index": index,
                                       "doc_sha": sha}))
        made += len(records)
        doc_no += 1
        yield records, 1, sum(len(r.text) for r in records)


def fill_store(kb, corpus: Sequence[dict], n_chunks: int, *, seed: int = 0,
               batch_docs: int = 50, on_progress: Progress = None) -> dict:
    """Fill ``kb`` with :func:`synthetic_documents` up to ``n_chunks`` chunks (documents already
    stored are skipped, so a filled store is reused). Returns ``added``, ``seconds`` and
    ``chunks_per_s``."""
    started = time.perf_counter()
    added = 0
    batch: list = []
    seen = 0

    def flush() -> None:
        nonlocal added, batch
        shas = [d[0][0].doc_sha for d in batch]
        stored = {m["doc_sha"] for m in kb.collection.get(
            where={"doc_sha": {"$in": shas}}, include=["metadatas"])["metadatas"]}
        todo = [d for d in batch if d[0][0].doc_sha not in stored]
        if todo:
            added += kb.add_documents(todo)
        batch = []

    for doc in synthetic_documents(corpus, n_chunks, seed=seed):
        batch.append(doc)
        seen += len(doc[0])
        if len(batch) >= batch_docs:
            flush()
            if on_progress:
                on_progress(seen, n_chunks)
    if batch:
        flush()
        if on_progress:
            on_progress(seen, n_chunks)
    seconds = time.perf_counter() - started
    return {"added": added, "seconds": round(seconds, 1),
            "chunks_per_s": round(added / seconds, 1) if added and seconds else None}


def bench_scale(kb, queries: Sequence[str], *, k: int = 6,
                modes: Sequence[str] = ("dense", "bm25", "hybrid"), reopen=None,
                on_progress: Progress = None) -> dict:
    """Query latency of each retrieval mode over ``kb`` (every query once per mode, after 5
    warm-up queries): p50, p95 and mean in ms, and each mode's p50 as a ratio to dense (the
    baseline). Also the BM25 index: ``build_s`` (from the whole store, forced) and, when
    ``reopen()`` gives a fresh KnowledgeBase object on the same store (a restart),
    ``load_s`` (read back from disk) and their ratio."""
    from rag.retrieval import index_path, lexical_index, retrieve

    out: dict = {"chunks": kb.count(), "k": k, "queries": len(queries)}
    path = index_path(kb)
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)
    kb.__dict__.pop("_lexical_index", None)
    t = time.perf_counter()
    lexical_index(kb)
    out["bm25_build_s"] = round(time.perf_counter() - t, 2)
    if reopen is not None:
        fresh = reopen()
        t = time.perf_counter()
        lexical_index(fresh)
        out["bm25_load_s"] = round(time.perf_counter() - t, 3)
        out["bm25_build_vs_load"] = ratio(out["bm25_build_s"], out["bm25_load_s"])
    total = len(modes) * len(queries)
    done = 0
    modes_out = {}
    for mode in modes:
        for q in list(queries)[:5]:
            retrieve(kb, q, k, mode)
        lat = []
        for q in queries:
            started = time.perf_counter()
            retrieve(kb, q, k, mode)
            lat.append((time.perf_counter() - started) * 1000)
            done += 1
            if on_progress:
                on_progress(done, total)
        modes_out[mode] = {"latency_ms_p50": round(percentile(lat, 50), 2),
                           "latency_ms_p95": round(percentile(lat, 95), 2),
                           "latency_ms_mean": round(_mean(lat), 2)}
    base = modes_out.get("dense", {}).get("latency_ms_p50", 0.0)
    for mode, row in modes_out.items():
        row["p50_vs_dense"] = ratio(row["latency_ms_p50"], base)
    out["modes"] = modes_out
    return out


# -- tables ----------------------------------------------------------------------------------
def format_table(rows: Sequence[dict], columns: Sequence[tuple[str, str]]) -> str:
    """A plain-text table (Markdown pipe syntax) of ``rows`` with ``columns`` given as
    ``(key, header)``; floats are shown with up to 3 decimals, None as a dash."""
    def cell(v) -> str:
        if v is None:
            return "-"
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, float):
            return f"{v:.3f}".rstrip("0").rstrip(".") if abs(v) < 1000 else f"{v:,.0f}"
        return str(v)

    head = [h for _, h in columns]
    body = [[cell(r.get(key)) for key, _ in columns] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h)
              for i, h in enumerate(head)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(head), sep, *(line(b) for b in body)])


@dataclass
class QaRun:
    """The figures of several presets on one corpus, the first being the baseline."""

    index: CorpusIndex
    summaries: list[dict] = field(default_factory=list)

    def with_ratios(self) -> list[dict]:
        """Each summary plus ``vs_baseline``: recall_all, answer_hit and latency_ms_p50 as ratios
        to the first summary's (the baseline, naive RAG)."""
        if not self.summaries:
            return []
        base = self.summaries[0]
        out = []
        for s in self.summaries:
            out.append({**s, "baseline": base["preset"], "vs_baseline": {
                key: ratio(s[key], base[key]) for key in ("recall_all", "answer_hit", "latency_ms_p50")}})
        return out
