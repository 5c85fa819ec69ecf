"""Crash-safe indexing.

A real ``python -m rag ingest`` killed with SIGKILL in the middle of its upserts never leaves a document that
counts as indexed, and ingesting the same file again repairs it to exactly the clean chunk count.

The kill points are made deterministic by the test hook RETRACE_TEST_KILL_AFTER_BATCHES=N
(rag/store/chroma.py): the ingest process SIGKILLs itself right after its N-th upsert batch.
The state is read back in a separate process each time, as a user would see it.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

BATCH = 256  # rag.ingest.pipeline.STORE_BATCH: the upserts of one large file
SMALL = ("small.md", "# Zircon notes\n\nZircon crystals date the oldest rocks on Earth.\n")


def long_text() -> str:
    """About 900 KB of varied prose: several upsert batches of 1000-character chunks."""
    words = [
        "retrieval",
        "grading",
        "rewrite",
        "corpus",
        "lattice",
        "harbor",
        "quartz",
        "ledger",
        "vintage",
        "orbit",
        "meadow",
        "copper",
        "signal",
        "kernel",
        "turbine",
        "canyon",
    ]
    paras = []
    for i in range(1400):
        w = [words[(i * 7 + j * 3) % len(words)] for j in range(90)]
        paras.append(f"Section {i}. " + " ".join(w) + f" marker{i}.")
    return "\n\n".join(paras) + "\n"


def clean_chunk_count(path: Path) -> int:
    from rag.ingest.chunking import chunk_document
    from rag.ingest.loaders import load_document

    doc = load_document(path.name, path.read_bytes())
    return len(chunk_document(doc, doc_sha="0" * 64))


def env(**extra) -> dict:
    e = {k: v for k, v in os.environ.items() if not k.startswith("RETRACE_TEST_")}
    e.update(extra)
    return e


def rag_cli(*args, data_dir, **extra_env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rag", *args, "--data-dir", str(data_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env(**extra_env),
    )


INSPECT = r"""
import json, sys
from rag.config import Settings
from rag.store.bm25 import lexical_index
from rag.store.chroma import document_lines, open_knowledge_base
kb = open_knowledge_base(Settings.from_env(data_dir=sys.argv[1]))
index = lexical_index(kb)
sources = {c.id: c.source for c in kb.iter_chunks()}
print(json.dumps({
    "docs": {d.source: [d.chunks, d.status] for d in kb.documents()},
    "has": {d.source: kb.has_document(d.doc_sha) for d in kb.documents()},
    "count": kb.count(),
    "bm25_sources": sorted({sources[i] for i in index.ids}),
    "bm25_size": len(index.ids),
    "dense_sources": sorted({c.source for c in kb.query("quartz ledger zircon", 20)}),
    "lines": document_lines(kb)}))
