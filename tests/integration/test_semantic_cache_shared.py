"""The semantic cache in a SQL database (issue 22): shared by replicas, invalidated by any replica's ingest.

Two replicas are two data directories with one Chroma store (as one ``chroma run`` serves them) and one
database URL; each has its own :class:`SemanticCache` (its own in-memory vectors) over
:class:`SqlCacheStorage`. The same checks run on a SQLite URL (no server needed) and on PostgreSQL 15.
"""

from __future__ import annotations

import numpy as np
import pytest

from rag.config import Settings
from rag.ingest.pipeline import ingest_files
from rag.store import chroma
from rag.store.cache_storage import SqlCacheStorage
from rag.store.chroma import open_knowledge_base
from rag.store.retrieval import retrieve
from rag.store.semantic_cache import Scope, SemanticCache, SqliteCacheStorage, semantic_cache_for
from tests.conftest import ROOT

DOCS = sorted((ROOT / "docs").glob("*.md"))
QUESTION = "How does reciprocal rank fusion merge ranked lists?"
PARAPHRASE = "how does Reciprocal Rank Fusion merge the ranked lists"
NOTE = ("# Fusion\n\nReciprocal rank fusion merges ranked lists: each ranked list adds 1 / (60 + rank) to a "
        "passage, and the fused ranked lists are sorted by that sum.\n")


def _not_searched():
    raise AssertionError("the search ran although replica A cached a similar question")


def _ask(cache: SemanticCache, kb, text: str, search=None):
    return cache.retrieve(kb, text, 6, "hybrid", search or (lambda: retrieve(kb, text, 6, "hybrid")))


def _two_replicas_share_and_invalidate(tmp_path, monkeypatch, url: str, shared_settings: bool) -> None:
    # another process sees a write after FINGERPRINT_TTL_S; 0 makes every lookup read the store's revision,
    # as replica B would once that time has passed (not this process's forgetting of A's fingerprint)
    monkeypatch.setattr(chroma, "FINGERPRINT_TTL_S", 0.0)
    env = {"RAG_DATABASE_URL": url} if shared_settings else {}
    settings_a = Settings.from_env(env, data_dir=tmp_path / "a")
    settings_b = Settings.from_env(env, data_dir=tmp_path / "b")
    kb_a = open_knowledge_base(settings_a, "docs")
    assert [r.status for r in ingest_files(kb_a, DOCS)] == ["ingested"] * len(DOCS)
    kb_b = open_knowledge_base(settings_b, "docs", client=kb_a.client)  # one Chroma server for both
    one, two = SemanticCache(SqlCacheStorage(url)), SemanticCache(SqlCacheStorage(url))

    first, reuse = _ask(one, kb_a, QUESTION)
    assert reuse is None and first
    chunks, reuse = _ask(two, kb_b, PARAPHRASE, _not_searched)  # cached on A, reused on B
    assert reuse is not None and reuse.question == QUESTION and reuse.similarity >= 0.97
    assert [c.id for c in chunks] == [c.id for c in first]
    old = SemanticCache.scope(kb_b, "hybrid", 6)

    note = tmp_path / "rrf-note.md"
    note.write_text(NOTE, encoding="utf-8")
    assert [r.status for r in ingest_files(kb_a, [note])] == ["ingested"]  # the knowledge base changes on A
    fresh = retrieve(kb_b, PARAPHRASE, 6, "hybrid")
    assert "rrf-note.md" in {c.source for c in fresh}
    chunks, reuse = _ask(two, kb_b, PARAPHRASE)  # B's mirror still holds A's entry: it must not serve it
    assert reuse is None and [c.id for c in chunks] == [c.id for c in fresh]
    assert SemanticCache.scope(kb_b, "hybrid", 6) != old
    assert one.storage.vectors(old, 0) == []  # B's first write in the new state dropped the old entries

    chunks, reuse = _ask(one, kb_a, QUESTION, _not_searched)  # and A reuses what B cached after the change
    assert reuse is not None and reuse.question == PARAPHRASE
    assert "rrf-note.md" in {c.source for c in chunks}


