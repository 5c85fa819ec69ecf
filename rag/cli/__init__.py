"""Command line: ``python -m rag <command>``.

Each command is one module of this package, named after it: ``ingest``, ``ask``, ``runs``
(``list``, ``export``), ``compare`` and ``bench`` (``qa``, ``retrieval``, ``ingest``,
``scale``). Arguments several commands share (``--data-dir``, ``--collection``, ``--json``)
are declared once, in :mod:`rag.cli._common`.

Adding a command is adding its module, ``rag/cli/<command>.py``, with

- ``HELP``, a string literal: its line in ``python -m rag --help``;
- ``POSITION``, an int literal: where that line goes (ascending);
- ``register(commands, shared)``: add the command with ``commands.add_parser("<command>",
  help=HELP, parents=[shared.data_dir, ...])`` and ``set_defaults(func=...)``, a function
  ``(args) -> exit code``.

Modules whose name starts with ``_`` are helpers, not commands. Only the module of the command
being run is imported; the others are listed from ``HELP`` and ``POSITION``, read from their
source. So ``runs list`` and ``--help`` do not import Chroma, LangGraph and LangChain (seconds)
that they never use, and each command module still imports what it needs at its top.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.cli._common import shared_args
from rag.secrets import scrub
from rag.terminal import printable


@dataclass(frozen=True)
class Command:
    """A command of ``python -m rag``: its module's name, ``HELP`` and ``POSITION``."""

    name: str
    help: str
    position: int


def _literals(source: str, names: Collection[str]) -> dict:
    """The values of the top-level ``NAME = <literal>`` assignments of ``names`` in ``source``."""
    found = {}
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id in names):
            found[node.targets[0].id] = ast.literal_eval(node.value)
    return found


def commands() -> list[Command]:
    """Every command of this package, by ``POSITION`` then name, without importing any.

    Raises:
        ValueError: a command module whose ``HELP`` or ``POSITION`` is not a literal.
    """
    out = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        spec = importlib.util.find_spec(f"{__name__}.{info.name}")
        source = Path(spec.origin).read_text(encoding="utf-8") if spec and spec.origin else ""
        values = _literals(source, ("HELP", "POSITION"))
        out.append(Command(info.name, str(values.get("HELP", "")), int(values.get("POSITION", 1000))))
    return sorted(out, key=lambda c: (c.position, c.name))


def build_parser(build: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The parser of ``python -m rag``.

    Args:
        build: the commands whose module is imported and whose arguments are declared
            (default: all). The others are listed with their help only.

    Returns:
        The parser; a parsed command has ``func``, which takes the parsed arguments and
        returns the exit code.
    """
    parser = argparse.ArgumentParser(prog="python -m rag",
                                     description="Retrace: self-correcting RAG from the shell.")
    subparsers = parser.add_subparsers(dest="command", required=True)
    shared = shared_args()
    for command in commands():
        if build is None or command.name in build:
            importlib.import_module(f"{__name__}.{command.name}").register(subparsers, shared)
        else:
            subparsers.add_parser(command.name, help=command.help)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command.

    Args:
        argv: the arguments after ``python -m rag`` (default ``sys.argv[1:]``).

    Returns:
        The exit code: 0 on success, 1 when an ingest left a file out or the store cannot be
        used (the Chroma server is unreachable, another embedding model built the knowledge
        base: one ``error: ...`` line), 2 on another error (one ``error: ...`` line on
        stderr) or a run that failed. No line holds a key (:func:`rag.secrets.scrub`).

    Raises:
        SystemExit: from argparse, for ``--help`` (0) and bad arguments (2).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    named = next((a for a in argv if not a.startswith("-")), None)  # the top level has only -h
    args = build_parser(build=[named] if named else []).parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, OSError) as exc:
        print(f"error: {printable(scrub(exc))}", file=sys.stderr)
        return 2
    except Exception as exc:
        chroma = sys.modules.get("rag.store.chroma")  # never imported: not a StoreError
        if chroma is None or not isinstance(exc, chroma.StoreError):
            raise  # a bug: the traceback is wanted
        print(f"error: {printable(scrub(exc))}", file=sys.stderr)
        return 1
