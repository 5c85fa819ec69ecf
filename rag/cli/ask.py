"""``python -m rag ask "QUESTION"``.

Ask a question through the graph; the run is saved to the history (session ``cli``).
"""

from __future__ import annotations

import argparse
import json
import sys

from rag.cli._common import SharedArgs, save_cli_run, settings_of
from rag.config import PRESETS, preset_options
from rag.models import TraceEvent
from rag.run import make_context, run_question
from rag.store.chroma import open_knowledge_base

POSITION = 20
HELP = "ask a question through the graph"

_SWITCHES = (("no_grading", "grading"), ("no_rewrite", "rewriting"), ("no_web", "web_fallback"),
             ("no_grounding", "grounding_check"), ("no_answer_check", "answer_check"),
             ("no_decomposition", "decomposition"))
"""``--no-X`` flag (as an args attribute) -> the Options toggle it turns off."""


def cmd_ask(args: argparse.Namespace) -> int:
    """Ask ``args.question`` through the graph.

    Steps on stderr as they run, then the answer, its sources and the path (or, with
    ``--json``, one object: :meth:`rag.models.Run.cli_json`).

    Returns:
        0, or 2 when the run failed.
    """
    settings = settings_of(args)
    kb = open_knowledge_base(settings, args.collection)
    kb.count()  # raises StoreUnavailable (one line, exit 1) before any step runs
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
    """Add ``ask`` to the top-level subparsers ``commands``."""
    p = commands.add_parser("ask", help=HELP,
                            parents=[shared.data_dir, shared.collection, shared.json])
    p.add_argument("question")
    p.add_argument("--preset", choices=list(PRESETS), default="full")
    p.add_argument("--top-k", type=int)
    for flag in ("grading", "rewrite", "web", "grounding", "answer-check", "decomposition"):
        p.add_argument(f"--no-{flag}", action="store_true")
    p.set_defaults(func=cmd_ask)
