"""The BM25 index on disk.

Consistent with Chroma after ingests and deletes, loaded (not rebuilt) after a restart, never reused for
another collection; bulk writes stay atomic per document; parallel PDF parsing gives the same chunks as one
process.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag.bench.data import corpus_documents, read_jsonl
from rag.ingest.parallel import PrefetchingLoader
from rag.ingest.pipeline import ingest_files
from rag.store.bm25 import LexicalIndex, LexicalStats, index_path, lexical_index
from rag.store.chroma import open_knowledge_base
from rag.store.retrieval import retrieve
from rag.text import terms
from tests.conftest import DATA, LEWIS, SELF_RAG, TRICKY

HOTPOT = DATA / "hotpotqa" / "corpus.jsonl"
ENCRYPTED = TRICKY / "pypdf__encryption__r4-aes-user-password.pdf"


@pytest.fixture(scope="module")
def paragraphs() -> dict[str, dict]:
    """Real HotpotQA paragraphs by title."""
    rows = read_jsonl(HOTPOT)
    return {r["title"]: r for r in rows[:400]}


def as_file(row: dict) -> tuple[str, bytes]:
    return f"{row['title']}.txt", f"{row['title']}\n\n{row['text']}".encode()


def test_bm25_follows_ingests_and_deletes(kb, paragraphs):
    temple, corliss = paragraphs["Shirley Temple"], paragraphs["Meet Corliss Archer"]
    [first] = ingest_files(kb, [as_file(corliss)])
    assert [c.source for c in retrieve(kb, "Corliss Archer radio program", 3, "bm25")] == \
        ["Meet Corliss Archer.txt"]
    assert retrieve(kb, "Shirley Temple diplomat", 3, "bm25") == []

    [second] = ingest_files(kb, [as_file(temple)])
    hits = retrieve(kb, "Shirley Temple diplomat", 3, "bm25")
    assert hits and hits[0].source == "Shirley Temple.txt"
    assert "Temple" in hits[0].text and hits[0].score > 0

    kb.delete_document(second.doc_sha)
    assert retrieve(kb, "Shirley Temple diplomat", 3, "bm25") == []
    assert set(lexical_index(kb).ids) == set(kb.collection.get(include=[])["ids"])


def test_bm25_is_loaded_after_a_restart_not_rebuilt(settings, paragraphs, monkeypatch):
    kb = open_knowledge_base(settings)
    ingest_files(kb, [as_file(paragraphs["Shirley Temple"]), as_file(paragraphs["Meet Corliss Archer"])])
    before = retrieve(kb, "Shirley Temple Black ambassador", 2, "bm25")
    saved = index_path(kb) / "meta.json"
    assert saved.exists() and index_path(kb) == settings.data_dir / "bm25" / "default"
    mtime = saved.stat().st_mtime_ns

    builds = []
    real_build = LexicalIndex.build.__func__
    monkeypatch.setattr(LexicalIndex, "build",
                        classmethod(lambda cls, rows: builds.append(1) or real_build(cls, rows)))
    restarted = open_knowledge_base(settings)  # a new process would start like this
    after = retrieve(restarted, "Shirley Temple Black ambassador", 2, "bm25")
    assert [(c.id, c.score, c.text) for c in after] == [(c.id, c.score, c.text) for c in before]
    assert builds == [] and saved.stat().st_mtime_ns == mtime

    ingest_files(restarted, [as_file(paragraphs["Kiss and Tell (1945 film)"])])
    hits = retrieve(restarted, "Kiss and Tell 1945 film", 1, "bm25")
    assert builds == [1] and hits[0].source == "Kiss and Tell (1945 film).txt"
    assert saved.stat().st_mtime_ns != mtime


def test_saved_index_keeps_the_term_statistics(settings, paragraphs):
    kb = open_knowledge_base(settings)
    rows = list(paragraphs.values())[:60]
    kb.add_documents(corpus_documents(rows))
    built = lexical_index(kb)
    loaded = lexical_index(open_knowledge_base(settings))
    expected = LexicalStats.from_terms(terms(c.text) for c in kb.iter_chunks())
    assert loaded is not built
    assert loaded.stats.n_docs == expected.n_docs == 60
    assert loaded.stats.df == expected.df == built.stats.df


def test_an_index_of_a_deleted_collection_is_never_reused(settings, paragraphs):
    kb = open_knowledge_base(settings)
    ingest_files(kb, [as_file(paragraphs["Shirley Temple"])])
    assert retrieve(kb, "Shirley Temple", 1, "bm25")
    kb.client.delete_collection(kb.name)
    again = open_knowledge_base(settings)  # same name, same revision and count once refilled
    ingest_files(again, [as_file(paragraphs["Meet Corliss Archer"])])
    assert again.fingerprint()[1:] == (1, 1)
    assert retrieve(again, "Shirley Temple", 1, "bm25") == []
    assert retrieve(again, "Corliss Archer", 1, "bm25")[0].source == "Meet Corliss Archer.txt"


def test_bulk_add_is_all_or_nothing_per_document(kb, paragraphs, monkeypatch):
    docs = corpus_documents(list(paragraphs.values())[:5])
    kb.add_documents(docs[:1])
    calls = {"n": 0}
    real_upsert = type(kb.collection).upsert

    def flaky(self, *a, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("disk full")
        return real_upsert(self, *a, **kw)

    monkeypatch.setattr(type(kb.collection), "upsert", flaky)
    # A two-chunk document straddles the failing batch: its first chunk was written.
    a, b = corpus_documents(list(paragraphs.values())[5:7])
    first = a[0][0]
    second = replace(b[0][0], id=first.id[:-1] + "1", doc_sha=first.doc_sha, index=1,
                     metadata={**b[0][0].metadata, "doc_sha": first.doc_sha, "chunk_index": 1})
    straddling = ([first, second], 1, 100)
    with pytest.raises(RuntimeError, match="disk full"):
        kb.add_documents([docs[1], docs[2], docs[3], straddling, docs[4]], batch_size=2)
    stored = set(kb.collection.get(include=[])["ids"])
    assert stored == {d[0][0].id for d in docs[:4]}
    assert not any(c.id in stored for c in straddling[0])


def test_parallel_parsing_gives_the_same_documents(settings):
    files = [LEWIS, ENCRYPTED, SELF_RAG]
    data = [(p.name, p.read_bytes()) for p in files]
    with PrefetchingLoader(data, lambda name: None, lambda sha: False, workers=2) as loader:
        assert loader.parallel
        parallel = [loader.load(n, d) for n, d in data if n != ENCRYPTED.name]
    from rag.ingest.loaders import load_document

    serial = [load_document(n, d) for n, d in data if n != ENCRYPTED.name]
    assert parallel == serial
    assert [p.number for p in parallel[0].pages] == list(range(1, 20))

    one = open_knowledge_base(settings, "one-process")
    two = open_knowledge_base(settings, "two-workers")
    r1 = ingest_files(one, files, workers=1)
    r2 = ingest_files(two, files, workers=2)
    assert [(r.status, r.code, r.chunks) for r in r1] == [(r.status, r.code, r.chunks) for r in r2]
    assert r2[1].code == "password_required" and r2[0].chunks == 88
    texts = lambda kb: sorted((c.id, c.text) for c in kb.iter_chunks())  # noqa: E731
    assert texts(one) == texts(two)
