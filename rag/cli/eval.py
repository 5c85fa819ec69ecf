"""``python -m rag eval FILE``.

A JSONL question set through each preset against a knowledge base, with a progress bar on
stderr, then a table (or one JSON object with ``--json``); every run is saved to the history
(session ``cli``).
"""

from __future__ import annotations

import argparse
import json
import sys

from tqdm import tqdm

from rag.bench.data import format_table
from rag.cli._common import SharedArgs, option_type, settings_of, top_k_overrides
from rag.config import PRESETS
from rag.eval import load_items, run_eval
from rag.history import CLI_SESSION, RunStore
from rag.run import make_context
from rag.store.chroma import open_knowledge_base

POSITION = 45
HELP = "run a JSONL question set through each preset (answered, abstained, hits)"

EVAL_COLUMNS = [("preset", "preset"), ("questions", "questions"), ("answered", "answered"),
                ("answered_clean", "clean"), ("caveat", "caveat"), ("abstained", "abstained"),
                ("answer_hit", "answer_hit"), ("clean_precision", "clean precision"),
                ("confidently_wrong", "confidently wrong"), ("source_hit", "source_hit"),
                ("p50_ms", "p50 ms"), ("llm_calls_mean", "llm calls")]
"""``eval`` table columns: (key, header)."""


def presets_from(values: list[str] | None) -> list[str]:
    """Preset keys from repeated or comma-separated ``--preset`` values.

    ``all`` stands for every preset, and so does no value at all.

    Raises:
        ValueError: an unknown preset name.
    """
    out: list[str] = []
    for item in values or ["all"]:
        for name in (n.strip() for n in item.split(",")):
            if not name:
                continue
            if name == "all":
                out += list(PRESETS)
            elif name in PRESETS:
                out.append(name)
            else:
                raise ValueError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)} or all")
    return list(dict.fromkeys(out))


def cmd_eval(args: argparse.Namespace) -> int:
    """Run ``args.file`` through each preset of ``--preset``.

    Returns 0.

    Raises:
        ValueError: a malformed question set (names the line), an unknown preset, or an
            empty knowledge base.
        OSError: the file cannot be read or the history cannot be written.
    """
    items = load_items(args.file)
    presets = presets_from(args.preset)
    settings = settings_of(args)
    kb = open_knowledge_base(settings, args.collection, must_exist=True)
    if kb.count() == 0:
        raise ValueError(f"the knowledge base '{kb.name}' is empty; add documents first "
                         f"(python -m rag ingest FILES --collection {kb.name})")
    overrides: dict = top_k_overrides(args.top_k)
    if args.no_history:
        overrides["use_history"] = False
    with tqdm(total=len(items) * len(presets), desc="eval", unit="run", file=sys.stderr,
              mininterval=0.5, dynamic_ncols=True) as bar:
        def progress(done: int, total: int) -> None:
            bar.n = done
            bar.refresh()

        result = run_eval(items, make_context(settings, kb, checkpoints=not args.no_checkpoints), presets,
                          store=RunStore.for_settings(settings), session_id=CLI_SESSION,
                          on_progress=progress, **overrides)
    table = format_table([{"preset": p, **s} for p, s in result.presets.items()], EVAL_COLUMNS)
    for p, figures in result.presets.items():  # conversation files: first turns vs follow-ups
        if "follow_ups" in figures:
            first, follow = figures["first_turns"], figures["follow_ups"]
            table += (f"\n{p}: first turns {first['source_hits']}/{first['questions']} source hits, "
                      f"follow-ups {follow['source_hits']}/{follow['questions']}")
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        print(table, file=sys.stderr)
    else:
        print(table)
        print(f"{len(result.items)} runs saved to the history (python -m rag runs list)",
              file=sys.stderr)
    return 0


def register(commands, shared: SharedArgs) -> None:
    """Add ``eval`` to the top-level subparsers ``commands``."""
    p = commands.add_parser("eval", help=HELP,
                            parents=[shared.data_dir, shared.collection, shared.json])
    p.add_argument("file", help='JSONL: {"id", "question", "answers"?, "sources"?, "answerable"?}, '
                                'or conversations {"id", "turns": [{"question", "source"?}]}')
    p.add_argument("--preset", action="append",
                   help="naive, crag, self-rag, full or all; repeat or comma-separate (default all)")
    p.add_argument("--top-k", type=option_type("top_k"), help="chunks per query (default: the preset's)")
    p.add_argument("--no-history", action="store_true",
                   help="ask each turn of a conversation file on its own (no chat history)")
    p.add_argument("--no-checkpoints", action="store_true",
                   help="keep no graph checkpoints of these runs: they are saved whole to the history and "
                        "open as usual, but cannot be re-run from a step (each run's checkpoints take about "
                        "40 KB a step on disk)")
    p.set_defaults(func=cmd_eval)
