"""``python -m rag kb list|create|delete|show|reindex``: manage knowledge bases and see their documents.

Each knowledge base records the embedding model that built it and keeps it whatever key is configured later
(see :mod:`rag.store.kbs`). A document is ``complete`` once its completion record is stored, ``incomplete``
when an ingest was interrupted (``kill -9``, a lost Chroma server) after storing some of its chunks: it is
left out of retrieval until the same file is ingested again (see :mod:`rag.store.chroma`).

An invalid or unknown name, or an unknown model, is one ``error: ...`` line and exit code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from rag.cli._common import SharedArgs, settings_of
from rag.store import kbs
from rag.store.chroma import document_lines, make_client, open_knowledge_base

POSITION = 15
HELP = "manage knowledge bases (list, create, delete, reindex) and show their documents and status"
KEY_NOTE = "needs an OpenAI key"


def cmd_kb_list(args: argparse.Namespace) -> int:
    """Print the knowledge bases on the store, one per line: name, chunks, embedding model.

    With ``--json`` one array of objects (``name``, ``embedding``, ``base_url``, ``chunks``, ``needs_key``:
    its model needs an OpenAI key that is not set).

    Returns:
        0.
    """
    settings = settings_of(args)
    infos = kbs.list_infos(make_client(settings))
    missing = not settings.openai_api_key
    if args.json:
        print(json.dumps([{**dataclasses.asdict(i), "needs_key": i.needs_key and missing} for i in infos],
                         indent=2))
        return 0
    if not infos:
        print("no knowledge base yet", file=sys.stderr)
    for i in infos:
        note = f"  ({KEY_NOTE})" if i.needs_key and missing else ""
        print(f"{i.name}  {i.chunks} chunks  {i.embedding or 'unknown embeddings'}{note}")
    return 0


def cmd_kb_create(args: argparse.Namespace) -> int:
    """Create an empty knowledge base embedded by ``--embedding`` (default: the configured model).

    Returns:
        0 (2 with one ``error:`` line for an invalid or existing name or an unknown model).
    """
    settings = settings_of(args)
    info = kbs.create(make_client(settings), settings, args.name, args.embedding)
    if args.json:
        print(json.dumps(dataclasses.asdict(info)))
    else:
        print(f"created '{info.name}' (embeddings {info.embedding})", file=sys.stderr)
    return 0


def cmd_kb_delete(args: argparse.Namespace) -> int:
    """Delete a knowledge base and everything in it, after confirmation.

    Asks on a terminal; elsewhere (a script, a pipe) ``--yes`` is required.

    Returns:
        0 once deleted, 1 when not confirmed (2 for an invalid or unknown name).
    """
    settings = settings_of(args)
    client = make_client(settings)
    info = kbs.describe(client, args.name)
    if not args.yes:
        if not sys.stdin.isatty():
            raise ValueError(f"deleting '{info.name}' ({info.chunks} chunks) cannot be undone: "
                             "add --yes to confirm")
        answer = input(f"Delete the knowledge base '{info.name}' and its {info.chunks} chunks? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("not deleted", file=sys.stderr)
            return 1
    chunks = kbs.delete(client, info.name, settings.data_dir)
    if args.json:
        print(json.dumps({"name": info.name, "deleted_chunks": chunks}))
    else:
        print(f"deleted '{info.name}' ({chunks} chunks)", file=sys.stderr)
    return 0


def cmd_kb_show(args: argparse.Namespace) -> int:
    """Print the documents of a knowledge base, newest first.

    One line each (status, pages, chunks, OCR'd pages, file name, sha256 prefix), or with ``--json``
    one array of objects.

    Returns:
        0 when every document is complete, 1 when any is incomplete (ingest it again).
    """
    settings = settings_of(args)
    client = make_client(settings)
    name = kbs.validate_kb_name(args.name or args.collection)
    if name not in kbs.names(client):  # do not create it by looking
        print(json.dumps([]) if args.json else f"'{name}' holds no documents yet",
              file=sys.stdout if args.json else sys.stderr)
        return 0
    info = kbs.describe(client, name)
    kb = open_knowledge_base(settings, name, client=client)  # one line when its model needs a key
    docs = kb.documents()
    if args.json:
        print(json.dumps([dataclasses.asdict(d) for d in docs], indent=2))
    else:
        for line in document_lines(kb, docs):
            print(line)
        print(f"{len(docs)} document(s), {info.chunks} chunks in '{kb.name}', embeddings {info.embedding}",
              file=sys.stderr)
    return 0 if all(d.complete for d in docs) else 1


def cmd_kb_reindex(args: argparse.Namespace) -> int:
    """Re-embed a knowledge base's stored chunks with ``--embedding`` (no file is parsed again).

    Progress goes to stderr. Crash-safe: until it is done the old knowledge base serves unchanged.

    Returns:
        0 (1 when the model needs a key that is not set or the store fails, 2 for an invalid name or model).
    """
    settings = settings_of(args)
    client = make_client(settings)
    info = kbs.describe(client, args.name)
    state = {"shown": -1}

    def progress(done: int, total: int) -> None:
        """One stderr line per tenth of the chunks (and the last)."""
        step = max(1, total // 10)
        if done == total or done // step != state["shown"]:
            state["shown"] = done // step
            print(f"re-embedded {done}/{total} chunks", file=sys.stderr)

    n = kbs.reindex(client, settings, info.name, args.embedding, on_progress=progress)
    after = kbs.describe(client, info.name)
    if args.json:
        print(json.dumps({"name": after.name, "chunks": n, "from": info.embedding, "to": after.embedding}))
    else:
        print(f"re-indexed '{after.name}': {n} chunks, {info.embedding or 'unknown'} -> {after.embedding}",
              file=sys.stderr)
    return 0


def register(commands, shared: SharedArgs) -> None:
    """Add ``kb list|create|delete|show|reindex`` to the top-level subparsers ``commands``."""
    kb = commands.add_parser("kb", help=HELP)
    kb_sub = kb.add_subparsers(dest="kb_command", required=True)
    p = kb_sub.add_parser("list", help="the knowledge bases on the store, with their embedding model",
                          parents=[shared.data_dir, shared.json])
    p.set_defaults(func=cmd_kb_list)
    model_help = ("embedding model: 'hashing' (offline, no key), 'hashing/dim=N', or 'openai/<model>' "
                  "(needs OPENAI_API_KEY); default: the configured one")
    p = kb_sub.add_parser("create", help="create an empty knowledge base",
                          parents=[shared.data_dir, shared.json])
    p.add_argument("name", metavar="NAME", help="3-63 letters, digits, '.', '_' or '-'")
    p.add_argument("--embedding", metavar="MODEL", help=model_help)
    p.set_defaults(func=cmd_kb_create)
    p = kb_sub.add_parser("delete", help="delete a knowledge base and its documents",
                          parents=[shared.data_dir, shared.json])
    p.add_argument("name", metavar="NAME")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.set_defaults(func=cmd_kb_delete)
    p = kb_sub.add_parser("show", help="a knowledge base's documents, complete or incomplete",
                          parents=[shared.data_dir, shared.collection, shared.json])
    p.add_argument("name", metavar="NAME", nargs="?", help="the knowledge base (default: --collection)")
    p.set_defaults(func=cmd_kb_show)
    p = kb_sub.add_parser("reindex", help="re-embed a knowledge base from its stored chunks",
                          parents=[shared.data_dir, shared.json])
    p.add_argument("name", metavar="NAME")
    p.add_argument("--embedding", metavar="MODEL", help=model_help)
    p.set_defaults(func=cmd_kb_reindex)

