"""Storing while the workers prepare: a large PDF range by range, small files that are ready in one write.

The chunks are exactly those of a one-process ingest (ids, texts, metadata), reports keep the order of the
files given (though the workers take the largest first), and a document is complete only with its
completion record: a part that fails leaves nothing of it, and a SIGKILL while it streams leaves it
incomplete until the next ingest repairs it.
"""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys

import pytest

from rag.ingest import pipeline
from rag.ingest.chunking import chunk_document
from rag.ingest.errors import IngestError
from rag.ingest.loaders import load_document
from rag.ingest.parallel import STREAM_MIN_RANGES, PrefetchingLoader
from rag.ingest.pipeline import ingest_files
from rag.store.chroma import KnowledgeBase, open_knowledge_base
from tests.conftest import LEWIS, ROOT, SELF_RAG, TRICKY

BRK = TRICKY / "darinzRAG__brk_2024_10-k_sec.pdf"  # 143 pages: 9 ranges of 16


def stored(kb) -> list[tuple[str, str, dict]]:
    got = kb.collection.get(include=["metadatas"])
    drop = ("added_at",)
    return sorted((i, m.get("text", ""), {k: v for k, v in m.items() if k not in drop})
                  for i, m in zip(got["ids"], got["metadatas"], strict=True))


def test_a_large_pdf_streams_and_the_store_holds_what_one_process_stores(settings, monkeypatch):
    streamed: list[str] = []
    real = KnowledgeBase.add_document_stream

    def spy(self, parts, **kw):
        def watched():
            for part in parts:
                streamed.append(part[0][0].source if part[0] else "")
                yield part
        return real(self, watched(), **kw)

    monkeypatch.setattr(KnowledgeBase, "add_document_stream", spy)
    files = [LEWIS, BRK, SELF_RAG, LEWIS]  # the last: a copy, reported as one
    order: list[str] = []
    two = open_knowledge_base(settings, "two-workers")
    reports = ingest_files(two, files, workers=2, on_progress=lambda i, n, name: order.append(name))
    one = open_knowledge_base(settings, "one-process")
    serial = ingest_files(one, files, workers=1)

    assert [r.filename for r in reports] == [f.name for f in files]  # reports in the order given
    assert [(r.status, r.chunks, r.pages) for r in reports] == [(r.status, r.chunks, r.pages) for r in serial]
    assert reports[1].status == "ingested" and reports[1].pages == 143
    assert reports[3].message == f"already indexed (same content as {LEWIS.name})"
    assert order[:1] == [BRK.name]  # the workers take the largest first, and so does the store
    assert len(streamed) >= STREAM_MIN_RANGES and set(streamed) == {BRK.name}  # range by range
    assert stored(two) == stored(one)
    assert all(two.has_document(r.doc_sha) for r in reports)
    expected = chunk_document(load_document(BRK.name, BRK.read_bytes()),
                              doc_sha=hashlib.sha256(BRK.read_bytes()).hexdigest())
    assert reports[1].chunks == len(expected)
    assert [c.id for c in two.document_chunks(reports[1].doc_sha)] == [c.id for c in expected]


def test_small_files_ready_together_share_one_write(settings, monkeypatch):
    calls: list[int] = []
    real = KnowledgeBase.add_documents

    def spy(self, documents, **kw):
        documents = list(documents)
        calls.append(len(documents))
        return real(self, documents, **kw)

    monkeypatch.setattr(KnowledgeBase, "add_documents", spy)
    files = [(f"note-{i}.md", f"# Note {i}\n\nZircon sample {i} is {4000 + i} million years old.\n".encode())
             for i in range(6)]
    kb = open_knowledge_base(settings)
    reports = ingest_files(kb, files, workers=1)
    assert [r.status for r in reports] == ["ingested"] * 6
    assert sum(calls) == 6 and len(calls) < 6  # loaded here, all ready: stored together
    assert sorted(d.source for d in kb.documents()) == [f"note-{i}.md" for i in range(6)]
    assert all(d.status == "complete" for d in kb.documents())


