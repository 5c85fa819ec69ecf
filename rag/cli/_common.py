"""What the commands of ``python -m rag`` share.

The arguments several commands declare (as argparse
parent parsers, built once per parser), the settings they name, and where a run made on the
command line is saved (session ``cli``). Light on purpose: every command imports it, and
``runs list`` needs neither Chroma nor the graph.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass

from rag.config import DEFAULT_COLLECTION, PRESETS, Options, Settings
from rag.history import CLI_SESSION, RunStore
from rag.models import Comparison, Run
from rag.secrets import scrub


@dataclass(frozen=True)
class SharedArgs:
    """Parent parsers for the arguments several commands share.

    Pass the ones a command takes
    as ``parents=[...]`` to ``add_parser``.

    Attributes:
        data_dir: ``--data-dir D``, the data directory (``args.data_dir``, None for the default).
        collection: ``--collection C``, the knowledge base (default ``default``).
        json: ``--json``, print JSON on stdout instead of text.
        bench_dir: ``--data-dir D`` of the benchmarks, where their stores live.
        bench_collection: ``--collection C`` of the benchmarks (None: derived from the data).
    """

    data_dir: argparse.ArgumentParser
    collection: argparse.ArgumentParser
    json: argparse.ArgumentParser
    bench_dir: argparse.ArgumentParser
    bench_collection: argparse.ArgumentParser


def _parent(*args: str, **kwargs) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument(*args, **kwargs)
    return parser


def shared_args() -> SharedArgs:
    """Build the shared arguments' parent parsers (fresh ones each call)."""
    return SharedArgs(
        data_dir=_parent("--data-dir", metavar="D",
                         help="data directory (default: $RAG_DATA_DIR or ./data)"),
        collection=_parent("--collection", metavar="C", default=DEFAULT_COLLECTION,
                           help=f"knowledge base name (default: {DEFAULT_COLLECTION})"),
        json=_parent("--json", action="store_true",
                     help="print JSON on stdout instead of text"),
        bench_dir=_parent("--data-dir", metavar="D",
                          help="where benchmark stores live "
                               "(default: $RAG_DATA_DIR/bench, i.e. ./data/bench)"),
        bench_collection=_parent("--collection", metavar="C",
                                 help="knowledge base name (default: derived from the data)"),
    )


def bounded(kind: type[int] | type[float], *, ge: float | None = None, gt: float | None = None,
            le: float | None = None) -> Callable[[str], float]:
    """An argparse ``type=`` that reads an ``int`` or ``float`` within bounds.

    Anything else is argparse's one ``error: argument --X: must be ...`` line naming the allowed range,
    and exit code 2.
    """
    parts = [f"{ge:g} or more" if ge is not None else "", f"above {gt:g}" if gt is not None else "",
             f"at most {le:g}" if le is not None else ""]
    if ge is not None and le is not None:
        parts = [f"from {ge:g} to {le:g}"]
    allowed = f"{'an integer' if kind is int else 'a number'} {' and '.join(p for p in parts if p)}".strip()

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}") from None
        if (not math.isfinite(value) or (ge is not None and not value >= ge)
                or (gt is not None and not value > gt) or (le is not None and not value <= le)):
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in some messages
    return parse


def option_type(field: str) -> Callable[[str], float]:
    """An argparse ``type=`` for the run option ``field`` of :class:`rag.config.Options`, within its bounds.

    The bounds are read from the model (``Field(ge=..., gt=..., le=...)``), so they are defined once.
    """
    info = Options.model_fields[field]
    bounds: dict[str, float] = {}
    for rule in info.metadata:
        for key in ("ge", "gt", "le"):
            if getattr(rule, key, None) is not None:
                bounds[key] = getattr(rule, key)
    return bounded(int if info.annotation is int else float, **bounds)


def top_k_overrides(top_k: int | None) -> dict:
    """The Options overrides of ``--top-k``: none when not given.

    ``min_relevant`` comes down with it when it would exceed ``top_k`` (``--top-k 1`` is a valid run).
    """
    if top_k is None:
        return {}
    return {"top_k": top_k, "min_relevant": min(top_k, Options.model_fields["min_relevant"].default)}


_SWITCHES = (("no_grading", "grading"), ("no_rewrite", "rewriting"), ("no_web", "web_fallback"),
             ("no_grounding", "grounding_check"), ("no_answer_check", "answer_check"),
             ("no_decomposition", "decomposition"), ("no_routing", "routing"))
"""``--no-X`` flag (as an args attribute) -> the Options toggle it turns off."""


def option_overrides(args: argparse.Namespace) -> dict:
    """The Options the arguments of :func:`add_option_args` change.

    The switches turned off, ``--top-k``, ``--deadline``, and ``--retrieval`` where the command has it.
    """
    overrides: dict = {key: False for flag, key in _SWITCHES if getattr(args, flag)}
    overrides.update(top_k_overrides(args.top_k))
    if args.no_history:
        overrides["use_history"] = False
    if args.deadline is not None:
        overrides["deadline_s"] = args.deadline
    if getattr(args, "retrieval", None):
        overrides["retrieval"] = args.retrieval
    return overrides


def add_option_args(p: argparse.ArgumentParser, *, preset_default: str | None = "full") -> None:
    """Add the run options of ``ask`` to ``p``: ``--preset``, ``--top-k``, ``--no-X``, ``--deadline``."""
    p.add_argument("--preset", choices=list(PRESETS), default=preset_default)
    p.add_argument("--top-k", type=option_type("top_k"), help="chunks per query (default: the preset's, 6)")
    p.add_argument("--no-history", action="store_true",
                   help="do not use the thread's earlier turns (no contextualize_question)")
    for flag in ("grading", "rewrite", "web", "grounding", "answer-check", "decomposition", "routing"):
        p.add_argument(f"--no-{flag}", action="store_true")
    p.add_argument("--deadline", type=option_type("deadline_s"), metavar="S",
                   help="time budget of the run in seconds (default: RAG_RUN_DEADLINE_S, 60)")


def settings_of(args: argparse.Namespace) -> Settings:
    """Settings from the environment, with ``--data-dir`` when given."""
    return Settings.from_env(data_dir=args.data_dir)


def save_cli_run(settings: Settings, run: Run) -> str | None:
    """Save a run made on the command line to the history (session ``cli``).

    Returns:
        None, or why it could not be saved (the answer is printed all the same).
    """
    return _save(settings, "run", lambda store: store.save(run, CLI_SESSION))


def save_cli_comparison(settings: Settings, cmp: Comparison) -> str | None:
    """Save a comparison made on the command line to the history (session ``cli``).

    Returns:
        None, or why it could not be saved (the runs are printed all the same).
    """
    return _save(settings, "comparison", lambda store: store.save_comparison(cmp, CLI_SESSION))


def _save(settings: Settings, what: str, save: Callable[[RunStore], object]) -> str | None:
    """Run ``save`` on the history; None, or why ``what`` could not be saved (secrets scrubbed)."""
    try:
        save(RunStore.for_settings(settings))
    except Exception as exc:
        return scrub(f"the {what} could not be saved to the history: {type(exc).__name__}: {exc}",
                     settings)
    return None

