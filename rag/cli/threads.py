"""``python -m rag threads list|show ID|delete ID``.

Conversations saved in the run history. ``list`` shows the command line's threads (session
``cli``), or every session's with ``--all`` (read only); ``delete`` removes only the command
line's own threads and their checkpoints (their runs stay in the run history).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict

from rag.cli._common import SharedArgs, settings_of
from rag.history import CLI_SESSION, RunStore
from rag.history.checkpoints import open_checkpointer
from rag.terminal import printable

POSITION = 25
HELP = "list, show and delete saved conversations (threads)"


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def cmd_threads_list(args: argparse.Namespace) -> int:
    """Print the threads, most recently updated first.

    Id, time, turns, knowledge base and title (or, with ``--json``, one array). Returns 0.
    """
    rows = RunStore.for_settings(settings_of(args)).list_threads(
        None if args.all else CLI_SESSION, limit=args.limit)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
        return 0
    if not rows:
        print("no threads saved yet (start one with: python -m rag ask QUESTION --thread ID)",
              file=sys.stderr)
        return 0
    for r in rows:
        title = r.title if len(r.title) <= 60 else r.title[:59] + "…"
        print(f"{r.id}  {_when(r.updated_at)}  {r.turns:>2} turns  {r.knowledge_base:<12} {printable(title)}")
    return 0


def cmd_threads_show(args: argparse.Namespace) -> int:
    """Print a thread's turns (from its checkpoints; those from before them, from the run history).

    Each question, how it was understood, the answer and its run id (or, with ``--json``, one
    object with ``turns``, each with its runs). Returns 0.

    Raises:
        ValueError: no thread has that id.
    """
    settings = settings_of(args)
    store = RunStore.for_settings(settings)
    thread = store.get_thread(args.thread_id, checkpoints=open_checkpointer(settings))
    if thread is None:
        raise ValueError(f"no thread with id {args.thread_id!r} (see python -m rag threads list)")
    if args.json:
        print(json.dumps({**asdict(thread.summary), "turns": [
            {"turn": t.turn, "runs": [{"run_id": r.id, "question": r.question,
                                       "standalone_question": r.standalone_question or r.question,
                                       "answer": r.answer, "stop_reason": r.stop_reason,
                                       "sources": [c.source for c in r.citations]}
                                      for r in t.runs]} for t in thread.turns]}, indent=2))
        return 0
    s = thread.summary
    print(printable(f"{s.title}  ({s.turns} turns, {s.knowledge_base}, session {s.session_id}, "
                    f"updated {_when(s.updated_at)})"))
    for t in thread.turns:
        run = t.run
        print(f"\n[{t.turn}] {printable(run.question)}")
        if run.standalone_question and run.standalone_question != run.question:
            print(f"    understood as: {printable(run.standalone_question)}")
        print("    " + "\n    ".join(printable(line) for line in run.answer.splitlines()))
        extra = f" (+{len(t.runs) - 1} earlier answer(s))" if len(t.runs) > 1 else ""
        print(f"    run {run.id}{extra}")
    return 0


def cmd_threads_delete(args: argparse.Namespace) -> int:
    """Delete one of the command line's threads and its checkpoints (its runs stay in the run history).

    Returns 0.

    Raises:
        ValueError: no thread has that id.
        PermissionError (RunOwnedElsewhere): another session owns it.
    """
    settings = settings_of(args)
    if not RunStore.for_settings(settings).delete_thread(args.thread_id, CLI_SESSION,
                                                         checkpoints=open_checkpointer(settings)):
        raise ValueError(f"no thread with id {args.thread_id!r} (see python -m rag threads list)")
    print(f"deleted thread {args.thread_id}", file=sys.stderr)
    return 0


def register(commands, shared: SharedArgs) -> None:
    """Add ``threads list|show|delete`` to the top-level subparsers ``commands``."""
    threads = commands.add_parser("threads", help=HELP)
    sub = threads.add_subparsers(dest="threads_command", required=True)

    p = sub.add_parser("list", help="threads, most recently updated first",
                       parents=[shared.data_dir, shared.json])
    p.add_argument("--all", action="store_true", help="every session's threads (read only)")
    p.add_argument("--limit", type=int, default=50)
    p.set_defaults(func=cmd_threads_list)

    p = sub.add_parser("show", help="a thread's turns", parents=[shared.data_dir, shared.json])
    p.add_argument("thread_id", metavar="ID")
    p.set_defaults(func=cmd_threads_show)

    p = sub.add_parser("delete", help="delete one of the command line's threads",
                       parents=[shared.data_dir, shared.json])
    p.add_argument("thread_id", metavar="ID")
    p.set_defaults(func=cmd_threads_delete)
