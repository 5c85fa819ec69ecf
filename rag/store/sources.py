"""Copies of the PDFs a knowledge base was built from, so a citation can show its page.

Each PDF is kept once per knowledge base, content-addressed, at ``<data_dir>/sources/<knowledge base>/<sha256
of its bytes>.pdf``. It is written to a temporary file and renamed into place, so a killed process leaves
either the whole file or none (a stray temporary file at worst). A kept file of the wrong size is written
again by the next ingest of the same bytes. It is removed with its document (:func:`forget`) or with its
knowledge base (:func:`forget_knowledge_base`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from pathlib import Path

SOURCES_DIR = "sources"
"""Folder of the data directory that holds the kept files, one subfolder per knowledge base."""
_SHA = re.compile(r"[0-9a-f]{64}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def source_path(data_dir: Path, kb_name: str, doc_sha: str) -> Path:
    """Where the PDF whose bytes hash to ``doc_sha`` (SHA-256, hex) is kept for knowledge base ``kb_name``.

    Raises ValueError for a hash that is not 64 lowercase hex digits or a name that is not a plain folder
    name (Chroma's collection names always are), so no path leaves the folder.
    """
    if not _SHA.fullmatch(doc_sha):
        raise ValueError(f"not a SHA-256 hex digest: {doc_sha[:80]!r}")
    if not _NAME.fullmatch(kb_name) or kb_name in (".", ".."):
        raise ValueError(f"not a knowledge base name: {kb_name[:80]!r}")
    return Path(data_dir) / SOURCES_DIR / kb_name / f"{doc_sha}.pdf"


def keep(data_dir: Path, kb_name: str, doc_sha: str, data: bytes) -> Path:
    """Keep ``data`` (a PDF's bytes, hashing to ``doc_sha``) for ``kb_name``; returns its path.

    Does nothing when it is already kept. Crash-safe (see the module docstring). Raises OSError when the file
    cannot be written, ValueError as :func:`source_path` does.
    """
    path = source_path(data_dir, kb_name, doc_sha)
    if path.is_file() and path.stat().st_size == len(data):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".pdf")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def find(data_dir: Path | None, kb_name: str, doc_sha: str) -> Path | None:
    """The kept PDF of ``doc_sha`` in ``kb_name``, or None (not a PDF, indexed before files were kept)."""
    if data_dir is None:
        return None
    try:
        path = source_path(data_dir, kb_name, doc_sha)
    except ValueError:
        return None
    return path if path.is_file() else None


def forget(data_dir: Path | None, kb_name: str, doc_sha: str) -> bool:
    """Remove the kept PDF of ``doc_sha`` from ``kb_name``; True when there was one."""
    path = find(data_dir, kb_name, doc_sha)
    if path is None:
        return False
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    return True


def forget_knowledge_base(data_dir: Path | None, kb_name: str) -> None:
    """Remove every kept PDF of ``kb_name`` (when the knowledge base itself is deleted)."""
    if data_dir is None or not _NAME.fullmatch(kb_name) or kb_name in (".", ".."):
        return
    shutil.rmtree(Path(data_dir) / SOURCES_DIR / kb_name, ignore_errors=True)
