"""``python -m rag runs list|export|rerun|import-local``.

The saved run history (runs made here belong to the
session ``cli``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rag.cli._common import SharedArgs, add_option_args, bounded, settings_of
from rag.history import RunStore
from rag.history.local_import import import_local
from rag.terminal import printable
from rag.trace.export import comparison_html, comparison_json, run_html, run_json
from rag.trace.pricing import load_prices
from rag.trace.story import STOP_KINDS

POSITION = 30
HELP = "list and export saved runs"


def cmd_runs_list(args: argparse.Namespace) -> int:
    """Print the saved runs, newest first.

    Id, local time, preset, ending, steps and question, and for a re-run the run and node it forked from
    (or, with ``--json``, one array of history rows, each with ``thread_id``, and ``parent_run_id`` and
    ``from_node``, null unless it is a re-run), all read from the summary rows. Returns 0.
    """
    store = RunStore.for_settings(settings_of(args))
    rows = store.list(args.session, query=args.query, limit=args.limit)
    if args.json:
        print(json.dumps([r.to_dict() for r in rows], indent=2))
        return 0
    if not rows:
        print("no runs saved yet", file=sys.stderr)
        return 0
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.created_at))
        question = r.question if len(r.question) <= 70 else r.question[:69] + "…"
        print(f"{r.id}  {when}  {r.preset:<8} {STOP_KINDS.get(r.stop_kind, r.stop_kind):<21} "
              f"{r.steps:>2} steps  {printable(question)}"
              + (f"  (re-run of {r.parent_run_id} from {r.from_node})" if r.parent_run_id else ""))
    return 0


def cmd_runs_export(args: argparse.Namespace) -> int:
    """Write the run, or the comparison, ``args.run_id`` to ``args.out``.

    As JSON or as the self-contained HTML report; keys are masked out. Returns 0.

    Raises:
        ValueError: no run or comparison has that id.
        OSError: the file cannot be written.
    """
    settings = settings_of(args)
    store = RunStore.for_settings(settings)
    prices = load_prices()
    secrets = [settings.openai_api_key, settings.tavily_api_key]
    run = store.get(args.run_id)
    if run is not None:
        text = (run_html(run, prices=prices, secrets=secrets) if args.format == "html"
                else run_json(run, prices=prices, secrets=secrets))
    else:
        cmp = store.get_comparison(args.run_id)
        if cmp is None:
            raise ValueError(f"no run or comparison with id {args.run_id!r} "
                             "(see python -m rag runs list)")
        text = (comparison_html(cmp, prices=prices, secrets=secrets) if args.format == "html"
                else comparison_json(cmp, prices=prices, secrets=secrets))
    out = Path(args.out)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
    return 0


def cmd_runs_import_local(args: argparse.Namespace) -> int:
    """Copy the data directory's ``runs.sqlite`` into the database ``RAG_DATABASE_URL`` names.

    Runs, feedback, comparisons and conversations, ids kept, and the checkpoints of ``checkpoints.sqlite``
    (where the conversations' turns and the runs' traces are); rows and checkpoints already there are
    skipped, so doing it again copies nothing (:func:`rag.history.local_import.import_local`). Prints the
    counts (one line, no password; or with ``--json`` one object). Returns 0.

    Raises:
        ValueError: RAG_DATABASE_URL is not set (the history is that very file).
        OSError: the file cannot be read or the database cannot be written (what was copied stays).
    """
    settings = settings_of(args)
    if not settings.database_url:
        raise ValueError("RAG_DATABASE_URL is not set: the run history is already "
                         f"{Path(settings.data_dir) / 'runs.sqlite'}; set it to the shared database first")
    counts = import_local(settings.data_dir, settings.database_url)
    if args.json:
        print(json.dumps(counts.to_dict(), indent=2))
    elif not Path(counts.source).is_file():
        print(f"nothing to import: there is no {counts.source}", file=sys.stderr)
    else:
        print(counts.line())
    return 0


def cmd_runs_rerun(args: argparse.Namespace) -> int:
    """``runs rerun``: :func:`rag.cli._rerun.cmd_runs_rerun` (imported here: ``runs list`` stays light)."""
    from rag.cli._rerun import cmd_runs_rerun as rerun

    return rerun(args)


def register(commands, shared: SharedArgs) -> None:
    """Add ``runs list``, ``export``, ``rerun`` and ``import-local`` to the top-level subparsers."""
    runs = commands.add_parser("runs", help=HELP)
    runs_sub = runs.add_subparsers(dest="runs_command", required=True)

    p = runs_sub.add_parser("list", help="saved runs, newest first",
                            parents=[shared.data_dir, shared.json])
    p.add_argument("--session", help="only the runs of this session id (the CLI's is 'cli')")
    p.add_argument("--query", help="only runs whose question contains this")
    p.add_argument("--limit", type=int, default=50)
    p.set_defaults(func=cmd_runs_list)

    p = runs_sub.add_parser("export", help="write a run or a comparison as JSON or HTML",
                            parents=[shared.data_dir])
    p.add_argument("run_id", metavar="RUN_ID", help="a run id, or a comparison id")
    p.add_argument("--format", choices=["json", "html"], default="html")
    p.add_argument("--out", required=True, help="the file to write")
    p.set_defaults(func=cmd_runs_export)

    p = runs_sub.add_parser("rerun", help="re-run a saved run from one of its steps, with changed options",
                            parents=[shared.data_dir, shared.json])
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--from", dest="from_node", metavar="NODE", required=True,
                   help="the step to re-run from (a node name: retrieve, grade_documents, generate, ...); "
                        "the steps before it are reused")
    p.add_argument("--attempt", type=bounded(int, ge=1), default=1,
                   help="which visit to NODE, when the run made several (default: the first)")
    add_option_args(p, preset_default=None)
    p.add_argument("--retrieval", choices=["dense", "bm25", "hybrid"], help="retrieval mode")
    p.set_defaults(func=cmd_runs_rerun)

    p = runs_sub.add_parser("import-local",
                            help="copy the data directory's runs.sqlite (runs, conversations, feedback, "
                                 "comparisons) and checkpoints.sqlite into the database RAG_DATABASE_URL "
                                 "names",
                            parents=[shared.data_dir, shared.json])
    p.set_defaults(func=cmd_runs_import_local)
