"""``python -m rag bench qa|retrieval|ingest|scale|grader|latency|cache|checkpoints``.

Run the benchmarks of :mod:`rag.bench`
with a progress bar on stderr, then print a table (or JSON with ``--json``, the table then on
stderr).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

from rag.bench.checkpoints import format_checkpoint_cost, run_checkpoint_cost
from rag.bench.data import (
    SHARED_DATA_ENV,
    format_table,
    ratio,
    read_jsonl,
    shared_data_dir,
)
from rag.bench.latency import format_latency, run_latency
from rag.bench.qa import QaRun, run_qa, summarize_qa
from rag.bench.retrieval import retrieval_recall
from rag.cli._bench_cache import add_cache_parser
from rag.cli._bench_ingest import add_ingest_parsers
from rag.cli._bench_tables import bench_settings, emit, format_qa, index_beir, progress, progress_bar
from rag.cli._common import SharedArgs
from rag.config import PRESETS, preset_options
from rag.eval import grader_accuracy

POSITION = 50
HELP = "benchmarks on real data (qa, retrieval, ingest, scale, grader, latency, cache, checkpoints)"

# -- bench qa --------------------------------------------------------------------------------
def _qa_presets(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """``(requested, presets)``: the presets asked for, and those to run.

    Naive runs first as the baseline unless ``--no-baseline``. Raises ValueError for an unknown preset.
    """
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
    return requested, presets


def _qa_overrides(args: argparse.Namespace) -> dict:
    overrides: dict = {"top_k": args.k}
    if args.retrieval:
        overrides["retrieval"] = args.retrieval
    for item in args.option or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--option wants KEY=VALUE, got {item!r}")
        overrides[key.strip()] = value.strip()  # Options validates and converts (pydantic)
    return overrides


def cmd_bench_qa(args: argparse.Namespace) -> int:
    """``bench qa``: every question through the graph once per preset.

    Returns 0.

    Raises:
        ValueError: an unknown preset, a malformed ``--option`` or a bad data file.
        OSError: a data file cannot be read.
    """
    requested, presets = _qa_presets(args)
    settings = bench_settings(args)
    data, kb, index = index_beir(args, settings)
    overrides = _qa_overrides(args)
    halves = _halves(args.half, args.dev_size, len(data.queries))
    lo, hi = min(h[1] for h in halves), max(h[2] for h in halves)
    data = replace(data, queries=data.queries[lo:hi])  # only the questions some half needs
    per_half = {name: QaRun(index=index) for name, _, _ in halves}
    started = time.perf_counter()
    for name in presets:
        options = preset_options(name, **overrides)
        t = time.perf_counter()
        with progress_bar(name, len(data.queries)) as bar:
            results = run_qa(kb, data, index.chunk_to_doc, options, settings=settings,
                             on_progress=progress(bar))
        seconds = round(time.perf_counter() - t, 1)
        for half, a, b in halves:
            summary = summarize_qa(results[a - lo:b - lo], preset=name, options=options,
                                   engine=settings.engine_name)
            summary["half"] = f"{half} {a + 1}-{b}"
            summary["seconds"] = seconds
            summary["options"] = {k: getattr(options, k) for k in overrides}
            per_half[half].summaries.append(summary)
    print(f"{len(data.queries)} questions x {len(presets)} presets in "
          f"{time.perf_counter() - started:.1f} s (after indexing)", file=sys.stderr)
    shown_all, tables = {}, []
    for half, qa in per_half.items():
        rows = qa.with_ratios()  # ratios against naive on the same half
        shown = [r for r in rows if r["preset"] in requested] if "naive" not in requested else rows
        shown_all[half] = shown[0] if len(shown) == 1 else shown
        tables.append(format_qa(rows))
    emit(args, shown_all[halves[0][0]] if len(halves) == 1 else shown_all, "\n\n".join(tables))
    return 0


def _halves(half: str, dev_size: int, n: int) -> list[tuple[str, int, int]]:
    """(name, start, end) question ranges, 0-based, end exclusive.

    ``dev`` is the first ``dev_size`` questions, ``report`` the rest, ``both`` each of them,
    ``all`` every question.

    Raises:
        ValueError: an unknown ``half``.
    """
    dev_size = max(0, min(dev_size, n))
    ranges = {"all": [("all", 0, n)], "dev": [("dev", 0, dev_size)],
              "report": [("report", dev_size, n)],
              "both": [("dev", 0, dev_size), ("report", dev_size, n)]}
    if half not in ranges:
        raise ValueError(f"--half must be dev, report, both or all, got {half!r}")
    return ranges[half]


# -- bench grader ----------------------------------------------------------------------------
def cmd_bench_grader(args: argparse.Namespace) -> int:
    """``bench grader``: the relevance grader on RGB's positive vs negative passages.

    Prints accuracy, precision and recall per half. Returns 0.

    Raises:
        OSError: the RGB file cannot be read.
    """
    rgb = Path(args.rgb) if args.rgb else shared_data_dir() / "rgb" / "rgb_en_fact.jsonl"
    result = grader_accuracy(read_jsonl(rgb), halves=args.dev_size)
    table = format_table([{"half": k, **v} for k, v in result.items()],
                         [("half", "half"), ("questions", "questions"), ("passages", "passages"),
                          ("accuracy", "accuracy"), ("precision", "precision"),
                          ("recall", "recall"), ("tp", "tp"), ("fp", "fp"), ("tn", "tn"),
                          ("fn", "fn")])
    emit(args, result, table)
    return 0


# -- bench latency ---------------------------------------------------------------------------
def cmd_bench_latency(args: argparse.Namespace) -> int:
    """``bench latency``: wall time per preset against a local model server with a fixed delay per call.

    Prints p50/p95 wall time, time to first token and LLM calls, each as a ratio to naive (JSON with
    ``--json``). Returns 0.

    Raises:
        ValueError: an unknown preset, or fewer than 1 question or repeat.
    """
    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    with progress_bar("latency", None) as bar:
        bar.unit = "run"
        results = run_latency(args.delay_ms, args.questions, args.repeats, presets,
                              Path(args.data_dir) if args.data_dir else None, on_progress=progress(bar))
    payload = {"delay_ms": args.delay_ms, "questions": args.questions, "repeats": args.repeats,
               "presets": [asdict(r) for r in results]}
    emit(args, payload, format_latency(results, args.delay_ms))
    return 0


# -- bench checkpoints -----------------------------------------------------------------------
def cmd_bench_checkpoints(args: argparse.Namespace) -> int:
    """``bench checkpoints``: a run's wall time with and without checkpoints, and their size.

    Prints the figures of :func:`rag.bench.checkpoints.run_checkpoint_cost` (JSON with ``--json``).
    Returns 0.

    Raises:
        ValueError: an unknown preset, or fewer than 1 question or repeat.
    """
    with progress_bar("checkpoints", None) as bar:
        bar.unit = "run"
        cost = run_checkpoint_cost(args.questions, args.repeats, args.preset, args.delay_ms,
                                   on_progress=progress(bar))
    emit(args, asdict(cost), format_checkpoint_cost(cost))
    return 0


# -- bench retrieval -------------------------------------------------------------------------
def cmd_bench_retrieval(args: argparse.Namespace) -> int:
    """``bench retrieval``: recall@k of each mode alone; the first is the baseline. Returns 0."""
    settings = bench_settings(args)
    data, kb, index = index_beir(args, settings)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    with progress_bar("retrieval", len(modes) * len(data.queries)) as bar:
        rows = retrieval_recall(kb, data, index.chunk_to_doc, k=args.k, modes=modes,
                                on_progress=progress(bar))
    base = rows[0]
    for r in rows:
        r["recall_all_vs_first"] = ratio(r["recall_all"], base["recall_all"])
    table = format_table(rows, [("mode", "mode"), ("k", "k"), ("questions", "questions"),
                                ("recall_all", f"recall_all@{args.k}"),
                                ("recall_any", f"recall_any@{args.k}"),
                                ("recall_mean", f"recall@{args.k}"),
                                ("latency_ms_p50", "p50 ms"), ("latency_ms_p95", "p95 ms"),
                                ("recall_all_vs_first", f"recall_all vs {base['mode']}")])
    emit(args, rows, table)
    return 0


# -- the parsers -----------------------------------------------------------------------------
def _beir_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--corpus", required=True, help="corpus.jsonl (_id, title, text)")
    p.add_argument("--queries", required=True, help="queries.jsonl (_id, text, answers)")
    p.add_argument("--qrels", required=True, help="qrels TSV with a header")
    p.add_argument("--k", type=int, default=6, help="chunks given to the generator (default 6)")
    p.add_argument("--limit", type=int, help="only the first N questions")


def register(commands, shared: SharedArgs) -> None:
    """Add ``bench`` and its subcommands to the top-level subparsers ``commands``."""
    bench = commands.add_parser("bench", help=HELP)
    bsub = bench.add_subparsers(dest="bench_command", required=True)
    stores = [shared.bench_dir, shared.bench_collection, shared.json]

    p = bsub.add_parser("qa", help="questions through the graph: recall, answers, cost, latency",
                        parents=stores)
    _beir_args(p)
    p.add_argument("--preset", action="append",
                   help="naive, crag, self-rag, full or all; repeat or comma-separate "
                        "(default full; naive always runs first as the baseline)")
    p.add_argument("--retrieval", choices=["dense", "bm25", "hybrid"],
                   help="retrieval mode (default: the Options default)")
    p.add_argument("--no-baseline", action="store_true", help="do not add the naive baseline")
    p.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="any run option for every preset, e.g. max_rewrites=3 (repeatable)")
    p.add_argument("--half", default="all", choices=["dev", "report", "both", "all"],
                   help="tune on one half, report on the other: dev = the first --dev-size "
                        "questions, report = the rest, both = each in its own table (default all)")
    p.add_argument("--dev-size", type=int, default=100,
                   help="questions in the dev half (default 100: HotpotQA 1-100 dev, 101-200 report)")
    p.set_defaults(func=cmd_bench_qa)

    p = bsub.add_parser("grader", help="relevance grader on RGB positive vs negative passages",
                        parents=[shared.json])
    p.add_argument("--rgb", help=f"rgb_en_fact.jsonl (default: ${SHARED_DATA_ENV}/rgb/rgb_en_fact.jsonl)")
    p.add_argument("--dev-size", type=int, default=25,
                   help="questions in the dev half (default 25: RGB 1-25 dev, 26-50 report)")
    p.set_defaults(func=cmd_bench_grader)

    p = bsub.add_parser("retrieval", help="recall@k of each retrieval mode alone", parents=stores)
    _beir_args(p)
    p.add_argument("--modes", default="dense,bm25,hybrid",
                   help="comma-separated; the first is the baseline (default dense,bm25,hybrid)")
    p.add_argument("--embedding", metavar="MODEL",
                   help="embed the corpus with MODEL (hashing/dim=N, openai/<model>) in a store of its own "
                        "(default: the configured model)")
    p.set_defaults(func=cmd_bench_retrieval)

    p = bsub.add_parser("latency", help="wall time per preset against a model server with a fixed delay",
                        parents=[shared.json])
    p.add_argument("--delay-ms", type=float, default=300, help="delay per model call in ms (default 300)")
    p.add_argument("--questions", type=int, default=5, help="questions per preset (default 5)")
    p.add_argument("--repeats", type=int, default=3, help="runs of each question (default 3)")
    p.add_argument("--presets", default="naive,crag,self-rag,full",
                   help="comma-separated presets; naive always runs first as the baseline")
    p.add_argument("--data-dir", help="where the sample knowledge base is built (default: a temp dir)")
    p.set_defaults(func=cmd_bench_latency)

    p = bsub.add_parser("checkpoints", help="a run's time with and without checkpoints, and their size",
                        parents=[shared.json])
    p.add_argument("--questions", type=int, default=8, help="questions (default 8)")
    p.add_argument("--repeats", type=int, default=3, help="runs of each question each way (default 3)")
    p.add_argument("--preset", default="full", help="the preset to run (default full)")
    p.add_argument("--delay-ms", type=float, default=0,
                   help="run on the LLM engine against a local server waiting this long per call "
                        "(default 0: the offline engine)")
    p.set_defaults(func=cmd_bench_checkpoints)

    add_ingest_parsers(bsub, shared)
    add_cache_parser(bsub, shared)
