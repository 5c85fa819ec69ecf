"""What ``python -m rag bench ...`` shows: progress bars on stderr, tables from results, JSON.

And where the benchmarks' stores go (:func:`bench_settings`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

from tqdm import tqdm

from rag.bench.data import BeirData, CorpusIndex, format_table, index_corpus, load_beir, ratio
from rag.config import Settings
from rag.store.chroma import KnowledgeBase, open_knowledge_base
from rag.store.embeddings import embedding_function_for, parse_embedding


def progress_bar(desc: str, total: int | None = None) -> tqdm:
    """A progress bar on stderr, ``desc`` before it, over ``total`` items (None: unknown)."""
    return tqdm(total=total, desc=desc, file=sys.stderr, unit="q", mininterval=0.5,
                dynamic_ncols=True, leave=True)


def progress(bar: tqdm) -> Callable[[int, int], None]:
    """An ``on_progress(done, total)`` callback that moves ``bar``."""
    def update(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    return update


def bench_settings(args: argparse.Namespace) -> Settings:
    """The settings of a benchmark: its stores under ``--data-dir`` (default ``<data dir>/bench``)."""
    settings = Settings.from_env()
    data_dir = Path(args.data_dir) if args.data_dir else settings.data_dir / "bench"
    return settings.with_(data_dir=data_dir)


def emit(args: argparse.Namespace, result, table: str) -> None:
    """The table on stdout; with ``--json``, ``result`` as JSON on stdout and the table on stderr."""
    if args.json:
        print(json.dumps(result, indent=2))
        print(table, file=sys.stderr)
    else:
        print(table)

QA_COLUMNS = [("half", "half"), ("preset", "preset"), ("retrieval", "retrieval"),
              ("questions", "questions"), ("recall_all", "recall_all"), ("recall_any", "recall_any"),
              ("answer_hit", "answer_hit"), ("abstained", "abstained"), ("caveat", "caveat"),
              ("llm_calls_mean", "llm calls"),
              ("rewrites_mean", "rewrites"), ("steps_mean", "steps"),
              ("latency_ms_p50", "p50 ms"), ("latency_ms_p95", "p95 ms"),
              ("graph_overhead_ms_per_step", "graph ms/step"),
              ("recall_all_vs", "recall_all vs {base}"), ("answer_hit_vs", "answer_hit vs {base}"),
              ("latency_vs", "p50 vs {base}")]
"""``bench qa`` table columns: (key, header); ``{base}`` is the baseline preset."""


def format_qa(rows: list[dict]) -> str:
    """The ``bench qa`` table of :meth:`rag.bench.qa.QaRun.with_ratios` rows."""
    flat = [{**r, "recall_all_vs": r["vs_baseline"]["recall_all"],
             "answer_hit_vs": r["vs_baseline"]["answer_hit"],
             "latency_vs": r["vs_baseline"]["latency_ms_p50"]} for r in rows]
    base = rows[0]["preset"] if rows else "baseline"
    return format_table(flat, [(key, head.format(base=base)) for key, head in QA_COLUMNS])


def format_ingest(result: dict) -> str:
    """The ``bench ingest`` table of a :func:`rag.bench.ingest.bench_ingest` result.

    Under a line with the files, pages and chunks measured.
    """
    ours = result["pipeline"]
    rows = []
    floor, ref = result["baselines"]["pypdf_parse"], result["baselines"]["langchain_reference"]
    rows.append({"what": "pypdf parse alone (floor)", **floor,
                 "ours_vs": result["ratios"]["vs_pypdf_parse"]})
    if ref:
        rows.append({"what": "LangChain reference (PyPDFLoader, splitter, Chroma)", **ref,
                     "ours_vs": result["ratios"]["vs_langchain_reference"]})
    for stage, rate in result["stages"].items():
        rows.append({"what": f"ours: {stage} (one process)", **rate})
    rows.append({"what": f"ours: whole pipeline ({ours['workers']} workers)", **ours, "ours_vs": 1.0})
    ocr = result.get("ocr")
    if ocr:
        rows += _ocr_rows(ocr)
    again = result["reingest"]
    rows.append({"what": "ours: same files again (hashing only)", "seconds": again["seconds"],
                 "ours_vs": None, "note": f"hashing alone {again['hash_only_seconds']} s "
                                          f"({ratio(again['seconds'], again['hash_only_seconds'])}x)"})
    table = format_table(rows, [("what", "measurement"), ("seconds", "seconds"), ("cpu_seconds", "cpu s"),
                                ("pages_per_s", "pages/s"), ("chunks_per_s", "chunks/s"),
                                ("ours_vs", "our pipeline vs this"), ("note", "note")])
    head = (f"{result['files']} files, {result['pages']} pages, {result['chunks']} chunks; "
            f"median of {result['repeat']} interleaved run(s)"
            + (f"; left out byte-identical copies: {', '.join(result['skipped_duplicates'])}"
               if result["skipped_duplicates"] else ""))
    split = result.get("after_extraction")
    if split:
        head += (f"\nafter extraction (ours, one process): {split['total_ms']:.0f} ms = " + ", ".join(
            f"{stage.replace('_', ' ')} {v['ms']:.0f} ms ({(v['share'] or 0):.1%})"
            for stage, v in split["stages"].items()))
    peak = result.get("peak_rss_mb") or {}
    if peak.get("self") is not None:
        head += (f"\npeak memory (RSS) of our whole pipeline: {peak['self']} MB in its process, "
                 f"{peak['largest_child']} MB in the largest worker")
    comparison = format_ocr_comparison(ocr) if ocr else ""
    return head + "\n" + table + ("\n" + comparison if comparison else "")


def _ocr_rows(ocr: dict) -> list[dict]:
    """The rows of :func:`rag.bench.ocr.bench_ocr`'s result: its baseline script (if run), then ours."""
    def cer(run: dict) -> str:
        return ", ".join(f"CER {name} {value:.2%}" for name, value in run["cer"].items()) or "-"

    rows = []
    base = ocr.get("baseline")
    if base:
        rows.append({"what": f"OCR baseline (pypdfium2 300 dpi + RapidOCR(), {base['pages']} pages)",
                     **base, "ours_vs": ocr.get("vs_baseline"), "note": cer(base)})
    rows.append({"what": f"ours: OCR ({ocr['pages']} pages, {ocr['ocr_pages']} with text by OCR, "
                         f"{ocr['files']} files)", **ocr, "note": cer(ocr)})
    return rows


