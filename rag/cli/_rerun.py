"""``python -m rag runs rerun RUN_ID --from NODE``: fork a saved run from one of its steps.

Apart from :mod:`rag.cli.runs` so that ``runs list`` and ``runs export`` do not import the graph and Chroma.
"""

from __future__ import annotations

import argparse
import json
import sys

from rag.cli._common import option_overrides, save_cli_run, settings_of
from rag.cli.ask import print_answer, show_step
from rag.config import Options, preset_options
from rag.history import RunStore
from rag.models import NODES
from rag.rerun import rerun_from, step_of
from rag.run import make_context
from rag.store.chroma import open_knowledge_base
from rag.terminal import printable


def cmd_runs_rerun(args: argparse.Namespace) -> int:
    """Re-run the saved run ``args.run_id`` from its step ``args.from_node`` with changed options.

    The options are the parent's (or ``--preset``'s) with the ones given changed; the child run is saved
    (session ``cli``) with ``parent_run_id`` and ``from_node``. Steps as they run on stderr, then the answer
    (or, with ``--json``, :meth:`rag.models.Run.cli_json`, which then holds ``parent_run_id`` and
    ``from_node``).

    Returns:
        0, or 2 when the run failed.

    Raises:
        ValueError: no run has that id, the node is unknown or the run never reached it, or the run
            saved no checkpoints.
    """
    if args.from_node not in NODES:
        raise ValueError(f"unknown node {args.from_node!r}; the nodes are {', '.join(NODES)}")
    settings = settings_of(args)
    parent = RunStore.for_settings(settings).get(args.run_id)
    if parent is None:
        raise ValueError(f"no run with id {args.run_id!r} (see python -m rag runs list)")
    step = step_of(parent, args.from_node, args.attempt)
    base = preset_options(args.preset) if args.preset else parent.options
    options = Options.model_validate({**base.model_dump(), **option_overrides(args)})
    kb = open_knowledge_base(settings, parent.knowledge_base, must_exist=True)
    kb.count()  # raises StoreUnavailable (one line, exit 1) before any step runs
    if not args.json:
        print(f"re-running {parent.id} from step {step} ({args.from_node}); "
              f"steps 1 to {step - 1} reused", file=sys.stderr)
    child = rerun_from(parent, step, make_context(settings, kb), options,
                       on_event=None if args.json else show_step)
    if problem := save_cli_run(settings, child):
        print(f"warning: {printable(problem)}", file=sys.stderr)
    if args.json:
        print(json.dumps(child.cli_json(), indent=2, default=str))
    else:
        print_answer(child)
        print(f"run {child.id}, re-run of {parent.id} from {args.from_node}", file=sys.stderr)
    return 2 if child.error else 0
