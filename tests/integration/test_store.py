"""The Chroma store: embedded and server mode, atomic document writes, the embedding guard."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from rag.config import Settings
from rag.ingest.pipeline import ingest_files
from rag.ingest.types import ChunkRecord
from rag.store.chroma import EmbeddingMismatch, open_knowledge_base, validate_collection_name
from rag.store.embeddings import HashingEmbeddingFunction
from tests.conftest import DEFAULT_EMBEDDING_CALLS, LEWIS, DefaultEmbeddingCalled
from tests.waiting import ProcessExited, port_open, wait_for


def records(sha: str, n: int) -> list[ChunkRecord]:
    return [ChunkRecord(id=f"{sha[:16]}-{i:05d}", text=f"chunk number {i} about retrieval",
                        source="doc.txt", page=1, index=i, doc_sha=sha,
                        metadata={"source": "doc.txt", "page": 1, "chunk_index": i, "doc_sha": sha})
            for i in range(n)]


def test_default_onnx_embedding_is_never_called(kb):
    """The guard itself works, and a full ingest + query never reaches Chroma's default."""
    from chromadb.api.types import DefaultEmbeddingFunction

    with pytest.raises(DefaultEmbeddingCalled):
        DefaultEmbeddingFunction()(["would download a model"])
    DEFAULT_EMBEDDING_CALLS.clear()
    ingest_files(kb, [LEWIS])
    assert kb.query("retriever training", 3)
    reopened = kb.client.get_collection(kb.name)  # no embedding function passed explicitly
    assert reopened.query(query_texts=["dense passage retrieval"], n_results=2)["ids"][0]
    assert DEFAULT_EMBEDDING_CALLS == []


def test_collection_records_and_reuses_our_embedding_function(kb):
    kb.add_document(records("a" * 64, 3), pages=1, size_bytes=10)
    col = kb.client.get_collection(kb.name)
    assert col.metadata["embedding"] == "retrace-hashing/dim=1024"
    assert col.configuration["embedding_function"].name() == "retrace-hashing"


def test_add_is_all_or_nothing(kb, monkeypatch):
    kb.add_document(records("b" * 64, 2), pages=1, size_bytes=10)
    calls = {"n": 0}
    real_upsert = type(kb.collection).upsert

    def flaky(self, *a, **kw):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk full")
        return real_upsert(self, *a, **kw)

    monkeypatch.setattr(type(kb.collection), "upsert", flaky)
    with pytest.raises(RuntimeError):
        kb.add_document(records("c" * 64, 10), pages=1, size_bytes=10, batch_size=4)
    assert not kb.has_document("c" * 64), "a failed document left chunks behind"
    assert kb.has_document("b" * 64) and kb.count() == 2


def test_documents_preview_delete_and_revision(kb):
    r0 = kb.revision()
    kb.add_document(records("d" * 64, 5), pages=2, size_bytes=123)
    kb.add_document(records("e" * 64, 2), pages=1, size_bytes=45)
    assert kb.revision() == r0 + 2
    docs = {d.doc_sha: d for d in kb.documents()}
    assert docs["d" * 64].chunks == 5 and docs["d" * 64].pages == 2
    assert docs["d" * 64].size_bytes == 123
    assert [c.index for c in kb.document_chunks("d" * 64)] == [0, 1, 2, 3, 4]
    assert kb.delete_document("d" * 64) == 5
    assert kb.delete_document("d" * 64) == 0
    assert [d.doc_sha for d in kb.documents()] == ["e" * 64]
    assert kb.revision() == r0 + 3


def test_persists_across_clients(settings):
    kb1 = open_knowledge_base(settings)
    kb1.add_document(records("f" * 64, 3), pages=1, size_bytes=1)
    kb2 = open_knowledge_base(Settings.from_env({}, data_dir=settings.data_dir))
    assert kb2.has_document("f" * 64)
    assert (settings.data_dir / "chroma").is_dir()


def test_mixing_embedding_models_is_refused(settings):
    open_knowledge_base(settings).add_document(records("1" * 64, 2), pages=1, size_bytes=1)
    other = open_knowledge_base(settings, embedding_function=HashingEmbeddingFunction(dim=256))
    with pytest.raises(EmbeddingMismatch, match="Re-index"):
        other.count()


