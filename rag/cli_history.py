"""Command line for run history and comparisons: ``python -m rag runs list|export`` and
``python -m rag compare``. Runs made here belong to the session ``cli``."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from rag.config import Settings
from rag.history import CLI_SESSION, RunStore
from rag.secrets import scrub


def _store(args) -> RunStore:
    return RunStore.for_settings(Settings.from_env(data_dir=args.data_dir))


def save_cli_run(settings: Settings, run) -> str | None:
    """Save a run made by ``python -m rag ask`` to the history (session ``cli``). Returns None,
    or why it could not be saved (the answer is printed all the same)."""
    try:
        RunStore.for_settings(settings).save(run, CLI_SESSION)
    except Exception as exc:
        return scrub(f"the run could not be saved to the history: {type(exc).__name__}: {exc}",
                     settings)
    return None


def cmd_runs_list(args) -> int:
    from rag.trace.story import STOP_KINDS

    rows = _store(args).list(args.session, query=args.query, limit=args.limit)
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
              f"{r.steps:>2} steps  {question}")
    return 0


def cmd_runs_export(args) -> int:
    from rag.trace.export import comparison_html, comparison_json, run_html, run_json
    from rag.trace.pricing import load_prices

    settings = Settings.from_env(data_dir=args.data_dir)
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


def cmd_compare(args) -> int:
    from rag.config import parse_pipelines
    from rag.run import make_context, run_comparison
    from rag.store.chroma import open_knowledge_base
    from rag.trace.pricing import format_cost, load_prices, run_cost
    from rag.trace.story import grounded_verdict, useful_verdict

    numbers = {k: v for k, v in (("top_k", args.top_k), ("max_rewrites", args.max_rewrites))
               if v is not None}
    pipelines = parse_pipelines(args.presets, args.custom or (), **numbers)
    prices = load_prices()
    settings = Settings.from_env(data_dir=args.data_dir)
    kb = open_knowledge_base(settings, args.collection)
    cmp = run_comparison(args.question, make_context(settings, kb), pipelines)
    note = None
    try:
        RunStore.for_settings(settings).save_comparison(cmp, CLI_SESSION)
    except Exception as exc:
        note = scrub(f"the comparison could not be saved to the history: "
                     f"{type(exc).__name__}: {exc}", settings)
    if args.json:
        print(json.dumps({
            "comparison_id": cmp.id, "question": cmp.question,
            "pipelines": [{"label": label, **run.cli_json(),
                           "prompt_tokens": run.prompt_tokens,
                           "completion_tokens": run.completion_tokens,
                           "cost_usd": run_cost(run, prices),
                           "grounded": grounded_verdict(run), "useful": useful_verdict(run)}
                          for label, run in zip(cmp.labels, cmp.runs)]}, indent=2, default=str))
    else:
        for label, run in zip(cmp.labels, cmp.runs):
            tokens = run.prompt_tokens + run.completion_tokens
            print(f"== {label}  (run {run.id})")
            print(f"   {run.stop_reason}")
            print(f"   path: {' > '.join(run.path)}")
            print(f"   {run.llm_calls} LLM calls · {tokens} tokens · "
                  f"{format_cost(run_cost(run, prices))} · {run.duration_ms:.0f} ms · "
                  f"{grounded_verdict(run)} · {useful_verdict(run)}")
            answer = " ".join(run.answer.split())
            print(f"   {answer[:300]}{'…' if len(answer) > 300 else ''}")
            for c in run.citations:
                where = c.source if c.origin == "web" else f"{c.source}, page {c.page}"
                print(f"     [{c.n}] {where}")
            print()
        print(f"comparison {cmp.id}: python -m rag runs export {cmp.id} --format html "
              f"--out comparison.html", file=sys.stderr)
    if note:
        print(f"warning: {note}", file=sys.stderr)
    return 2 if any(r.error for r in cmp.runs) else 0


def add_commands(sub, common) -> None:
    """Add ``runs list``, ``runs export`` and ``compare`` to the CLI's subparsers; ``common``
    adds --data-dir and --collection to a parser."""
    runs = sub.add_parser("runs", help="list and export saved runs")
    runs_sub = runs.add_subparsers(dest="runs_command", required=True)

    p = runs_sub.add_parser("list", help="saved runs, newest first")
    p.add_argument("--data-dir", help="data directory (default: $RAG_DATA_DIR or ./data)")
    p.add_argument("--session", help="only the runs of this session id (the CLI's is 'cli')")
    p.add_argument("--query", help="only runs whose question contains this")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--json", action="store_true", help="print one JSON array")
    p.set_defaults(func=cmd_runs_list)

    p = runs_sub.add_parser("export", help="write a run or a comparison as JSON or HTML")
    p.add_argument("run_id", metavar="RUN_ID", help="a run id, or a comparison id")
    p.add_argument("--data-dir", help="data directory (default: $RAG_DATA_DIR or ./data)")
    p.add_argument("--format", choices=["json", "html"], default="html")
    p.add_argument("--out", required=True, help="the file to write")
    p.set_defaults(func=cmd_runs_export)

    p = sub.add_parser("compare", help="run one question under 2 to 4 pipelines at once")
    p.add_argument("question")
    common(p)
    p.add_argument("--presets", default="naive,crag,full",
                   help="comma-separated: naive, crag, self-rag, full (default naive,crag,full)")
    p.add_argument("--custom", action="append", metavar="SWITCHES",
                   help="a custom pipeline: the switches that are on, joined by '+' "
                        "(grading+rewriting+web_fallback+grounding_check+answer_check), "
                        "or 'none'; repeatable")
    p.add_argument("--top-k", type=int)
    p.add_argument("--max-rewrites", type=int)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_compare)
