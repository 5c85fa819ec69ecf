"""Dense retrieval over a knowledge base's Chroma collection (:meth:`rag.store.chroma.KnowledgeBase.query`).

Chroma's vector index is an approximate HNSW graph, and some stored vectors cannot be reached from its
entry point: mostly near-duplicate chunks, at times a chunk unlike all the others. Which ones depends on the
order the graph was built in, and an embedded store builds it anew in every process that opens it (it
replays Chroma's write-ahead log in parallel, in no fixed order), so the same store can answer differently in
two processes. A query then returns fewer results than it asked for even when it asks for every stored
chunk, and a ``where`` filter does not help (the search still walks the graph). Whenever Chroma's answer
comes up short with too few chunks of complete documents in it, :func:`nearest_complete` scores the complete
chunks Chroma left out exactly, from their stored vectors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rag.models import Chunk
from rag.store.records import PAGE_SIZE, pages_of, to_chunk

SHAS_PER_FILTER = 500
"""Documents per ``$in`` filter when listing the chunks of complete documents."""
MAX_EXACT_CHUNKS = 20_000
"""At most this many left-out chunks are scored exactly (about 80 MB of vectors read); past it a short answer
stays short, as any approximate search's miss does, so a question never reads a whole large store."""


def nearest_complete(col, vector: Sequence[float], k: int, n: int, complete: Mapping[str, int],
                     where: dict | None = None) -> list[Chunk]:
    """The ``k`` nearest chunks of complete documents to ``vector``, best first (fewer if fewer match).

    ``col`` is the Chroma collection, ``n`` its chunk count, ``complete`` maps the doc_sha of every complete
    document to its chunk count, ``where`` is a Chroma metadata filter. Chroma is asked for ``min(k, n)``
    neighbours, then four times as many each time chunks of incomplete documents took places. When it returns
    fewer than asked (it gave all it could reach) and fewer than ``k`` complete chunks, the complete chunks it
    did not return are scored exactly (:func:`score_unreturned`). ``Chunk.score`` is cosine similarity.
    Raises what Chroma raises.
    """
    want = min(k, n)
    while True:
        got = col.query(query_embeddings=[vector], n_results=want, where=where,
                        include=["documents", "metadatas", "distances"])
        ids = got["ids"][0]
        hits = [to_chunk(cid, t, m, score=1.0 - float(d))
                for cid, t, m, d in zip(ids, got["documents"][0], got["metadatas"][0], got["distances"][0],
                                        strict=False)
                if (m or {}).get("doc_sha") in complete]
        if len(hits) >= k:
            return hits[:k]
        if len(ids) < want:  # short: the index could not reach the rest (or the filter matches no more)
            extra = score_unreturned(col, vector, complete, where, set(ids))
            return sorted([*hits, *extra], key=lambda c: -c.score)[:k]
        if want >= n:
            return hits
        want = min(n, want * 4)  # chunks of incomplete documents took some places


def score_unreturned(col, vector: Sequence[float], complete: Mapping[str, int], where: dict | None,
                     returned: set[str]) -> list[Chunk]:
    """The chunks of complete documents matching ``where`` whose ids are not in ``returned``, scored exactly.

    Lists their ids (pages of PAGE_SIZE, SHAS_PER_FILTER documents per filter), reads their stored vectors and
    scores each by cosine similarity to ``vector``. Unordered; empty when Chroma returned them all, or when
    more than MAX_EXACT_CHUNKS were left out. Raises what Chroma raises.
    """
    if where is None and sum(complete.values()) - len(returned) > MAX_EXACT_CHUNKS:
        return []
    shas = list(complete)
    missing: list[str] = []
    for start in range(0, len(shas), SHAS_PER_FILTER):
        part = {"doc_sha": {"$in": shas[start:start + SHAS_PER_FILTER]}}
        flt = part if where is None else {"$and": [where, part]}
        for got in pages_of(col.get, where=flt, include=[]):
            missing.extend(i for i in got["ids"] if i not in returned)
            if len(missing) > MAX_EXACT_CHUNKS:
                return []
    query = _unit(np.asarray(vector, dtype=np.float32))
    out: list[Chunk] = []
    for start in range(0, len(missing), PAGE_SIZE):
        got = col.get(ids=missing[start:start + PAGE_SIZE], include=["embeddings", "documents", "metadatas"])
        for cid, emb, text, meta in zip(got["ids"], got["embeddings"], got["documents"], got["metadatas"],
                                        strict=False):
            score = float(_unit(np.asarray(emb, dtype=np.float32)) @ query)
            out.append(to_chunk(cid, text, meta, score=score))
    return out


def _unit(v: Any) -> np.ndarray:
    """``v`` scaled to length 1 (a zero vector stays zero)."""
    norm = float(np.linalg.norm(v))
    return v / norm if norm else v
