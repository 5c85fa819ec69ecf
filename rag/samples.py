"""The sample knowledge base: the project's own documentation under ``docs/``, ready to ingest.

The samples load into their own knowledge base, ``sample`` (:data:`SAMPLE_KB`), never into a user's: there
they would be cited for questions about the user's own documents.
"""

from __future__ import annotations

from pathlib import Path

from rag.ingest.pipeline import FileReport, ingest_files

SAMPLE_KB = "sample"
"""The knowledge base the app loads the samples into."""
SAMPLES_DIR = Path(__file__).resolve().parent.parent / "docs"
"""Where the sample documents live: the repository's ``docs/`` folder."""


def sample_files() -> list[Path]:
    """The sample documents: every ``*.md`` file directly under SAMPLES_DIR, sorted by name.

    Returns an empty list when the folder is missing (for example in an installed wheel).
    """
    if not SAMPLES_DIR.is_dir():
        return []
    return sorted(p for p in SAMPLES_DIR.glob("*.md") if p.is_file())


def load_samples(kb, **kw) -> list[FileReport]:
    """Ingest the sample documents into ``kb``; one FileReport per file, in file-name order.

    The app passes the knowledge base :data:`SAMPLE_KB`, never the user's.

    ``kw`` goes to :func:`rag.ingest.pipeline.ingest_files` (``chunking``, ``on_progress``,
    ``max_bytes``). Files already in ``kb`` report ``already indexed``, so calling this twice
    is harmless. Raises ValueError when no sample file is found, or for invalid chunk settings.
    """
    files = sample_files()
    if not files:
        raise ValueError(f"no sample documents found in {SAMPLES_DIR}")
    return ingest_files(kb, files, **kw)