def test_a_part_that_fails_leaves_nothing_of_the_document(settings):
    kb = open_knowledge_base(settings)
    doc = load_document(BRK.name, BRK.read_bytes())
    sha = "b" * 64
    chunks = chunk_document(doc, doc_sha=sha)
    assert len(chunks) > 300

    def parts():
        yield chunks[:150], None, None
        yield chunks[150:300], None, None  # a full batch of 256 is upserted by now
        raise IngestError("page 40 cannot be read")

    with pytest.raises(IngestError):
        kb.add_document_stream(parts(), pages=doc.page_count, size_bytes=1, batch_size=256)
    assert kb.collection.get(where={"doc_sha": sha}, include=[])["ids"] == []
    assert kb.document_status(sha) == "absent"
    whole = iter([(chunks, None, None)])
    assert kb.add_document_stream(whole, pages=doc.page_count, size_bytes=1) == len(chunks)
    assert kb.document_status(sha) == "complete"


def test_a_worker_failure_while_streaming_loads_the_file_here(settings, monkeypatch):
    from rag.ingest import parallel

    real = parallel.prepare_range

    def broken(key, data, password, first, last, *rest):
        if first > 64:
            raise MemoryError("worker out of memory")  # not the file's fault
        return real(key, data, password, first, last, *rest)

    monkeypatch.setattr(parallel, "prepare_range", broken)
    kb = open_knowledge_base(settings)
    [report] = ingest_files(kb, [BRK], workers=2)
    assert report.status == "ingested" and report.pages == 143
    assert kb.document_status(report.doc_sha) == "complete"
    assert kb.count() == report.chunks


INSPECT = r"""
import json, sys
from rag.config import Settings
from rag.store.chroma import open_knowledge_base
kb = open_knowledge_base(Settings.from_env(data_dir=sys.argv[1]))
print(json.dumps({d.source: [d.chunks, d.status] for d in kb.documents()}))
"""


def test_sigkill_while_a_large_pdf_streams_leaves_it_incomplete_then_repaired(tmp_path):
    data_dir = tmp_path / "data"
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("RETRACE_TEST_")}

    def cli(*args, **extra):
        return subprocess.run([sys.executable, "-m", "rag", *args, "--data-dir", str(data_dir)], cwd=ROOT,
                              capture_output=True, text=True, timeout=300, env={**env, **extra})

    def docs():
        out = subprocess.run([sys.executable, "-c", INSPECT, str(data_dir)], cwd=ROOT, capture_output=True,
                             text=True, timeout=300, env=env)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    killed = cli("ingest", str(BRK), RETRACE_TEST_KILL_AFTER_BATCHES="1")
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stdout, killed.stderr)
    assert docs() == {BRK.name: [256, "incomplete"]}
    again = cli("ingest", str(BRK))
    assert again.returncode == 0, again.stderr
    assert "replaced the incomplete copy" in again.stdout
    [(chunks, status)] = docs().values()
    assert status == "complete" and chunks > 256


def test_the_loader_streams_only_files_of_several_ranges():
    data = [(LEWIS.name, LEWIS.read_bytes()), (BRK.name, BRK.read_bytes())]
    shas = [hashlib.sha256(d).hexdigest() for _, d in data]
    with PrefetchingLoader(data, lambda name: None, lambda sha: False, workers=2) as loader:
        positions = [loader.position(n, s) for (n, _), s in zip(data, shas, strict=True)]
        assert positions == [1, 0]  # the largest first
        assert not loader.streams(LEWIS.name, shas[0]) and loader.streams(BRK.name, shas[1])
        stream = loader.stream(BRK.name, shas[1])
        parts = list(stream.parts())
        doc = stream.document()
    assert len(parts) == 9 and doc.page_count == 143
    expected = chunk_document(load_document(BRK.name, data[1][1]), doc_sha=shas[1])
    assert [c for part in parts for c in part[0]] == expected
    assert doc == load_document(BRK.name, data[1][1])
    assert pipeline.STORE_BATCH == 256  # the SIGKILL test above counts on it
