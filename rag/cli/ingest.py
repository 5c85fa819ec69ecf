"""``python -m rag ingest PATH...``.

Index PDF, Word, HTML, .txt and .md files into a knowledge base, with OCR of scanned pages
unless ``--no-ocr``.
"""

from __future__ import annotations

import argparse
import sys

from rag.cli._common import SharedArgs, bounded, settings_of
from rag.ingest.chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, MIN_CHUNK_SIZE
from rag.ingest.eta import format_eta, with_eta
from rag.ingest.pipeline import ChunkSettings, ingest_files
from rag.store.chroma import StoreUnavailable, open_knowledge_base
from rag.terminal import printable

POSITION = 10
HELP = "index PDF, Word (.docx), HTML, .txt and .md files"

_MARKS = {"ingested": "ok  ", "already indexed": "same", "failed": "FAIL"}


def page_progress(stream):
    """Per-page progress on ``stream`` for ``ingest_files(on_page=...)``.

    A line per page read by OCR (seconds each) with the file's expected time left once known
    (:mod:`rag.ingest.eta`), and on a terminal a counter that rewrites itself for the other pages.
    """
    tty = stream.isatty()
    back = "\r" if tty else ""

    def show(name: str, done: int, total: int, ocr: bool, eta_s: float | None) -> None:
        name = printable(name)
        if ocr:
            left = f" ({format_eta(eta_s)})" if eta_s and done < total else ""
            print(f"{back}  {name}: page {done}/{total} read by OCR{left}", file=stream, flush=True)
        elif tty:
            print(f"\r  {name}: page {done}/{total}", end="", file=stream, flush=True)
            if done == total:
                print("\r\033[K", end="", file=stream, flush=True)

    return with_eta(show)


def cmd_ingest(args: argparse.Namespace) -> int:
    """Ingest ``args.paths``: one line per file on stdout, a total on stderr.

    Returns:
        0 when every file was ingested or already indexed, 1 when any failed (the good files
        are kept).

    Raises:
        ValueError: ``--chunk-overlap`` is not less than ``--chunk-size`` (nothing is created).
        StoreUnavailable: the Chroma server was lost (after printing the files done); the
            interrupted document is repaired by the next ingest.
    """
    if args.chunk_overlap >= args.chunk_size:  # before the knowledge base is created
        raise ValueError(f"argument --chunk-overlap: must be less than --chunk-size ({args.chunk_size}), "
                         f"got {args.chunk_overlap}")
    settings = settings_of(args)
    kb = open_knowledge_base(settings, args.collection)
    try:
        reports = ingest_files(kb, args.paths, password=args.password,
                               chunking=ChunkSettings(args.chunk_size, args.chunk_overlap),
                               max_bytes=settings.max_upload_bytes, ocr=not args.no_ocr,
                               on_page=page_progress(sys.stderr))
    except StoreUnavailable as exc:  # the files done so far are stored; main says the rest
        for r in getattr(exc, "reports", [])[:-1]:
            print(f"{_MARKS[r.status]} {r.line()}", flush=True)
        raise
    for r in reports:
        print(f"{_MARKS[r.status]} {r.line()}", flush=True)
    failed = sum(1 for r in reports if not r.ok)
    print(f"{len(reports) - failed} of {len(reports)} files indexed in '{kb.name}' "
          f"({kb.count()} chunks in total)", file=sys.stderr)
    return 1 if failed else 0


def register(commands, shared: SharedArgs) -> None:
    """Add ``ingest`` to the top-level subparsers ``commands``."""
    p = commands.add_parser("ingest", help=HELP, parents=[shared.data_dir, shared.collection])
    p.add_argument("paths", nargs="+")
    p.add_argument("--password", help="password for encrypted PDFs")
    p.add_argument("--no-ocr", action="store_true",
                   help="do not read scanned pages by OCR (on by default; seconds per page)")
    p.add_argument("--chunk-size", type=bounded(int, ge=MIN_CHUNK_SIZE), default=DEFAULT_CHUNK_SIZE,
                   help=f"characters, {MIN_CHUNK_SIZE} or more (default {DEFAULT_CHUNK_SIZE})")
    p.add_argument("--chunk-overlap", type=bounded(int, ge=0), default=DEFAULT_CHUNK_OVERLAP,
                   help=f"characters, 0 or more and less than --chunk-size (default {DEFAULT_CHUNK_OVERLAP})")
    p.set_defaults(func=cmd_ingest)
