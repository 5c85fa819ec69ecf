"""Command line: ``python -m rag ingest PATH...``, ``python -m rag ask "QUESTION"``,
``python -m rag compare "QUESTION"``, ``python -m rag runs list|export`` and
``python -m rag bench qa|retrieval|ingest|scale``."""

from __future__ import annotations

import argparse
import json
import sys

from rag.config import DEFAULT_COLLECTION, PRESETS, Settings, preset_options


def _settings(args) -> Settings:
    return Settings.from_env(data_dir=args.data_dir)


def _kb(args, settings: Settings):
    from rag.store import open_knowledge_base

    return open_knowledge_base(settings, args.collection)


def _page_progress(stream):
    """Per-page progress on ``stream``: a line per page read by OCR (seconds each), and on a
    terminal a counter that rewrites itself for the other pages."""
    tty = stream.isatty()
    back = "\r" if tty else ""

    def show(name: str, done: int, total: int, ocr: bool) -> None:
        if ocr:
            print(f"{back}  {name}: page {done}/{total} read by OCR",
                  file=stream, flush=True)
        elif tty:
            print(f"\r  {name}: page {done}/{total}", end="", file=stream, flush=True)
            if done == total:
                print("\r\033[K", end="", file=stream, flush=True)

    return show


def cmd_ingest(args) -> int:
    from rag.ingest.pipeline import ChunkSettings, ingest_files

    settings = _settings(args)
    kb = _kb(args, settings)
    reports = ingest_files(kb, args.paths, password=args.password,
                           chunking=ChunkSettings(args.chunk_size, args.chunk_overlap),
                           max_bytes=settings.max_upload_bytes, ocr=not args.no_ocr,
                           on_page=_page_progress(sys.stderr))
    for r in reports:
        mark = {"ingested": "ok  ", "already indexed": "same", "failed": "FAIL"}[r.status]
        print(f"{mark} {r.line()}", flush=True)
    failed = sum(1 for r in reports if not r.ok)
    print(f"{len(reports) - failed} of {len(reports)} files indexed in '{kb.name}' "
          f"({kb.count()} chunks in total)", file=sys.stderr)
    return 1 if failed else 0


def cmd_ask(args) -> int:
    from rag.cli_history import save_cli_run
    from rag.runner import make_context, run_question

    settings = _settings(args)
    kb = _kb(args, settings)
    overrides = {}
    for flag, key in (("no_grading", "grading"), ("no_rewrite", "rewriting"),
                      ("no_web", "web_fallback"), ("no_grounding", "grounding_check"),
                      ("no_answer_check", "answer_check"), ("no_decomposition", "decomposition")):
        if getattr(args, flag):
            overrides[key] = False
    if args.top_k:
        overrides["top_k"] = args.top_k
    options = preset_options(args.preset, **overrides)

    def show(event) -> None:
        if not args.json:
            nxt = f" -> {event.route['to']}" if event.route else ""
            print(f"  {event.step:>2}. {event.node:<20} {event.summary}{nxt}", file=sys.stderr,
                  flush=True)

    run = run_question(args.question, make_context(settings, kb), options, on_event=show)
    if problem := save_cli_run(settings, run):  # the run id printed below opens it later
        print(f"warning: {problem}", file=sys.stderr)
    if args.json:
        print(json.dumps(run.cli_json(), indent=2, default=str))
    else:
        print(run.answer)
        if run.citations:
            print("\nSources:")
            for c in run.citations:
                where = c.source if c.origin == "web" else f"{c.source}, page {c.page}"
                print(f"  [{c.n}] {where}  ({c.chunk_id})")
        print(f"\n{run.stop_reason}  [{' > '.join(run.path)}]")
    return 2 if run.error else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rag",
                                     description="Retrace: self-correcting RAG from the shell.")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("--data-dir", help="data directory (default: $RAG_DATA_DIR or ./data)")
        p.add_argument("--collection", default=DEFAULT_COLLECTION, help="knowledge base name")

    p = sub.add_parser("ingest", help="index PDF, Word (.docx), HTML, .txt and .md files")
    p.add_argument("paths", nargs="+")
    common(p)
    p.add_argument("--password", help="password for encrypted PDFs")
    p.add_argument("--no-ocr", action="store_true",
                   help="do not read scanned pages by OCR (on by default; seconds per page)")
    p.add_argument("--chunk-size", type=int, default=1000, help="characters (default 1000)")
    p.add_argument("--chunk-overlap", type=int, default=150, help="characters (default 150)")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("ask", help="ask a question through the graph")
    p.add_argument("question")
    common(p)
    p.add_argument("--preset", choices=list(PRESETS), default="full")
    p.add_argument("--top-k", type=int)
    for flag in ("grading", "rewrite", "web", "grounding", "answer-check", "decomposition"):
        p.add_argument(f"--no-{flag}", action="store_true")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_ask)

    from rag.cli_history import add_commands

    add_commands(sub, common)  # runs list, runs export, compare

    from rag.bench_cli import add_bench_commands

    add_bench_commands(sub)  # bench qa | retrieval | ingest | scale
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
