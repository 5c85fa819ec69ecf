"""``python -m rag bench cache``: the semantic cache's hit rate and time saved on paraphrased questions.

Its command and arguments; :mod:`rag.cli.bench` registers it beside the others.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rag.bench.cache import STORAGES, bench_cache
from rag.bench.data import SHARED_DATA_ENV, format_table, read_jsonl, shared_data_dir
from rag.cli._bench_tables import bench_settings, emit, index_beir, progress, progress_bar
from rag.cli._common import SharedArgs
from rag.store.chroma import open_knowledge_base
from rag.store.semantic_cache import DEFAULT_THRESHOLD

PARAPHRASES = Path(__file__).resolve().parents[2] / "tests" / "data" / "paraphrases.jsonl"
"""The paraphrase set: 20 HotpotQA questions, each with surface and reworded paraphrases."""
COLUMNS = [("mode", "mode"), ("paraphrases", "paraphrases"), ("hit_rate", "hit rate"),
           ("hit_rate_surface", "surface"), ("hit_rate_reworded", "reworded"), ("same_top_k", "same top-k"),
           ("fresh_ms_p50", "fresh p50 ms"), ("hit_ms_p50", "hit p50 ms"), ("miss_ms_p50", "miss p50 ms"),
           ("saved_ms_total", "saved ms"), ("saved_ms_per_hit", "ms per hit"),
           ("false_hits", "false hits"), ("others", "other questions"), ("stale", "stale after add/delete")]


def cmd_bench_cache(args: argparse.Namespace) -> int:
    """``bench cache``: the semantic cache on the paraphrase set.

    Returns 0, or 1 when a stale result was served.

    Raises ValueError for an unknown mode or a bad data file, OSError when a file cannot be read.
    """
    settings = bench_settings(args)
    data, kb, _ = index_beir(args, settings)  # the corpus store bench retrieval and qa share
    fresh_kb = open_knowledge_base(settings, kb.name, client=kb.client)
    items = read_jsonl(Path(args.paraphrases))
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    with progress_bar("semantic cache") as bar:
        result = bench_cache(kb, fresh_kb, items, data, k=args.k, modes=modes, threshold=args.threshold,
                             on_progress=progress(bar), storage=STORAGES[args.storage])
    for row in result["modes"]:
        s = result["stale"][row["mode"]]
        bad = [p["stale"] + p["reused_from_before"] for p in (s["after_add"], s["after_delete"])]
        row["stale"] = f"{bad[0]}/{bad[1]} of {s['after_add']['asked']}"
    table = format_table(result["modes"], COLUMNS)
    result["storage"] = args.storage
    emit(args, result, f"threshold {result['threshold']}, k {result['k']}, storage {args.storage}\n{table}")
    served_stale = any(p["stale"] or p["reused_from_before"]
                       for s in result["stale"].values() for p in s.values())
    return 1 if served_stale else 0


def add_cache_parser(bsub, shared: SharedArgs) -> None:
    """Add ``cache`` to the ``bench`` subparsers ``bsub``."""
    hotpotqa = shared_data_dir() / "hotpotqa"
    p = bsub.add_parser("cache", help="semantic cache: hit rate, time saved, no stale result",
                        parents=[shared.bench_dir, shared.bench_collection, shared.json])
    where = f"(default: the shared HotpotQA's, in ${SHARED_DATA_ENV}/hotpotqa)"
    p.add_argument("--corpus", default=str(hotpotqa / "corpus.jsonl"), help=f"corpus.jsonl {where}")
    p.add_argument("--queries", default=str(hotpotqa / "queries.jsonl"),
                   help=f"queries.jsonl: the other questions, for false hits {where}")
    p.add_argument("--qrels", default=str(hotpotqa / "qrels" / "test.tsv"), help=f"qrels TSV {where}")
    p.add_argument("--paraphrases", default=str(PARAPHRASES),
                   help="JSON lines {id, question, paraphrases: [{text, kind}]} "
                        "(default: tests/data/paraphrases.jsonl)")
    p.add_argument("--modes", default="bm25,dense,hybrid", help="comma-separated (default bm25,dense,hybrid)")
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                   help=f"cosine similarity from which a question reuses (default {DEFAULT_THRESHOLD})")
    p.add_argument("--k", type=int, default=6)
    p.add_argument("--storage", choices=sorted(STORAGES), default="sqlite3",
                   help="cache storage, on a temporary SQLite file: sqlite3 (a data directory's, the "
                        "default) or sqlalchemy (the one RAG_DATABASE_URL uses)")
    p.set_defaults(func=cmd_bench_cache, limit=None)