def test_two_replicas_on_a_sqlite_url_share_entries_and_an_ingest_invalidates(tmp_path, monkeypatch):
    _two_replicas_share_and_invalidate(tmp_path, monkeypatch, f"sqlite:///{tmp_path / 'shared.sqlite'}",
                                       shared_settings=False)


@pytest.mark.server
def test_two_replicas_on_postgres_share_entries_and_an_ingest_invalidates(tmp_path, monkeypatch,
                                                                           database_url):
    _two_replicas_share_and_invalidate(tmp_path, monkeypatch, database_url, shared_settings=True)


@pytest.mark.server
def test_the_settings_choose_the_shared_database(tmp_path, database_url):
    a = semantic_cache_for(Settings.from_env({"RAG_DATABASE_URL": database_url}, data_dir=tmp_path / "a"))
    b = semantic_cache_for(Settings.from_env({"RAG_DATABASE_URL": database_url}, data_dir=tmp_path / "b"))
    assert a is b and isinstance(a.storage, SqlCacheStorage) and a.storage.location == database_url
    local = semantic_cache_for(Settings.from_env({}, data_dir=tmp_path / "c"))
    assert local is not None and isinstance(local.storage, SqliteCacheStorage)
    assert local.storage.path == tmp_path / "c" / "semantic_cache.sqlite"
    a.storage.add(S1, "q", VEC, "[]", 1.0)
    assert SqlCacheStorage(database_url).vectors(S1, 0)[0][1] == VEC


S1 = Scope(kb="docs", state="c1|hashing|r1|n5", mode="dense", k=6)
S2 = Scope(kb="docs", state="c1|hashing|r2|n6", mode="dense", k=6)
VEC = np.arange(4, dtype=np.float32).tobytes()


def test_the_storage_reads_and_writes_a_file_of_the_standard_library_storage(tmp_path):
    path = tmp_path / "semantic_cache.sqlite"
    old = SqliteCacheStorage(path)  # a data directory's file, as the default storage writes it
    first = old.add(S1, "first", VEC, '[{"x": 1}]', 2.5)
    storage = SqlCacheStorage(path)
    assert storage.vectors(S1, 0) == [(first, VEC)] and storage.entry(first) == ("first", '[{"x": 1}]', 2.5)
    second = storage.add(S1, "second", VEC, "[]", 1.0)
    assert second > first and old.vectors(S1, first) == [(second, VEC)]


def test_the_storage_keeps_scopes_apart_prunes_and_never_reuses_an_id(tmp_path):
    storage = SqlCacheStorage(f"sqlite:///{tmp_path / 'cache.sqlite'}")
    ids = [storage.add(S1, f"q{i}", VEC, "[]", 1.0) for i in range(4)]
    assert ids == sorted(ids) and storage.vectors(S1, ids[1]) == [(i, VEC) for i in ids[2:]]
    assert storage.vectors(S2, 0) == [] and storage.vectors(Scope("docs", S1.state, "bm25", 6), 0) == []
    newest = storage.add(S2, "new state", VEC, "[]", 1.0)
    storage.prune(S2, keep=5)
    assert storage.vectors(S1, 0) == [] and storage.entry(ids[0]) is None  # another state: dropped
    more = [storage.add(S2, f"n{i}", VEC, "[]", 1.0) for i in range(3)]
    storage.prune(S2, keep=2)
    assert [i for i, _ in storage.vectors(S2, 0)] == more[1:] and storage.entry(newest) is None
    storage.clear()
    assert storage.count() == 0 and storage.vectors(S2, 0) == []
    assert storage.add(S2, "after clear", VEC, "[]", 1.0) > more[-1]  # an old mirror's id never names it


def test_an_unreachable_database_is_an_os_error_and_the_cache_searches(tmp_path, kb):
    storage = SqlCacheStorage("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    with pytest.raises(OSError, match="semantic cache at postgresql://nobody@127.0.0.1:1/none"):
        storage.vectors(Scope("docs", "s", "dense", 6), 0)
    assert [r.status for r in ingest_files(kb, DOCS[:1])] == ["ingested"]
    chunks, reuse = SemanticCache(storage).retrieve(kb, QUESTION, 3, "dense", lambda: ["searched"])
    assert chunks == ["searched"] and reuse is None