def format_ocr_comparison(ocr: dict) -> str:
    """What the OCR rows compare, and the issue's target met or not ("" without a baseline)."""
    base, target = ocr.get("baseline"), ocr.get("target")
    if not base or not target:
        return ""
    points = ", ".join(f"{name} {value:+.2f}" for name, value in ocr["cer_points_vs_baseline"].items()) or "-"
    runs = ", ".join(f"{r}x" for r in ocr["vs_baseline_runs"])
    return (f"OCR: {ocr['compared']}.\nOCR: ours {ocr['pages_per_s']} pages/s, baseline "
            f"{base['pages_per_s']} pages/s: {ocr['vs_baseline']}x (runs: {runs}); CPU s baseline/ours "
            f"{ocr['cpu_vs_baseline']}x; CER points vs the baseline: {points}; target >= "
            f"{target['min_vs_baseline']}x and <= +{target['max_cer_points']} points: "
            f"{'met' if target['met'] else 'NOT met'}")


def _corpus_collection(corpus: Path, prefix: str, suffix: str = "") -> str:
    digest = hashlib.sha256(corpus.read_bytes()).hexdigest()[:8]
    room = max(1, min(30, 63 - len(prefix) - len(digest) - len(suffix) - 3))  # Chroma names: 63 at most
    stem = "".join(ch if ch.isalnum() else "-" for ch in corpus.resolve().parent.name)[:room]
    return f"{prefix}-{stem or 'corpus'}-{digest}{'-' + suffix if suffix else ''}"


def index_beir(args: argparse.Namespace, settings: Settings) -> tuple[BeirData, KnowledgeBase, CorpusIndex]:
    """The BEIR data of ``--corpus``, ``--queries``, ``--qrels`` and ``--limit``, its corpus stored.

    In the knowledge base ``--collection``, or one named after the corpus file (``bench-<dir>-<hash>``)
    shared by the benchmarks that read it, embedded by ``--embedding`` when the command has it (then the
    model's identity ends the name); a progress bar and a line on stderr say what was added. Raises
    ValueError for an unknown model.
    Raises OSError or ValueError for a file that cannot be read.
    """
    data = load_beir(Path(args.corpus), Path(args.queries), Path(args.qrels), limit=args.limit)
    spec = getattr(args, "embedding", None)  # e.g. hashing/dim=256: a store of its own
    ident = parse_embedding(spec, settings) if spec else None
    suffix = "".join(ch if ch.isalnum() else "-" for ch in ident.replace("retrace-", "")) if ident else ""
    name = args.collection or _corpus_collection(Path(args.corpus), "bench", suffix[:20].strip("-"))
    kb = open_knowledge_base(settings, name, embedding_function_for(ident, settings) if ident else None)
    with progress_bar("indexing corpus") as bar:
        bar.unit = "doc"
        index = index_corpus(kb, data.corpus, on_progress=progress(bar))
    print(f"corpus: {len(data.corpus)} passages in '{kb.name}' ({index.added} added, "
          f"{index.already} already there, {index.seconds:.1f} s; BM25 ready in "
          f"{index.bm25_seconds:.1f} s); {len(data.queries)} questions", file=sys.stderr)
    return data, kb, index