@pytest.mark.parametrize("bad", ["", "a", "has space", "-lead", "x" * 70, "a..b"])
def test_invalid_collection_names_are_refused(bad):
    with pytest.raises(ValueError, match="invalid knowledge base name"):
        validate_collection_name(bad)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def chroma_server(tmp_path):
    """A real ``chroma run`` on 127.0.0.1, on a free port, stopped after the test."""
    port = _free_port()
    exe = Path(sys.executable).parent / "chroma"
    log = open(tmp_path / "chroma.log", "w")  # noqa: SIM115 (the server writes to it until the test ends)
    proc = subprocess.Popen([str(exe), "run", "--path", str(tmp_path / "server-data"),
                             "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: port_open(port), timeout_s=60, what="chroma run", proc=proc)
    except ProcessExited:
        raise RuntimeError((tmp_path / "chroma.log").read_text()) from None
    except TimeoutError:
        proc.kill()
        raise
    yield port
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.mark.server
def test_server_mode_against_real_chroma_run(chroma_server, tmp_path):
    from chromadb.api.client import Client as _  # noqa: F401  (import check only)

    from rag.run import make_context, run_question
    from rag.store.chroma import make_client

    settings = Settings.from_env({"CHROMA_HOST": "127.0.0.1", "CHROMA_PORT": str(chroma_server)},
                                 data_dir=tmp_path / "local")
    client = make_client(settings)
    assert type(client).__name__ != "PersistentClient"
    kb = open_knowledge_base(settings, client=client)
    reports = ingest_files(kb, [LEWIS])
    assert reports[0].status == "ingested", reports[0].line()
    again = ingest_files(open_knowledge_base(settings), [LEWIS])
    assert again[0].status == "already indexed"
    run = run_question("How is the retriever trained?", make_context(settings, kb))
    assert run.citations and run.citations[0].source == LEWIS.name
    assert not (tmp_path / "local" / "chroma").exists(), "server mode wrote a local store"


def test_chunk_text_is_stored_as_metadata_and_older_rows_still_read(kb):
    """New chunks keep their text in TEXT_KEY, not as a Chroma document; rows stored before still read."""
    from rag.store.records import TEXT_KEY

    sha = "e" * 64
    kb.add_document(records(sha, 3), pages=1, size_bytes=10)
    got = kb.collection.get(ids=[f"{sha[:16]}-00001"], include=["documents", "metadatas"])
    assert got["documents"] == [None] and got["metadatas"][0][TEXT_KEY] == "chunk number 1 about retrieval"
    assert [c.text for c in kb.document_chunks(sha)][1] == "chunk number 1 about retrieval"

    old = "f" * 64  # a chunk the way earlier releases stored it: text as the document, no TEXT_KEY
    legacy = records(old, 1)[0]
    kb.collection.upsert(ids=[legacy.id], documents=["legacy words about zircon ledgers"],
                         metadatas=[{**legacy.metadata, "doc_chunks": 1}])
    kb.forget_fingerprint()  # written behind the knowledge base's back, as another process would
    assert [c.text for c in kb.get_chunks([legacy.id])] == ["legacy words about zircon ledgers"]
    assert kb.query("zircon ledgers", 1)[0].text == "legacy words about zircon ledgers"
    from rag.store.bm25 import lexical_index

    assert [h[0] for h in lexical_index(kb).search_ids("zircon ledgers", 1)] == [legacy.id]


def test_fingerprint_is_shared_forgotten_on_writes_and_expires(settings, monkeypatch):
    from rag.store import chroma

    one = open_knowledge_base(settings, "fingerprints")
    two = open_knowledge_base(settings, "fingerprints")
    one.add_document(records("a" * 64, 2), pages=1, size_bytes=10)
    before = one.fingerprint()
    assert two.fingerprint() == before  # the same collection: one cached value
    two.add_document(records("b" * 64, 3), pages=1, size_bytes=10)  # a write through the other object
    after = one.fingerprint()
    assert after != before and after[2] == 5
    assert set(one.complete_documents()) == {"a" * 64, "b" * 64}

    # another process's write (a raw upsert here) is seen once the cached value expires
    extra = records("c" * 64, 1)[0]
    one.collection.upsert(ids=[extra.id], documents=[extra.text], metadatas=[extra.metadata])
    assert one.fingerprint() == after  # still within FINGERPRINT_TTL_S
    monkeypatch.setattr(chroma, "FINGERPRINT_TTL_S", 0.0)
    assert one.fingerprint()[2] == 6


def test_the_document_list_is_read_once_until_the_store_changes(kb, monkeypatch):
    kb.add_document(records("1" * 64, 2), pages=1, size_bytes=10)
    assert [d.doc_sha for d in kb.documents()] == ["1" * 64]
    reads = []
    real = kb._read_documents
    monkeypatch.setattr(kb, "_read_documents", lambda: reads.append(1) or real())
    assert [d.doc_sha for d in kb.documents()] == ["1" * 64] and reads == []  # a rerun: no read
    kb.add_document(records("2" * 64, 1), pages=1, size_bytes=10)
    assert sorted(d.doc_sha for d in kb.documents()) == ["1" * 64, "2" * 64] and reads == [1]
    kb.delete_document("1" * 64)
    assert [d.doc_sha for d in kb.documents()] == ["2" * 64] and reads == [1, 1]


def test_get_chunks_takes_an_id_more_than_once_and_keeps_the_order_given(kb):
    """Evidence gathered over several steps may name a chunk twice: Chroma alone refuses duplicate ids."""
    sha = "d" * 64
    kb.add_document(records(sha, 3), pages=1, size_bytes=10)
    a, b = f"{sha[:16]}-00002", f"{sha[:16]}-00000"
    got = kb.get_chunks([a, b, a, "unknown-00009"])
    assert [c.id for c in got] == [a, b, a]
    assert got[0].text == "chunk number 2 about retrieval"