"""


def inspect(data_dir: Path) -> dict:
    """The knowledge base as a new process sees it (documents, BM25, dense retrieval)."""
    out = subprocess.run(
        [sys.executable, "-c", INSPECT, str(data_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env(),
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def long_doc(tmp_path_factory) -> tuple[Path, int]:
    path = tmp_path_factory.mktemp("crash") / "long-report.txt"
    path.write_text(long_text())
    n = clean_chunk_count(path)
    assert math.ceil(n / BATCH) >= 4, n  # several batches, so a kill can land between them
    return path, n


def test_sigkill_during_upserts_is_repaired_by_the_next_ingest(tmp_path, long_doc):
    path, clean = long_doc
    small = tmp_path / SMALL[0]
    small.write_text(SMALL[1])
    data_dir = tmp_path / "data"
    assert rag_cli("ingest", str(small), data_dir=data_dir).returncode == 0
    batches = math.ceil(clean / BATCH)

    # 1 and 2: mid-document; `batches - 1`: every chunk but the last batch, which carries the
    # completion record, stored. The second kill lands during the
    # repair of the first.
    for kill_after in (1, 2, batches - 1):
        out = rag_cli("ingest", str(path), data_dir=data_dir, RETRACE_TEST_KILL_AFTER_BATCHES=str(kill_after))
        assert out.returncode == -signal.SIGKILL, (out.returncode, out.stdout, out.stderr)
        seen = inspect(data_dir)
        stored = min(kill_after * BATCH, clean)
        assert seen["docs"][path.name] == [stored, "incomplete"], seen["docs"]
        assert seen["docs"][SMALL[0]] == [1, "complete"]
        assert seen["has"] == {path.name: False, SMALL[0]: True}
        # neither BM25 nor dense retrieval sees the incomplete document's chunks
        assert seen["bm25_sources"] == [SMALL[0]] and seen["bm25_size"] == 1
        assert seen["dense_sources"] == [SMALL[0]]
        line = next(x for x in seen["lines"] if path.name in x)
        assert line.startswith("INCOMPLETE") and "ingest the same file again" in line
        if kill_after == 1:  # the CLI's listing says so too, and exits 1
            show = rag_cli("kb", "show", data_dir=data_dir)
            assert show.returncode == 1, show.stderr
            assert any(
                x.startswith("INCOMPLETE") and path.name in x and f"{BATCH} chunks" in x
                for x in show.stdout.splitlines()
            ), show.stdout

    out = rag_cli("ingest", str(path), data_dir=data_dir)
    assert out.returncode == 0, out.stderr
    assert f"ok   {path.name}: ingested 1 page, {clean} chunks" in out.stdout
    assert "replaced the incomplete copy" in out.stdout
    seen = inspect(data_dir)
    assert seen["docs"] == {path.name: [clean, "complete"], SMALL[0]: [1, "complete"]}
    assert seen["count"] == clean + 1
    assert seen["bm25_size"] == clean + 1
    assert seen["has"] == {path.name: True, SMALL[0]: True}
    assert all(x.startswith("ok") for x in seen["lines"])
    show = rag_cli("kb", "show", "--json", data_dir=data_dir)
    assert show.returncode == 0, show.stderr
    assert {d["source"]: (d["chunks"], d["status"]) for d in json.loads(show.stdout)} == {
        path.name: (clean, "complete"),
        SMALL[0]: (1, "complete"),
    }

    again = rag_cli(
        "ingest", str(path), data_dir=data_dir, RETRACE_TEST_KILL_AFTER_BATCHES="1"
    )  # nothing to store: never killed
    assert again.returncode == 0 and f"same {path.name}: already indexed" in again.stdout


def raw_keyword_index(data_dir: Path) -> dict:
    """The keyword index file as it lies on disk, read with plain sqlite3 (no reconciliation)."""
    import sqlite3

    con = sqlite3.connect(data_dir / "bm25" / "default" / "keyword.sqlite")
    try:
        return {
            "docs": sorted(r[0] for r in con.execute("SELECT doc_sha FROM keyword_docs")),
            "chunks": con.execute("SELECT count(*) FROM keyword_chunks").fetchone()[0],
            "terms": con.execute("SELECT count(DISTINCT term) FROM keyword_segments").fetchone()[0],
        }
    finally:
        con.close()


@pytest.mark.parametrize("point", ["mid", "after"])
def test_sigkill_around_the_keyword_index_write_leaves_no_half_indexed_document(tmp_path, long_doc, point):
    """``mid``: killed inside the keyword-index transaction; ``after``: between its commit and the record."""
    path, clean = long_doc
    small = tmp_path / SMALL[0]
    small.write_text(SMALL[1])
    data_dir = tmp_path / "data"
    assert rag_cli("ingest", str(small), data_dir=data_dir).returncode == 0
    small_only = raw_keyword_index(data_dir)
    assert small_only["chunks"] == 1 and small_only["terms"] > 0 and len(small_only["docs"]) == 1

    out = rag_cli("ingest", str(path), data_dir=data_dir, RETRACE_TEST_KILL_IN_KEYWORDS=point)
    assert out.returncode == -signal.SIGKILL, (out.returncode, out.stdout, out.stderr)
    raw = raw_keyword_index(data_dir)
    if point == "mid":  # the transaction was rolled back: not one chunk of the document is there
        assert raw == small_only
    else:  # committed whole, but the completion record never came
        assert len(raw["docs"]) == 2 and raw["chunks"] == clean + 1 and raw["terms"] > small_only["terms"]
    seen = inspect(data_dir)  # a reader reconciles the index with the completion records
    # the keyword index is written just before the last upsert, which carries the completion record
    assert seen["docs"][path.name] == [(math.ceil(clean / BATCH) - 1) * BATCH, "incomplete"]
    assert seen["bm25_sources"] == [SMALL[0]] and seen["bm25_size"] == 1
    assert raw_keyword_index(data_dir) == small_only

    out = rag_cli("ingest", str(path), data_dir=data_dir)
    assert out.returncode == 0 and "replaced the incomplete copy" in out.stdout, out.stderr
    seen = inspect(data_dir)
    assert seen["bm25_size"] == clean + 1 and seen["docs"][path.name] == [clean, "complete"]
    assert raw_keyword_index(data_dir)["chunks"] == clean + 1
