"""The keyword index in the shared database (``RAG_DATABASE_URL``, issue 20).

Two processes' indexes on one PostgreSQL are one index: what one adds or deletes the other finds or misses at
once, ranked exactly as the local SQLite index and as bm25s rank the same chunks; indexes of different
knowledge bases stay apart; a document another replica has just indexed survives a reconciliation that runs
before its completion record.
"""

from __future__ import annotations

import pytest

from rag.bench.data import read_jsonl
from rag.store.bm25 import KeywordIndex, LexicalIndex
from tests.conftest import DATA

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def documents() -> list[tuple[str, list[tuple[str, str]]]]:
    """60 real HotpotQA paragraphs as 20 documents of 3 chunks each."""
    rows = read_jsonl(DATA / "hotpotqa" / "corpus.jsonl")[:60]
    return [(f"doc{d}", [(f"doc{d}-{i}", f"{r['title']}. {r['text']}") for i, r in
                         enumerate(rows[d * 3:d * 3 + 3])]) for d in range(20)]


QUERIES = ("American film actress diplomat", "radio program 1940s", "river in England", "football club")


def test_two_replicas_share_one_index_ranked_as_the_local_one(database_url, documents):
    one = KeywordIndex(None, url=database_url, name="default")
    two = KeywordIndex(None, url=database_url, name="default")  # another replica's
    local = KeywordIndex(None)
    for index in (one, two, local):
        index.bind("collection-1")
    assert one.add(documents[:10]) == 30
    assert two.add(documents[10:]) == 30
    local.add(documents)
    reference = LexicalIndex.build([c for _, chunks in documents for c in chunks])
    for q in QUERIES:
        hits = two.search_ids(q, 5)
        assert hits, q
        assert hits == one.search_ids(q, 5) == local.search_ids(q, 5)
        assert [cid for cid, _ in hits] == [cid for cid, _ in reference.search_ids(q, 5)]
    assert one.documents() == local.documents() and len(two.ids) == 60
    assert one.stats.df == local.stats.df and two.stats.n_docs == 60

    first = two.search_ids(QUERIES[0], 1)[0][0]
    one.delete([first.rsplit("-", 1)[0]])  # deleted through one replica ...
    assert first not in [cid for cid, _ in two.search_ids(QUERIES[0], 5)]  # ... gone on the other
    assert two.stats.n_docs == 57


def test_indexes_of_other_knowledge_bases_and_collections_stay_apart(database_url, documents):
    a = KeywordIndex(None, url=database_url, name="a")
    b = KeywordIndex(None, url=database_url, name="b")
    a.bind("col-a")
    b.bind("col-b")
    a.add(documents[:5])
    assert b.search_ids(QUERIES[0], 5) == [] and b.documents() == {}
    again = KeywordIndex(None, url=database_url, name="a")
    again.bind("col-a")  # the same collection: kept
    assert again.documents() == a.documents()
    again.bind("col-a2")  # the knowledge base was deleted and made again: emptied
    assert a.documents() == {} and a.search_ids(QUERIES[0], 5) == []


def test_a_document_just_indexed_elsewhere_survives_a_reconciliation(database_url, documents):
    writer = KeywordIndex(None, url=database_url, name="default")
    reader = KeywordIndex(None, url=database_url, name="default")
    writer.bind("c")
    reader.bind("c")
    writer.add(documents[:2])
    # the reader's view of the completion records still lacks doc1 (its record is being written)
    added, removed = reader.sync({"doc0": 3}, lambda shas: iter(()))
    assert (added, removed) == (0, 0) and set(reader.documents()) == {"doc0", "doc1"}
    local = KeywordIndex(None)  # a local index removes it at once, as it always has
    local.bind("c")
    local.add(documents[:2])
    assert local.sync({"doc0": 3}, lambda shas: iter(())) == (0, 1)
