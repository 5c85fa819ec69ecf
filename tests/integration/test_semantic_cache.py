"""The semantic cache: a paraphrase reuses a cached question's retrieval; a document change invalidates it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import Settings, preset_options
from rag.ingest.pipeline import ingest_files
from rag.run import make_context, run_question
from rag.store import kbs
from rag.store.chroma import open_knowledge_base
from rag.store.semantic_cache import SemanticCache, SqliteCacheStorage, semantic_cache_for
from rag.trace.views import detail_lines
from tests.conftest import ROOT

DOCS = sorted((ROOT / "docs").glob("*.md"))
QUESTION = "How does reciprocal rank fusion merge ranked lists?"
PARAPHRASE = "how does Reciprocal Rank Fusion merge the ranked lists"  # case, an article, no '?'
OTHER = "What does the grounding check test?"
NOTE = "retrieval reused from a similar question"


@pytest.fixture
def docs_kb(tmp_path):
    settings = Settings.from_env({}, data_dir=tmp_path / "data")
    kb = open_knowledge_base(settings, "docs")
    assert [r.status for r in ingest_files(kb, DOCS)] == ["ingested"] * len(DOCS)
    kb.settings = settings
    return kb


def _retrieve(kb, question: str, settings: Settings | None = None):
    run = run_question(question, make_context(settings or kb.settings, kb), preset_options("naive"))
    return next(e for e in run.events if e.node == "retrieve")


def test_a_paraphrase_reuses_the_cached_retrieval_and_the_trace_names_the_question(docs_kb):
    first = _retrieve(docs_kb, QUESTION)
    assert first.detail.reused_from is None and not first.detail.cached
    again = _retrieve(docs_kb, PARAPHRASE)
    assert again.detail.reused_from == QUESTION
    assert again.detail.reuse_similarity is not None and again.detail.reuse_similarity >= 0.97
    assert f"{NOTE}: '{QUESTION}'" in again.summary
    assert any(line.startswith(NOTE) and QUESTION in line for line in detail_lines(again))
    assert [c.id for c in again.detail.chunks] == [c.id for c in first.detail.chunks]


def test_a_different_question_is_searched(docs_kb):
    first = _retrieve(docs_kb, QUESTION)
    other = _retrieve(docs_kb, OTHER)
    assert other.detail.reused_from is None and not other.detail.cached and NOTE not in other.summary
    assert [c.id for c in other.detail.chunks] != [c.id for c in first.detail.chunks]


def test_adding_or_deleting_a_document_invalidates(docs_kb, tmp_path):
    before = _retrieve(docs_kb, QUESTION)
    note = tmp_path / "rrf-note.md"
    note.write_text("# Fusion\n\nReciprocal rank fusion merges ranked lists: each ranked list adds "
                    "1 / (60 + rank) to a passage, and the fused ranked lists are sorted by that sum.\n",
                    encoding="utf-8")
    assert [r.status for r in ingest_files(docs_kb, [note])] == ["ingested"]
    added = _retrieve(docs_kb, PARAPHRASE)
    assert added.detail.reused_from is None and not added.detail.cached
    assert "rrf-note.md" in {c.source for c in added.detail.chunks}  # the new document, not a stale list
    sha = next(d.doc_sha for d in docs_kb.documents() if d.source == "rrf-note.md")
    assert docs_kb.delete_document(sha) > 0
    deleted = _retrieve(docs_kb, QUESTION)
    assert deleted.detail.reused_from is None and not deleted.detail.cached
    assert "rrf-note.md" not in {c.source for c in deleted.detail.chunks}
    assert [c.id for c in deleted.detail.chunks] == [c.id for c in before.detail.chunks]


def test_a_reindex_invalidates(docs_kb):
    _retrieve(docs_kb, QUESTION)
    kbs.reindex(docs_kb.client, docs_kb.settings, "docs", "hashing/dim=512")
    reopened = open_knowledge_base(docs_kb.settings, "docs", client=docs_kb.client)
    after = _retrieve(reopened, PARAPHRASE, docs_kb.settings)
    assert after.detail.reused_from is None and not after.detail.cached


def test_entries_persist_for_another_process_and_the_threshold_turns_it_off(docs_kb, tmp_path):
    _retrieve(docs_kb, QUESTION)
    path = Path(docs_kb.settings.data_dir) / "semantic_cache.sqlite"
    fresh = SemanticCache(SqliteCacheStorage(path))  # what another process on the same data dir sees

    def unexpected():
        raise AssertionError("the search ran although a similar question is cached")

    chunks, reuse = fresh.retrieve(docs_kb, PARAPHRASE, 6, "bm25", unexpected)
    assert reuse is not None and reuse.question == QUESTION and len(chunks) == 6
    strict = SemanticCache(SqliteCacheStorage(path), threshold=1.0)
    _, reuse = strict.retrieve(docs_kb, OTHER, 6, "bm25", lambda: [])
    assert reuse is None
    off = docs_kb.settings.with_(semantic_cache_threshold=0.0)
    assert semantic_cache_for(off) is None and make_context(off, docs_kb).semantic_cache is None
    assert Settings.from_env({"RAG_SEMANTIC_CACHE_THRESHOLD": "off"}).semantic_cache_threshold == 0.0
    with pytest.raises(ValueError, match="RAG_SEMANTIC_CACHE_THRESHOLD"):
        Settings.from_env({"RAG_SEMANTIC_CACHE_THRESHOLD": "1.5"})
