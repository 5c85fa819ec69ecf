"""Completion records in process (rag/store/chroma.py).

The bulk path, deletes, a failure between batches, and knowledge bases made before completion records existed.
"""

from __future__ import annotations

import pytest

from rag.store.bm25 import lexical_index
from rag.store.chroma import COMPLETE_KEY, RECORDS_FLAG, open_knowledge_base
from rag.store.embeddings import HashingEmbeddingFunction, embedding_identity
from tests.integration.test_store import records


def test_chunks_without_their_record_are_incomplete_everywhere(kb):
    kb.add_document(records("a" * 64, 3), pages=1, size_bytes=10)
    # what a killed ingest leaves: chunks upserted, no completion record
    part = records("b" * 64, 5)[:2]
    kb.collection.upsert(ids=[c.id for c in part], documents=[c.text for c in part],
                         metadatas=[c.metadata for c in part])
    assert kb.document_status("a" * 64) == "complete" and kb.has_document("a" * 64)
    assert kb.document_status("b" * 64) == "incomplete" and not kb.has_document("b" * 64)
    assert kb.document_status("c" * 64) == "absent"
    assert {d.doc_sha[0]: (d.chunks, d.status) for d in kb.documents()} == {
        "a": (3, "complete"), "b": (2, "incomplete")}
    assert set(lexical_index(kb).ids) == {c.id for c in records("a" * 64, 3)}
    assert {c.doc_sha for c in kb.query("chunk number retrieval", 10)} == {"a" * 64}
    assert {c.doc_sha for c in kb.iter_chunks(complete_only=True)} == {"a" * 64}
    # storing the document again replaces the leftovers and completes it
    assert kb.add_document(records("b" * 64, 5), pages=1, size_bytes=10) == 5
    assert kb.document_status("b" * 64) == "complete"
    assert len(lexical_index(kb).ids) == 8


def test_bulk_add_records_each_document_and_a_failure_keeps_the_complete_ones(kb, monkeypatch):
    docs = [(records(ch * 64, 3), 1, 10) for ch in "def"]
    assert kb.add_documents(docs, batch_size=4) == 9
    assert all(d.status == "complete" for d in kb.documents()) and len(kb.documents()) == 3

    real_upsert = type(kb.collection).upsert
    calls = {"n": 0}

    def flaky(self, *a, **kw):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk full")
        return real_upsert(self, *a, **kw)

    monkeypatch.setattr(type(kb.collection), "upsert", flaky)
    with pytest.raises(RuntimeError):
        kb.add_documents([(records(ch * 64, 3), 1, 10) for ch in "123"], batch_size=4)
    status = {d.doc_sha[0]: d.status for d in kb.documents()}
    assert status == {"d": "complete", "e": "complete", "f": "complete", "1": "complete"}


def test_delete_removes_the_record_with_the_chunks(kb):
    kb.add_document(records("9" * 64, 4), pages=1, size_bytes=10)
    assert kb.delete_document("9" * 64) == 4
    assert kb.document_status("9" * 64) == "absent"
    assert kb.collection.get(where={COMPLETE_KEY: {"$gt": 0}})["ids"] == []


def test_a_knowledge_base_from_before_completion_records_keeps_its_documents(settings):
    """Its documents were listed as indexed before; they get their records once, on open."""
    from rag.store.chroma import make_client

    ef = HashingEmbeddingFunction()
    client = make_client(settings)
    col = client.create_collection("default", embedding_function=ef,
                                   metadata={"embedding": embedding_identity(ef), "revision": 3})
    old = records("7" * 64, 4) + records("8" * 64, 2)
    col.upsert(ids=[c.id for c in old], documents=[c.text for c in old],
               metadatas=[c.metadata for c in old])
    kb = open_knowledge_base(settings, client=client)
    assert {d.doc_sha[0]: (d.chunks, d.status) for d in kb.documents()} == {
        "7": (4, "complete"), "8": (2, "complete")}
    assert kb.has_document("7" * 64) and len(lexical_index(kb).ids) == 6
    meta = client.get_collection("default").metadata
    assert meta[RECORDS_FLAG] == 1 and meta["revision"] == 4  # derived indexes rebuild


def test_documents_page_shows_an_incomplete_document(tmp_path, monkeypatch):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from rag.config import Settings
    from tests.conftest import ROOT

    data_dir = tmp_path / "data"
    kb = open_knowledge_base(Settings.from_env({}, data_dir=data_dir))
    kb.add_document(records("a" * 64, 3), pages=1, size_bytes=10)
    part = records("b" * 64, 5)[:2]
    kb.collection.upsert(ids=[c.id for c in part], documents=[c.text for c in part],
                         metadatas=[{**c.metadata, "source": "half.pdf"} for c in part])
    monkeypatch.setenv("RAG_DATA_DIR", str(data_dir))
    st.cache_resource.clear()
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
        at.switch_page("app_pages/documents.py").run()
        assert not at.exception, at.exception
        table = at.dataframe[0].value
        status = dict(zip(table["File"], table["Status"], strict=True))
        assert status == {"doc.txt": "complete", "half.pdf": "incomplete: upload it again to repair"}
    finally:
        st.cache_resource.clear()


def test_statuses_asked_together_are_each_documents_own(kb, monkeypatch):
    kb.add_document(records("a" * 64, 3), pages=1, size_bytes=10)
    part = records("b" * 64, 5)[:2]  # an interrupted ingest's leftovers
    kb.collection.upsert(ids=[c.id for c in part], documents=[c.text for c in part],
                         metadatas=[c.metadata for c in part])
    shas = ["a" * 64, "b" * 64, "c" * 64, "a" * 64]
    assert kb.document_statuses(shas) == {s: kb.document_status(s) for s in shas} == {
        "a" * 64: "complete", "b" * 64: "incomplete", "c" * 64: "absent"}

    asked: list[str] = []
    one_by_one = kb.document_status
    monkeypatch.setattr(kb, "document_status", lambda sha: asked.append(sha) or one_by_one(sha))
    new = ["d" * 64, "e" * 64]
    assert kb.document_statuses(new) == dict.fromkeys(new, "absent")
    assert asked == []  # none is stored: two reads in all, none per document
    assert kb.document_statuses(["a" * 64, "d" * 64]) == {"a" * 64: "complete", "d" * 64: "absent"}
    assert asked == ["a" * 64]
