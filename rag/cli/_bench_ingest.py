"""``python -m rag bench ingest`` and ``bench scale``: the benchmarks of filling a store and of its size.

Their commands and arguments; :mod:`rag.cli.bench` registers them beside the others.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag.bench.data import SHARED_DATA_ENV, format_table, ratio, read_jsonl, shared_data_dir
from rag.bench.harness import peak_rss_mb
from rag.bench.ingest import bench_ingest
from rag.bench.replica import replica_delay
from rag.bench.scale import bench_scale, chroma_add_rate, disk_mb, fill_store
from rag.cli._bench_tables import bench_settings, emit, format_ingest, progress, progress_bar
from rag.cli._common import SharedArgs
from rag.store.chroma import open_knowledge_base

OCR_FILES = ("tricky-pdfs/ocrmypdf__c02-22.pdf", "tricky-pdfs/ocrmypdf__linn.pdf")
"""Scanned PDFs in the shared data that ``bench ingest`` OCRs by default (linn has its true
text beside it, for the character error rate)."""


def _ocr_files(args: argparse.Namespace) -> list[Path]:
    if args.ocr_files is None:
        return [p for p in (shared_data_dir() / f for f in OCR_FILES) if p.is_file()]
    return [Path(p) for p in args.ocr_files]


def cmd_bench_ingest(args: argparse.Namespace) -> int:
    """``bench ingest``: ingestion throughput against pypdf and LangChain.

    Returns:
        0, or 1 when our pipeline failed on a file.
    """
    settings = bench_settings(args)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    result = bench_ingest(args.paths, workdir=settings.data_dir, chunk_size=args.chunk_size,
                          chunk_overlap=args.chunk_overlap, workers=args.workers,
                          reference=not args.no_reference, repeat=args.repeat,
                          ocr_files=_ocr_files(args),
                          on_stage=lambda name: print(f"measuring {name} ...", file=sys.stderr,
                                                      flush=True))
    emit(args, result, format_ingest(result))
    return 1 if result["pipeline"]["failed"] else 0


def cmd_bench_scale(args: argparse.Namespace) -> int:
    """``bench scale``: retrieval latency per mode in a store of ``--chunks`` chunks. Returns 0."""
    hotpotqa = shared_data_dir() / "hotpotqa"
    corpus = Path(args.corpus) if args.corpus else hotpotqa / "corpus.jsonl"
    queries = Path(args.queries) if args.queries else hotpotqa / "queries.jsonl"
    settings = bench_settings(args)
    name = args.collection or f"bench-scale-{args.chunks}"
    kb = open_knowledge_base(settings, name)
    subset = min(args.chroma_add_chunks, args.chunks)
    with progress_bar(f"filling '{name}'", args.chunks) as bar:
        bar.unit = "chunk"
        fill = fill_store(kb, read_jsonl(corpus), args.chunks, mark=subset or None,
                          on_progress=progress(bar))
    print(f"store: {kb.count()} chunks ({fill['added']} added in {fill['seconds']} s)",
          file=sys.stderr)
    disk = None if settings.chroma_host else {
        "chroma_mb": disk_mb(settings.data_dir / "chroma"),
        "keyword_mb": disk_mb(settings.data_dir / "bm25" / name)}
    limit = None
    if subset:
        print(f"Chroma's own add of {subset} precomputed vectors ...", file=sys.stderr, flush=True)
        scratch = None if settings.chroma_host else settings.data_dir / "chroma-add"
        limit = chroma_add_rate(kb, read_jsonl(corpus), subset, scratch_dir=scratch)
    texts = [q["text"] for q in read_jsonl(queries)][:args.queries_limit]
    with progress_bar("queries") as bar:
        result = bench_scale(kb, texts, k=args.k, reopen=lambda: open_knowledge_base(settings, name),
                             corpus=read_jsonl(corpus), on_progress=progress(bar))
    result["fill"] = fill
    result["chroma_add"] = limit
    if limit:
        own = limit["chunks_per_s"] or 0.0  # None below: this run added nothing (a store reused)
        limit["fill_vs_chroma_add"] = ratio(fill["chunks_per_s"], own) if fill["chunks_per_s"] else None
        first = fill.get("mark_chunks_per_s")
        limit["first_vs_chroma_add"] = ratio(first, own) if first else None
    result["disk"] = disk
    if args.replica_tries and settings.chroma_host:
        with progress_bar("replica delay", args.replica_tries) as bar:
            result["replica"] = replica_delay(settings, name, read_jsonl(corpus), tries=args.replica_tries,
                                              on_progress=progress(bar))
    rows = [{"mode": m, **v} for m, v in result["modes"].items()]
    table = format_table(rows, [("mode", "mode"), ("latency_ms_p50", "p50 ms"),
                                ("latency_ms_p95", "p95 ms"), ("latency_ms_mean", "mean ms"),
                                ("p50_vs_dense", "p50 vs dense")])
    if result.get("bm25_shared"):
        table += (f"\n{result['chunks']} chunks, k={result['k']}, {result['queries']} queries per mode; "
                  f"keyword index in the shared database (never rebuilt): checked in {result['bm25_build_s']}"
                  f" s, opened by a new process in {result.get('bm25_load_s')} s")
    else:
        table += (f"\n{result['chunks']} chunks, k={result['k']}, {result['queries']} queries per mode; "
                  f"keyword index built from the whole store in {result['bm25_build_s']} s (once), opened "
                  f"after a restart in {result.get('bm25_load_s')} s "
                  f"({result.get('bm25_build_vs_load')}x faster)")
    if result.get("after_change"):
        table += ("\n\nThe first question after adding or deleting one document (20 chunks), beside "
                  "the same mode's\nmedian and slowest question above:\n")
        table += format_table(result["after_change"], [
            ("mode", "mode"), ("change", "change"), ("change_ms", "store call ms"),
            ("first_ms", "first question ms"), ("p50_ms", "p50 ms"), ("max_ms", "max ms"),
            ("extra_ms", "extra vs p50 ms"), ("extra_vs_max_ms", "extra vs max ms"),
            ("first_vs_p50", "first vs p50")])
    table += _replica_table(result.get("replica"), args.replica_tries)
    result["peak_rss_mb"] = peak_rss_mb()  # the whole run: fill, Chroma's add, index build, questions
    table += _size_lines(result)
    emit(args, result, table)
    return 0


def _size_lines(result: dict) -> str:
    """The fill against Chroma's own add, the peak memory and the store on disk."""
    fill, limit, disk = result["fill"], result.get("chroma_add"), result.get("disk")
    rss = result["peak_rss_mb"]
    lines = [f"fill: {fill['added']} chunks added in {fill['seconds']} s ({fill['chunks_per_s']} chunks/s)"]
    if fill.get("mark_added") is not None:
        lines[0] += (f"; the first {fill['mark_added']} in {fill['mark_seconds']} s "
                     f"({fill['mark_chunks_per_s']} chunks/s)")
    if limit:
        lines.append(f"Chroma's own add of {limit['chunks']} precomputed vectors (a scratch store, "
                     f"batches of {limit['batch']}): {limit['seconds']} s ({limit['chunks_per_s']} chunks/s; "
                     f"embedding them, untimed, {limit['embed_s']} s); fill vs that: "
                     f"{limit['fill_vs_chroma_add']} (whole fill), {limit['first_vs_chroma_add']} "
                     f"(first {fill.get('mark_added')})")
    if disk:
        lines.append(f"store on disk: Chroma {disk['chroma_mb']:,} MB, keyword index "
                     f"{disk['keyword_mb']:,} MB")
    lines.append(f"peak resident memory: {rss['self']:,} MB (this process), {rss['largest_child']:,} MB "
                 "(largest child)")
    return "\n\n" + "\n".join(lines)


