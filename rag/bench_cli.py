"""``python -m rag bench qa|retrieval|ingest|scale``: run the benchmarks of :mod:`rag.bench`
with a progress bar on stderr, then print a table (or JSON with ``--json``)."""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

from rag.config import PRESETS, Settings

SHARED_HOTPOTQA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hotpotqa"
"""The shared HotpotQA sample (../shared/data/hotpotqa from the project root): the default
text source of ``bench scale``."""


def _bar(desc: str, total: int | None = None):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, file=sys.stderr, unit="q", mininterval=0.5,
                dynamic_ncols=True, leave=True)


def _progress(bar):
    def update(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    return update


def _bench_settings(args) -> Settings:
    settings = Settings.from_env()
    data_dir = Path(args.data_dir) if args.data_dir else settings.data_dir / "bench"
    return settings.with_(data_dir=data_dir)


def _corpus_collection(corpus: Path, prefix: str) -> str:
    digest = hashlib.sha256(corpus.read_bytes()).hexdigest()[:8]
    stem = "".join(ch if ch.isalnum() else "-" for ch in corpus.resolve().parent.name)[:30]
    return f"{prefix}-{stem or 'corpus'}-{digest}"


def _open(args, settings: Settings, default_name: str):
    from rag.store import open_knowledge_base

    return open_knowledge_base(settings, args.collection or default_name)


def _index(args, settings):
    from rag.bench import index_corpus, load_beir

    data = load_beir(Path(args.corpus), Path(args.queries), Path(args.qrels), limit=args.limit)
    kb = _open(args, settings, _corpus_collection(Path(args.corpus), "bench"))
    with _bar("indexing corpus") as bar:
        bar.unit = "doc"
        index = index_corpus(kb, data.corpus, on_progress=_progress(bar))
    print(f"corpus: {len(data.corpus)} passages in '{kb.name}' ({index.added} added, "
          f"{index.already} already there, {index.seconds:.1f} s; BM25 ready in "
          f"{index.bm25_seconds:.1f} s); {len(data.queries)} questions", file=sys.stderr)
    return data, kb, index


QA_COLUMNS = [("preset", "preset"), ("retrieval", "retrieval"), ("questions", "questions"),
              ("recall_all", "recall_all"), ("recall_any", "recall_any"),
              ("answer_hit", "answer_hit"), ("llm_calls_mean", "llm calls"),
              ("rewrites_mean", "rewrites"), ("steps_mean", "steps"),
              ("latency_ms_p50", "p50 ms"), ("latency_ms_p95", "p95 ms"),
              ("graph_overhead_ms_per_step", "graph ms/step"),
              ("recall_all_vs", "recall_all vs {base}"), ("answer_hit_vs", "answer_hit vs {base}"),
              ("latency_vs", "p50 vs {base}")]


def cmd_bench_qa(args) -> int:
    from rag.bench import QaRun, run_qa, summarize_qa
    from rag.config import preset_options

    requested = []
    for item in args.preset or ["full"]:
        for name in item.split(","):
            name = name.strip()
            requested += list(PRESETS) if name == "all" else [name]
    for name in requested:
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)} or all")
    presets = list(dict.fromkeys(requested))
    if "naive" in presets:
        presets.remove("naive")
    if "naive" in requested or not args.no_baseline:
        presets.insert(0, "naive")  # the baseline runs first, in the same process and store
    settings = _bench_settings(args)
    data, kb, index = _index(args, settings)
    overrides: dict = {"top_k": args.k}
    if args.retrieval:
        overrides["retrieval"] = args.retrieval
    for item in args.option or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--option wants KEY=VALUE, got {item!r}")
        overrides[key.strip()] = value.strip()  # Options validates and converts (pydantic)
    qa = QaRun(index=index)
    started = time.perf_counter()
    for name in presets:
        options = preset_options(name, **overrides)
        t = time.perf_counter()
        with _bar(name, len(data.queries)) as bar:
            results = run_qa(kb, data, index.chunk_to_doc, options, settings=settings,
                             on_progress=_progress(bar))
        summary = summarize_qa(results, preset=name, options=options, engine=settings.engine_name)
        summary["seconds"] = round(time.perf_counter() - t, 1)
        summary["options"] = {k: getattr(options, k) for k in overrides}
        qa.summaries.append(summary)
    print(f"{len(data.queries)} questions x {len(presets)} presets in "
          f"{time.perf_counter() - started:.1f} s (after indexing)", file=sys.stderr)
    rows = qa.with_ratios()
    shown = [r for r in rows if r["preset"] in requested] if "naive" not in requested else rows
    table = format_qa(rows)
    if args.json:
        print(json.dumps(shown[0] if len(shown) == 1 else shown, indent=2))
        print(table, file=sys.stderr)
    else:
        print(table)
    return 0


