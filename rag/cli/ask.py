"""``python -m rag ingest PATH...`` and ``python -m rag ask "QUESTION"``.

Index files, and ask a question through the graph (saved to the history, session ``cli``).
"""

from __future__ import annotations

import argparse
import json
import sys

from rag.cli.common import SharedArgs, open_kb, save_cli_run, settings_of
from rag.config import PRESETS, preset_options
from rag.ingest.pipeline import ChunkSettings, ingest_files
from rag.models import TraceEvent
from rag.run import make_context, run_question

POSITION = 10

_MARKS = {"ingested": "ok  ", "already indexed": "same", "failed": "FAIL"}
_SWITCHES = (("no_grading", "grading"), ("no_rewrite", "rewriting"), ("no_web", "web_fallback"),
             ("no_grounding", "grounding_check"), ("no_answer_check", "answer_check"),
             ("no_decomposition", "decomposition"))
"""``--no-X`` flag (as an args attribute) -> the Options toggle it turns off."""


def cmd_ingest(args: argparse.Namespace) -> int:
    """Ingest ``args.paths``: one line per file on stdout, a total on stderr.

    Returns:
        0 when every file was ingested or already indexed, 1 when any failed (the good files
        are kept).
    """
    settings = settings_of(args)
    kb = open_kb(args, settings)
    reports = ingest_files(kb, args.paths, password=args.password,
                           chunking=ChunkSettings(args.chunk_size, args.chunk_overlap),
                           max_bytes=settings.max_upload_bytes)
    for r in reports:
        print(f"{_MARKS[r.status]} {r.line()}", flush=True)
    failed = sum(1 for r in reports if not r.ok)
    print(f"{len(reports) - failed} of {len(reports)} files indexed in '{kb.name}' "
          f"({kb.count()} chunks in total)", file=sys.stderr)
    return 1 if failed else 0


def cmd_ask(args: argparse.Namespace) -> int:
    """Ask ``args.question`` through the graph.

    Steps on stderr as they run, then the answer, its sources and the
    path (or, with ``--json``, one object: :meth:`rag.models.Run.cli_json`).

    Returns:
        0, or 2 when the run failed.
    """
    settings = settings_of(args)
    kb = open_kb(args, settings)
    overrides: dict = {key: False for flag, key in _SWITCHES if getattr(args, flag)}
    if args.top_k:
        overrides["top_k"] = args.top_k
    options = preset_options(args.preset, **overrides)

    def show(event: TraceEvent) -> None:
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


def register(commands, shared: SharedArgs) -> None:
    """Add ``ingest`` and ``ask`` to the top-level subparsers ``commands``."""
    p = commands.add_parser("ingest", help="index PDF, .txt and .md files",
                            parents=[shared.data_dir, shared.collection])
    p.add_argument("paths", nargs="+")
    p.add_argument("--password", help="password for encrypted PDFs")
    p.add_argument("--chunk-size", type=int, default=1000, help="characters (default 1000)")
    p.add_argument("--chunk-overlap", type=int, default=150, help="characters (default 150)")
    p.set_defaults(func=cmd_ingest)

    p = commands.add_parser("ask", help="ask a question through the graph",
                            parents=[shared.data_dir, shared.collection, shared.json])
    p.add_argument("question")
    p.add_argument("--preset", choices=list(PRESETS), default="full")
    p.add_argument("--top-k", type=int)
    for flag in ("grading", "rewrite", "web", "grounding", "answer-check", "decomposition"):
        p.add_argument(f"--no-{flag}", action="store_true")
    p.set_defaults(func=cmd_ask)