def _replica_table(replica: dict | None, tries: int) -> str:
    if not tries:
        return ""
    if replica is None:
        return ("\n\nKeyword search across replicas: not measured (it needs a Chroma server: set "
                "CHROMA_HOST, and RAG_DATABASE_URL for the shared keyword index)")
    where = "one keyword index shared through RAG_DATABASE_URL" if replica["shared_index"] else \
        "each replica's own keyword file, caught up from Chroma"
    return (f"\n\nKeyword search across replicas ({where}), {replica['chunks']} chunks: a document added "
            "here,\nfound by another process's keyword search after (ms from the end of the ingest call; "
            "negative: before it returned):\n"
            + format_table(replica["rows"], [("ingest_ms", "ingest ms"), ("delay_ms", "delay ms"),
                                             ("from_start_ms", "from start ms"), ("polls", "searches"),
                                             ("query_ms", "search p50 ms")])
            + f"\ndelay p50 {replica['delay_ms_p50']} ms, max {replica['delay_ms_max']} ms")


def add_ingest_parsers(bsub, shared: SharedArgs) -> None:
    """Add ``ingest`` and ``scale`` to the ``bench`` subparsers ``bsub``."""
    stores = [shared.bench_dir, shared.bench_collection, shared.json]
    p = bsub.add_parser("ingest", help="ingestion throughput against pypdf and LangChain",
                        parents=[shared.bench_dir, shared.json])
    p.add_argument("paths", nargs="+", help="files or directories (.pdf, .txt, .md)")
    p.add_argument("--workers", type=int, help="PDF parsing processes (default: one per core)")
    p.add_argument("--repeat", type=int, default=1,
                   help="runs of the pipeline and the baselines (OCR's too), interleaved; medians shown "
                        "(default 1)")
    p.add_argument("--chunk-size", type=int, default=1000)
    p.add_argument("--chunk-overlap", type=int, default=150)
    p.add_argument("--no-reference", action="store_true",
                   help="skip the LangChain reference (needs langchain-community, langchain-chroma)")
    p.add_argument("--ocr-files", nargs="*", metavar="PDF",
                   help="scanned PDFs for OCR pages/s and, where X.txt sits beside X.pdf, the "
                        "character error rate, ours and a baseline's (pypdfium2 at 300 dpi + RapidOCR()) "
                        "over the same pages (those our pipeline OCRs), in the same run "
                        f"(default: c02-22 and linn in ${SHARED_DATA_ENV}/"
                        "tricky-pdfs; give none to skip)")
    p.set_defaults(func=cmd_bench_ingest)

    shared_hotpotqa = f"${SHARED_DATA_ENV}/hotpotqa, ${SHARED_DATA_ENV} defaulting to ../shared/data"
    p = bsub.add_parser("scale", help="retrieval latency in a store of many chunks", parents=stores)
    p.add_argument("--chunks", type=int, default=100_000, help="store size (default 100000)")
    p.add_argument("--corpus", help=f"text source, corpus.jsonl (default: the shared HotpotQA's, "
                                    f"in {shared_hotpotqa})")
    p.add_argument("--queries", help=f"queries.jsonl (default: the shared HotpotQA questions, "
                                     f"in {shared_hotpotqa})")
    p.add_argument("--queries-limit", type=int, default=200, help="queries per mode (default 200)")
    p.add_argument("--k", type=int, default=6)
    p.add_argument("--chroma-add-chunks", type=int, default=100_000,
                   help="chunks that Chroma's own add stores as precomputed vectors in a scratch store, the "
                        "limit of the fill (at most --chunks; 0 skips; default 100000)")
    p.add_argument("--replica-tries", type=int, default=5,
                   help="documents added while another process searches for them, to time keyword search "
                        "across replicas (needs CHROMA_HOST; RAG_DATABASE_URL shares the index; 0 skips; "
                        "default 5)")
    p.set_defaults(func=cmd_bench_scale)
