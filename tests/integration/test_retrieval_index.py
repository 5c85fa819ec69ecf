"""The BM25 index on disk.

Consistent with Chroma after ingests and deletes (updated incrementally, reconciled with the completion
records), ranked exactly as bm25s, loaded (not rebuilt) after a restart, never reused for another
collection; bulk writes stay atomic per document; parallel PDF parsing gives the same chunks as one process.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag.bench.data import corpus_documents, read_jsonl
from rag.ingest.parallel import PrefetchingLoader
from rag.ingest.pipeline import ingest_files
from rag.store import bm25
from rag.store.bm25 import KeywordIndex, LexicalIndex, LexicalStats, index_path, lexical_index
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


def test_bm25_is_loaded_after_a_restart_and_grows_without_a_rebuild(settings, paragraphs, monkeypatch):
    kb = open_knowledge_base(settings)
    ingest_files(kb, [as_file(paragraphs["Shirley Temple"]), as_file(paragraphs["Meet Corliss Archer"])])
    before = retrieve(kb, "Shirley Temple Black ambassador", 2, "bm25")
    saved = index_path(kb) / KeywordIndex.FILE
    assert saved.exists() and index_path(kb) == settings.data_dir / "bm25" / "default"

    reads, adds = [], []
    monkeypatch.setattr(bm25, "read_document_texts", lambda get, shas: reads.append(shas) or iter(()))
    real_add = KeywordIndex.add_terms
    monkeypatch.setattr(KeywordIndex, "add_terms",
                        lambda self, docs: real_add(self, adds.append(docs := list(docs)) or docs))
    restarted = open_knowledge_base(settings)  # a new process would start like this
    after = retrieve(restarted, "Shirley Temple Black ambassador", 2, "bm25")
    assert [(c.id, c.score, c.text) for c in after] == [(c.id, c.score, c.text) for c in before]
    assert reads == [] and adds == []  # nothing was read back from Chroma or indexed again

    [kiss] = ingest_files(restarted, [as_file(paragraphs["Kiss and Tell (1945 film)"])])
    hits = retrieve(restarted, "Kiss and Tell 1945 film", 1, "bm25")
    assert hits[0].source == "Kiss and Tell (1945 film).txt"
    # the ingest wrote exactly its own document, once; the query read nothing back
    assert [[sha for sha, _ in docs] for docs in adds] == [[kiss.doc_sha]] and reads == []
    restarted.delete_document(kiss.doc_sha)
    assert retrieve(restarted, "Kiss and Tell 1945 film", 1, "bm25") == []
    assert reads == [] and kiss.doc_sha not in lexical_index(restarted).documents()


def test_keyword_index_ranks_exactly_as_bm25s(kb, paragraphs):
    rows = list(paragraphs.values())
    kb.add_documents(corpus_documents(rows))
    incremental = lexical_index(kb)
    reference = LexicalIndex.build((c.id, c.text) for c in kb.iter_chunks())
    questions = [r["title"] + " " + " ".join(r["text"].split()[5:12]) for r in rows[::8]]
    questions += ["Which film starred Shirley Temple?", "radio program 1940s comedy", "检索器"]
    for q in questions:
        ours, theirs = incremental.search_ids(q, 6), reference.search_ids(q, 6)
        assert [i for i, _ in ours] == [i for i, _ in theirs], q
        assert [s for _, s in ours] == pytest.approx([s for _, s in theirs], rel=1e-4), q
    assert incremental.stats.df == reference.stats.df and incremental.stats.n_docs == len(rows)


def test_posting_segments_merge_and_still_rank_exactly_as_bm25s(kb, paragraphs):
    """Added one document at a time (70 adds), a term's postings stay in few segments.

    They are merged by tier once :data:`rag.store.postings.FANOUT` fill one; deletes then rewrite them.
    Ranked as bm25s throughout.
    """
    from rag.store.keyword_db import sql
    from rag.store.postings import FANOUT

    rows = list(paragraphs.values())[:70]
    for doc in corpus_documents(rows):
        kb.add_documents([doc])
    index = lexical_index(kb)
    with index.store.read() as db:
        tiers = db.execute(sql("SELECT term, tier, count(*) FROM keyword_segments "
                               "GROUP BY term, tier")).all()
        docs = dict(db.execute(sql("SELECT term, sum(length(rows)) / 12 FROM keyword_segments "
                                   "GROUP BY term")).all())
    assert max(t for _, t, _ in tiers) >= 1 and max(n for *_, n in tiers) < FANOUT  # < FANOUT a tier
    assert max(docs.values()) > 2 * FANOUT  # a term in more chunks than segments it may keep
    shas = list(kb.complete_documents())
    for sha in shas[::3]:
        kb.delete_document(sha)
    index = lexical_index(kb)
    reference = LexicalIndex.build((c.id, c.text) for c in kb.iter_chunks())
    for q in [r["title"] + " " + " ".join(r["text"].split()[5:12]) for r in rows[::5]] + ["the film of 1940"]:
        ours, theirs = index.search_ids(q, 6), reference.search_ids(q, 6)
        assert [i for i, _ in ours] == [i for i, _ in theirs], q
        assert [s for _, s in ours] == pytest.approx([s for _, s in theirs], rel=1e-4), q
    assert index.stats.df == reference.stats.df


def test_keyword_index_reconciles_with_the_completion_records(kb, paragraphs):
    """A crash between the keyword write and the completion record, or a lost keyword write."""
    temple, corliss = as_file(paragraphs["Shirley Temple"]), as_file(paragraphs["Meet Corliss Archer"])
    [a, b] = ingest_files(kb, [temple, corliss])
    index = lexical_index(kb)
    index.delete([a.doc_sha])  # as if the keyword write had been lost
    index.add([("f" * 64, [("ghost-00000", "Shirley Temple ghost chunk")])])  # and a document never completed
    kb._bump()  # any later change to the store makes the next reader reconcile
    assert set(lexical_index(kb).documents()) == {a.doc_sha, b.doc_sha}
    assert [c.source for c in retrieve(kb, "Shirley Temple ghost", 3, "bm25")] == ["Shirley Temple.txt"]


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
        import hashlib

        shas = [hashlib.sha256(d).hexdigest() for n, d in data if n != ENCRYPTED.name]
        worker_chunks = [loader.chunk_records(doc.filename, sha)
                         for doc, sha in zip(parallel, shas, strict=True)]
    from rag.ingest.chunking import chunk_document
    from rag.ingest.loaders import load_document

    serial = [load_document(n, d) for n, d in data if n != ENCRYPTED.name]
    assert parallel == serial
    # the workers' chunks (made range by range) are exactly the whole document's: ids, texts, spans
    assert worker_chunks == [chunk_document(doc, doc_sha=sha) for doc, sha in zip(serial, shas, strict=True)]
    assert all(c.metadata.get("pdf_start") is not None for c in worker_chunks[0][:5])
    assert [p.number for p in parallel[0].pages] == list(range(1, 20))

    one = open_knowledge_base(settings, "one-process")
    two = open_knowledge_base(settings, "two-workers")
    r1 = ingest_files(one, files, workers=1)
    r2 = ingest_files(two, files, workers=2)
    assert [(r.status, r.code, r.chunks) for r in r1] == [(r.status, r.code, r.chunks) for r in r2]
    assert r2[1].code == "password_required" and r2[0].chunks == 88
    texts = lambda kb: sorted((c.id, c.text) for c in kb.iter_chunks())  # noqa: E731
    assert texts(one) == texts(two)
