"""Dense retrieval when Chroma's HNSW graph cannot reach a stored chunk (rag/store/dense.py).

An embedded Chroma rebuilds its graph from the write-ahead log in every process, in no fixed order, and
some vectors end up unreachable: a query asking for every chunk returns fewer, and a ``where`` filter still
walks the graph. A complete document's chunk among them must still be found (the crash test once got
nothing at all).
"""

from __future__ import annotations

import numpy as np

from rag.store.dense import nearest_complete


class GraphCollection:
    """A stand-in Chroma collection whose index reaches only ``reachable`` of its rows (cosine distance)."""

    def __init__(self, rows: dict[str, tuple[list[float], dict]], reachable: set[str]) -> None:
        """``rows``: id -> (vector, metadata); ``reachable``: the ids a query can return."""
        self.rows, self.reachable, self.reads = rows, reachable, []

    def _match(self, meta: dict, where: dict | None) -> bool:
        if where is None:
            return True
        if "$and" in where:
            return all(self._match(meta, w) for w in where["$and"])
        (key, cond), = where.items()
        return meta.get(key) in cond["$in"] if isinstance(cond, dict) else meta.get(key) == cond

    def query(self, query_embeddings, n_results, where=None, include=()):
        """The nearest ``n_results`` reachable rows matching ``where``, as Chroma answers one query."""
        q = np.asarray(query_embeddings[0]) / np.linalg.norm(query_embeddings[0])
        found = sorted((1.0 - float(np.asarray(v) @ q / np.linalg.norm(v)), cid)
                       for cid, (v, m) in self.rows.items()
                       if cid in self.reachable and self._match(m, where))
        found = found[:n_results]
        return {"ids": [[c for _, c in found]], "distances": [[d for d, _ in found]],
                "documents": [[None for _ in found]], "metadatas": [[self.rows[c][1] for _, c in found]]}

    def get(self, ids=None, where=None, include=(), limit=None, offset=0):
        """Rows by id or filter (every row, reachable or not: Chroma reads them from SQLite)."""
        self.reads.append(list(include))
        picked = [c for c in self.rows if (ids is None or c in ids) and self._match(self.rows[c][1], where)]
        picked = picked[offset:None if limit is None else offset + limit]
        return {"ids": picked, "embeddings": [self.rows[c][0] for c in picked],
                "documents": [None for _ in picked], "metadatas": [self.rows[c][1] for c in picked]}


def _rows() -> dict[str, tuple[list[float], dict]]:
    rows = {f"long-{i}": ([1.0, 0.1 * i, 0.0], {"doc_sha": "long", "source": "long.txt", "text": "x"})
            for i in range(6)}
    rows["small-0"] = ([0.6, 0.0, 0.8], {"doc_sha": "small", "source": "small.md", "text": "zircon"})
    return rows


def test_a_complete_chunk_the_graph_cannot_reach_is_still_found_and_scored_exactly():
    col = GraphCollection(_rows(), reachable={f"long-{i}" for i in range(5)})  # not long-5, not small-0
    hits = nearest_complete(col, [1.0, 0.0, 0.0], k=20, n=7, complete={"small": 1})
    assert [(c.id, c.source, c.score) for c in hits] == [("small-0", "small.md", 0.6)]


def test_no_exact_scoring_while_the_graph_returns_enough_complete_chunks():
    col = GraphCollection(_rows(), reachable=set(_rows()))
    hits = nearest_complete(col, [1.0, 0.0, 0.0], k=2, n=7, complete={"long": 6, "small": 1})
    assert [c.id for c in hits] == ["long-0", "long-1"]
    assert col.reads == []  # nothing listed, no stored vector read


def test_a_where_filter_narrows_the_exact_scoring_too():
    col = GraphCollection(_rows(), reachable=set())
    hits = nearest_complete(col, [1.0, 0.0, 0.0], k=3, n=7, complete={"long": 6, "small": 1},
                            where={"source": "long.txt"})
    assert [c.id for c in hits] == ["long-0", "long-1", "long-2"]
    assert all(c.source == "long.txt" for c in hits)


def test_too_many_left_out_chunks_are_not_read(monkeypatch):
    import rag.store.dense as dense

    monkeypatch.setattr(dense, "MAX_EXACT_CHUNKS", 3)
    col = GraphCollection(_rows(), reachable=set())
    # seven complete chunks, none returned: more than the cap, so nothing is listed or read
    assert nearest_complete(col, [1.0, 0.0, 0.0], k=3, n=7, complete={"long": 6, "small": 1}) == []
    assert col.reads == []
    # a filter that leaves few enough is still scored exactly
    hits = nearest_complete(col, [1.0, 0.0, 0.0], k=3, n=7, complete={"long": 6, "small": 1},
                            where={"source": "small.md"})
    assert [c.id for c in hits] == ["small-0"]