def format_qa(rows: list[dict]) -> str:
    from rag.bench import format_table

    flat = [{**r, "recall_all_vs": r["vs_baseline"]["recall_all"],
             "answer_hit_vs": r["vs_baseline"]["answer_hit"],
             "latency_vs": r["vs_baseline"]["latency_ms_p50"]} for r in rows]
    base = rows[0]["preset"] if rows else "baseline"
    return format_table(flat, [(key, head.format(base=base)) for key, head in QA_COLUMNS])


def cmd_bench_retrieval(args) -> int:
    from rag.bench import format_table, ratio, retrieval_recall

    settings = _bench_settings(args)
    data, kb, index = _index(args, settings)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    with _bar("retrieval", len(modes) * len(data.queries)) as bar:
        rows = retrieval_recall(kb, data, index.chunk_to_doc, k=args.k, modes=modes,
                                on_progress=_progress(bar))
    base = rows[0]
    for r in rows:
        r["recall_all_vs_first"] = ratio(r["recall_all"], base["recall_all"])
    table = format_table(rows, [("mode", "mode"), ("k", "k"), ("questions", "questions"),
                                ("recall_all", f"recall_all@{args.k}"),
                                ("recall_any", f"recall_any@{args.k}"),
                                ("recall_mean", f"recall@{args.k}"),
                                ("latency_ms_p50", "p50 ms"), ("latency_ms_p95", "p95 ms"),
                                ("recall_all_vs_first", f"recall_all vs {base['mode']}")])
    if args.json:
        print(json.dumps(rows, indent=2))
        print(table, file=sys.stderr)
    else:
        print(table)
    return 0


def format_ingest(result: dict) -> str:
    from rag.bench import format_table, ratio

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
        cer = ", ".join(f"CER {name} {value:.2%}" for name, value in ocr["cer"].items())
        rows.append({"what": f"ours: OCR ({ocr['ocr_pages']} scanned pages, {ocr['files']} files)",
                     "seconds": ocr["seconds"], "pages_per_s": ocr["pages_per_s"],
                     "note": cer or "-"})
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
    peak = result.get("peak_rss_mb") or {}
    if peak.get("self") is not None:
        head += (f"\npeak memory (RSS) after our runs: {peak['self']} MB in this process, "
                 f"{peak['largest_child']} MB in the largest worker")
    return head + "\n" + table


DEFAULT_OCR_FILES = ("../shared/data/tricky-pdfs/ocrmypdf__c02-22.pdf",
                     "../shared/data/tricky-pdfs/ocrmypdf__linn.pdf")
"""Scanned PDFs OCR'd by ``bench ingest`` when they exist (linn has its true text beside it)."""


def _ocr_files(args) -> list[str]:
    if args.ocr_files is None:
        return [f for f in DEFAULT_OCR_FILES if Path(f).is_file()]
    return list(args.ocr_files)


def cmd_bench_ingest(args) -> int:
    from rag.bench import bench_ingest

    settings = _bench_settings(args)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    result = bench_ingest(args.paths, workdir=settings.data_dir, chunk_size=args.chunk_size,
                          chunk_overlap=args.chunk_overlap, workers=args.workers,
                          reference=not args.no_reference, repeat=args.repeat,
                          ocr_files=_ocr_files(args),
                          on_stage=lambda name: print(f"measuring {name} ...", file=sys.stderr,
                                                      flush=True))
    table = format_ingest(result)
    if args.json:
        print(json.dumps(result, indent=2))
        print(table, file=sys.stderr)
    else:
        print(table)
    return 1 if result["pipeline"]["failed"] else 0


def cmd_bench_scale(args) -> int:
    from rag.bench import bench_scale, fill_store, format_table, read_jsonl
    from rag.store import open_knowledge_base

    corpus = Path(args.corpus) if args.corpus else SHARED_HOTPOTQA / "corpus.jsonl"
    queries = Path(args.queries) if args.queries else SHARED_HOTPOTQA / "queries.jsonl"
    settings = _bench_settings(args)
    name = args.collection or f"bench-scale-{args.chunks}"
    kb = open_knowledge_base(settings, name)
    with _bar(f"filling '{name}'", args.chunks) as bar:
        bar.unit = "chunk"
        fill = fill_store(kb, read_jsonl(corpus), args.chunks, on_progress=_progress(bar))
    print(f"store: {kb.count()} chunks ({fill['added']} added in {fill['seconds']} s)",
          file=sys.stderr)
    texts = [q["text"] for q in read_jsonl(queries)][:args.queries_limit]
    with _bar("queries") as bar:
        result = bench_scale(kb, texts, k=args.k, reopen=lambda: open_knowledge_base(settings, name),
                             on_progress=_progress(bar))
    result["fill"] = fill
    rows = [{"mode": m, **v} for m, v in result["modes"].items()]
    table = format_table(rows, [("mode", "mode"), ("latency_ms_p50", "p50 ms"),
                                ("latency_ms_p95", "p95 ms"), ("latency_ms_mean", "mean ms"),
                                ("p50_vs_dense", "p50 vs dense")])
    table += (f"\n{result['chunks']} chunks, k={result['k']}, {result['queries']} queries per mode; "
              f"BM25 index built in {result['bm25_build_s']} s, loaded after a restart in "
              f"{result.get('bm25_load_s')} s ({result.get('bm25_build_vs_load')}x faster)")
    if args.json:
        print(json.dumps(result, indent=2))
        print(table, file=sys.stderr)
    else:
        print(table)
    return 0


