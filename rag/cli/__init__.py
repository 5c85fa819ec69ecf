"""Command line: ``python -m rag <command>``.

Commands: ``ingest`` and ``ask`` (:mod:`rag.cli.ask`), ``runs list|export``
(:mod:`rag.cli.runs`), ``compare`` (:mod:`rag.cli.compare`) and ``bench
qa|retrieval|ingest|scale`` (:mod:`rag.cli.bench`). Arguments several commands share
(``--data-dir``, ``--collection``, ``--json``) are declared once, in :mod:`rag.cli.common`.

Adding a command is a one-module change: write ``rag/cli/<name>.py`` with

- ``POSITION``, an int: where its commands appear in ``--help`` (ascending);
- ``register(commands, shared)``: add its parsers with ``commands.add_parser(...)``, taking the
  shared arguments it wants as ``parents=[shared.data_dir, ...]``, and
  ``set_defaults(func=...)`` a function ``(args) -> exit code``.

Every module of this package that has a ``register`` is found and registered. A command's
``ValueError`` or ``OSError`` becomes one ``error: ...`` line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from types import ModuleType

from rag.cli.common import SharedArgs, shared_args


def command_modules() -> list[ModuleType]:
    """The modules of this package that add commands (they have ``register``), by ``POSITION``."""
    modules = [importlib.import_module(f"{__name__}.{info.name}")
               for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")]
    found = [m for m in modules if hasattr(m, "register")]
    return sorted(found, key=lambda m: (getattr(m, "POSITION", 1000), m.__name__))


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m rag``, with every command of :func:`command_modules`."""
    parser = argparse.ArgumentParser(prog="python -m rag",
                                     description="Retrace: self-correcting RAG from the shell.")
    commands = parser.add_subparsers(dest="command", required=True)
    shared: SharedArgs = shared_args()
    for module in command_modules():
        module.register(commands, shared)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command.

    Args:
        argv: the arguments after ``python -m rag`` (default ``sys.argv[1:]``).

    Returns:
        The exit code: 0 on success, 1 when an ingest left a file out, 2 on an error (one
        ``error: ...`` line on stderr) or a run that failed.

    Raises:
        SystemExit: from argparse, for ``--help`` (0) and bad arguments (2).
    """
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
