"""``python -m rag ask "QUESTION"``.

Ask a question through the graph; the run is saved to the history (session ``cli``).
With ``--thread ID`` the question is a turn of the conversation ``ID`` (created when it does not
exist yet): its earlier turns are the run's history (contextualize_question).
"""

from __future__ import annotations

import argparse
import json
import sys

from rag.cli._common import SharedArgs, add_option_args, option_overrides, save_cli_run, settings_of
from rag.config import Options, preset_options
from rag.history import CLI_SESSION, RunStore
from rag.models import Run, TraceEvent
from rag.run import make_context, run_question
from rag.store.chroma import open_knowledge_base
from rag.terminal import printable

POSITION = 20
HELP = "ask a question through the graph"



def cmd_ask(args: argparse.Namespace) -> int:
    """Ask ``args.question`` through the graph.

    Steps on stderr as they run, then the answer, its sources and the path (or, with
    ``--json``, one object: :meth:`rag.models.Run.cli_json`, plus ``thread_id`` with
    ``--thread``).

    Returns:
        0, or 2 when the run failed.
    """
    settings = settings_of(args)
    kb = open_knowledge_base(settings, args.collection, must_exist=True)
    kb.count()  # raises StoreUnavailable (one line, exit 1) before any step runs
    options = _options(args)
    store = history = None
    context = make_context(settings, kb)  # OSError (checkpoints): one line, before any step runs
    if args.thread:
        store = RunStore.for_settings(settings)  # OSError: one line, before any step runs
        thread = store.create_thread(CLI_SESSION, knowledge_base=kb.name, thread_id=args.thread)
        # the earlier turns from the thread's checkpoints (those from before them: from the run history)
        history = store.thread_history(thread.id, checkpoints=context.checkpointer)

    run = run_question(args.question, context, options, history=history or (),
                       thread_id=args.thread, on_event=None if args.json else show_step)
    if store is not None:
        turn = store.add_turn(args.thread, CLI_SESSION, run)
        if not args.json:
            print(f"thread {args.thread}, turn {turn}", file=sys.stderr)
    elif problem := save_cli_run(settings, run):  # the run id printed below opens it later
        print(f"warning: {problem}", file=sys.stderr)
    if args.json:
        out = run.cli_json()
        if args.thread:
            out["thread_id"] = args.thread
        print(json.dumps(out, indent=2, default=str))
    else:
        print_answer(run)
    return 2 if run.error else 0


def show_step(event: TraceEvent) -> None:
    """Print one step as it finishes, on stderr: its number, node, summary and where it went next."""
    nxt = f" -> {event.route.to}" if event.route else ""
    print(f"  {event.step:>2}. {event.node:<20} {printable(event.summary + nxt)}", file=sys.stderr,
          flush=True)


def _options(args: argparse.Namespace) -> Options:
    """The run's Options: the preset, less the switches turned off, with ``--top-k``."""
    return preset_options(args.preset, **option_overrides(args))


def print_answer(run: Run) -> None:
    """The answer as text: what the question was understood as, the answer, its sources, the path.

    Strings from data (the answer quotes chunks; file names, web titles and URLs) have their control
    characters escaped (:func:`rag.terminal.printable`).
    """
    if run.standalone_question and run.standalone_question != run.question:
        print(f"Understood as: {printable(run.standalone_question)}\n")
    print(printable(run.answer, keep_newlines=True))
    if run.citations:
        print("\nSources:")
        for c in run.citations:
            where = c.source if c.origin == "web" else f"{c.source}, page {c.page}"
            print(f"  [{c.n}] {printable(where)}  ({printable(c.chunk_id)})")
    print(f"\n{run.stop_reason}  [{' > '.join(run.path)}]")


def register(commands, shared: SharedArgs) -> None:
    """Add ``ask`` to the top-level subparsers ``commands``."""
    p = commands.add_parser("ask", help=HELP,
                            parents=[shared.data_dir, shared.collection, shared.json])
    p.add_argument("question")
    p.add_argument("--thread", metavar="ID",
                   help="ask as the next turn of conversation ID (created if new; see 'threads list')")
    add_option_args(p)
    p.set_defaults(func=cmd_ask)
