"""``python -m rag kb list|show``: the knowledge bases, and the documents of one with their status.

A document is ``complete`` once its completion record is stored, ``incomplete`` when an ingest
was interrupted (``kill -9``, a lost Chroma server) after storing some of its chunks: it is left
out of retrieval until the same file is ingested again (see :mod:`rag.store.chroma`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from rag.cli._common import SharedArgs, settings_of
from rag.store.chroma import document_lines, list_knowledge_bases, make_client, open_knowledge_base

POSITION = 15
HELP = "list knowledge bases, show a knowledge base's documents and their status"


def cmd_kb_list(args: argparse.Namespace) -> int:
    """Print the knowledge bases on the store, one per line.

    Returns:
        0.
    """
    names = list_knowledge_bases(make_client(settings_of(args)))
    if args.json:
        print(json.dumps(names))
    elif not names:
        print("no knowledge base yet", file=sys.stderr)
    for name in [] if args.json else names:
        print(name)
    return 0


def cmd_kb_show(args: argparse.Namespace) -> int:
    """Print the documents of ``args.collection``, newest first, one line each.

    (status, pages, chunks, file name, sha256 prefix), or with ``--json`` one array of objects.

    Returns:
        0 when every document is complete, 1 when any is incomplete (ingest it again).
    """
    settings = settings_of(args)
    client = make_client(settings)
    if args.collection not in list_knowledge_bases(client):  # do not create it by looking
        print(json.dumps([]) if args.json else f"'{args.collection}' holds no documents yet",
              file=sys.stdout if args.json else sys.stderr)
        return 0
    kb = open_knowledge_base(settings, args.collection, client=client)
    docs = kb.documents()
    if args.json:
        print(json.dumps([dataclasses.asdict(d) for d in docs], indent=2))
    else:
        for line in document_lines(kb, docs):
            print(line)
        print(f"{len(docs)} document(s), {kb.count()} chunks in '{kb.name}'", file=sys.stderr)
    return 0 if all(d.complete for d in docs) else 1


def register(commands, shared: SharedArgs) -> None:
    """Add ``kb list`` and ``kb show`` to the top-level subparsers ``commands``."""
    kb = commands.add_parser("kb", help=HELP)
    kb_sub = kb.add_subparsers(dest="kb_command", required=True)
    p = kb_sub.add_parser("list", help="the knowledge bases on the store",
                          parents=[shared.data_dir, shared.json])
    p.set_defaults(func=cmd_kb_list)
    p = kb_sub.add_parser("show", help="a knowledge base's documents, complete or incomplete",
                          parents=[shared.data_dir, shared.collection, shared.json])
    p.set_defaults(func=cmd_kb_show)
