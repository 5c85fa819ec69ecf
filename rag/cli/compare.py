"""``python -m rag compare "QUESTION"``.

One question under 2 to 4 pipelines at once, saved to
the history (session ``cli``).
"""

from __future__ import annotations

import argparse
import json
import sys

from rag.cli._common import SharedArgs, option_type, save_cli_comparison, settings_of, top_k_overrides
from rag.config import parse_pipelines
from rag.models import Comparison
from rag.run import make_context, run_comparison
from rag.store.chroma import open_knowledge_base
from rag.terminal import printable
from rag.trace.pricing import format_cost, load_prices, run_cost
from rag.trace.story import grounded_verdict, useful_verdict

POSITION = 40
HELP = "run one question under 2 to 4 pipelines at once"


def _print_json(cmp: Comparison, prices) -> None:
    print(json.dumps({
        "comparison_id": cmp.id, "question": cmp.question,
        "pipelines": [{"label": label, **run.cli_json(),
                       "prompt_tokens": run.prompt_tokens,
                       "completion_tokens": run.completion_tokens,
                       "cost_usd": run_cost(run, prices),
                       "grounded": grounded_verdict(run), "useful": useful_verdict(run)}
                      for label, run in zip(cmp.labels, cmp.runs, strict=True)]}, indent=2, default=str))


def _print_text(cmp: Comparison, prices) -> None:
    for label, run in zip(cmp.labels, cmp.runs, strict=True):
        tokens = run.prompt_tokens + run.completion_tokens
        print(f"== {label}  (run {run.id})")
        print(f"   {run.stop_reason}")
        print(f"   path: {' > '.join(run.path)}")
        print(f"   {run.llm_calls} LLM calls · {tokens} tokens · "
              f"{format_cost(run_cost(run, prices))} · {run.duration_ms:.0f} ms · "
              f"{grounded_verdict(run)} · {useful_verdict(run)}")
        answer = printable(" ".join(run.answer.split()))
        print(f"   {answer[:300]}{'…' if len(answer) > 300 else ''}")
        for c in run.citations:
            where = c.source if c.origin == "web" else f"{c.source}, page {c.page}"
            print(f"     [{c.n}] {printable(where)}")
        print()
    print(f"comparison {cmp.id}: python -m rag runs export {cmp.id} --format html "
          f"--out comparison.html", file=sys.stderr)


def cmd_compare(args: argparse.Namespace) -> int:
    """Run ``args.question`` under each pipeline and print the runs side by side.

    Per pipeline: the stop reason, the
    path, LLM calls, tokens, cost, latency, the verdicts and the answer with its sources (or,
    with ``--json``, ``comparison_id`` and one object per pipeline).

    Returns:
        0, or 2 when any run failed.

    Raises:
        ValueError: an unknown preset or switch, or not 2 to 4 pipelines.
    """
    numbers = top_k_overrides(args.top_k)
    if args.max_rewrites is not None:
        numbers["max_rewrites"] = args.max_rewrites
    pipelines = parse_pipelines(args.presets, args.custom or (), **numbers)
    prices = load_prices()
    settings = settings_of(args)
    kb = open_knowledge_base(settings, args.collection, must_exist=True)
    kb.count()  # raises StoreUnavailable (one line, exit 1) before any pipeline runs
    cmp = run_comparison(args.question, make_context(settings, kb), pipelines)
    note = save_cli_comparison(settings, cmp)
    if args.json:
        _print_json(cmp, prices)
    else:
        _print_text(cmp, prices)
    if note:
        print(f"warning: {note}", file=sys.stderr)
    return 2 if any(r.error for r in cmp.runs) else 0


def register(commands, shared: SharedArgs) -> None:
    """Add ``compare`` to the top-level subparsers ``commands``."""
    p = commands.add_parser("compare", help=HELP,
                            parents=[shared.data_dir, shared.collection, shared.json])
    p.add_argument("question")
    p.add_argument("--presets", default="naive,crag,full",
                   help="comma-separated: naive, crag, self-rag, full (default naive,crag,full)")
    p.add_argument("--custom", action="append", metavar="SWITCHES",
                   help="a custom pipeline: the switches that are on, joined by '+' "
                        "(grading+rewriting+web_fallback+grounding_check+answer_check), "
                        "or 'none'; repeatable")
    p.add_argument("--top-k", type=option_type("top_k"), help="chunks per query (default: the preset's, 6)")
    p.add_argument("--max-rewrites", type=option_type("max_rewrites"),
                   help="rewrite budget per run (default 2)")
    p.set_defaults(func=cmd_compare)