def add_bench_commands(sub) -> None:
    """Register ``bench`` and its subcommands on the top-level subparsers ``sub``."""
    bench = sub.add_parser("bench", help="benchmarks on real data (qa, retrieval, ingest, scale)")
    bsub = bench.add_subparsers(dest="bench_command", required=True)

    def common(p, *, collection: bool = True) -> None:
        p.add_argument("--data-dir", help="where benchmark stores live "
                                          "(default: $RAG_DATA_DIR/bench, i.e. ./data/bench)")
        if collection:
            p.add_argument("--collection", help="knowledge base name (default: derived from the data)")
        p.add_argument("--json", action="store_true", help="print one JSON result on stdout")

    def beir(p) -> None:
        p.add_argument("--corpus", required=True, help="corpus.jsonl (_id, title, text)")
        p.add_argument("--queries", required=True, help="queries.jsonl (_id, text, answers)")
        p.add_argument("--qrels", required=True, help="qrels TSV with a header")
        p.add_argument("--k", type=int, default=6, help="chunks given to the generator (default 6)")
        p.add_argument("--limit", type=int, help="only the first N questions")

    p = bsub.add_parser("qa", help="questions through the graph: recall, answers, cost, latency")
    beir(p)
    p.add_argument("--preset", action="append",
                   help="naive, crag, self-rag, full or all; repeat or comma-separate "
                        "(default full; naive always runs first as the baseline)")
    p.add_argument("--retrieval", choices=["dense", "bm25", "hybrid"],
                   help="retrieval mode (default: the Options default)")
    p.add_argument("--no-baseline", action="store_true", help="do not add the naive baseline")
    p.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="any run option for every preset, e.g. max_rewrites=3 (repeatable)")
    common(p)
    p.set_defaults(func=cmd_bench_qa)

    p = bsub.add_parser("retrieval", help="recall@k of each retrieval mode alone")
    beir(p)
    p.add_argument("--modes", default="dense,bm25,hybrid",
                   help="comma-separated; the first is the baseline (default dense,bm25,hybrid)")
    common(p)
    p.set_defaults(func=cmd_bench_retrieval)

    p = bsub.add_parser("ingest", help="ingestion throughput against pypdf and LangChain")
    p.add_argument("paths", nargs="+", help="files or directories (.pdf, .txt, .md)")
    p.add_argument("--workers", type=int, help="PDF parsing processes (default: one per core)")
    p.add_argument("--repeat", type=int, default=1,
                   help="runs of the pipeline and the baselines, interleaved; medians shown (default 1)")
    p.add_argument("--chunk-size", type=int, default=1000)
    p.add_argument("--chunk-overlap", type=int, default=150)
    p.add_argument("--no-reference", action="store_true",
                   help="skip the LangChain reference (needs langchain-community, langchain-chroma)")
    p.add_argument("--ocr-files", nargs="*", metavar="PDF",
                   help="scanned PDFs for OCR pages/s and, where X.txt sits beside X.pdf, the "
                        "character error rate (default: c02-22 and linn from the shared "
                        "tricky-pdfs; give none to skip)")
    common(p, collection=False)
    p.set_defaults(func=cmd_bench_ingest)

    p = bsub.add_parser("scale", help="retrieval latency in a store of many chunks")
    p.add_argument("--chunks", type=int, default=100_000, help="store size (default 100000)")
    p.add_argument("--corpus", help="text source, corpus.jsonl (default: the shared HotpotQA)")
    p.add_argument("--queries", help="queries.jsonl (default: the shared HotpotQA questions)")
    p.add_argument("--queries-limit", type=int, default=200, help="queries per mode (default 200)")
    p.add_argument("--k", type=int, default=6)
    common(p)
    p.set_defaults(func=cmd_bench_scale)

