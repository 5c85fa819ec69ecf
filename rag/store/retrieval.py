"""Retrieval over a knowledge base: dense (Chroma), BM25 (bm25s) and hybrid by reciprocal rank fusion."""

from __future__ import annotations

from typing import Literal

from rag.models import Chunk
from rag.store.bm25 import lexical_index

RetrievalMode = Literal["dense", "bm25", "hybrid"]
RRF_K = 60
"""The rank constant of reciprocal rank fusion (Cormack, Clarke & Buettcher 2009)."""


def reciprocal_rank_fusion(rankings: list[list[Chunk]], k: int, *, rrf_k: int = RRF_K) -> list[Chunk]:
    """Fuse ranked lists by RRF.

    Score(d) = sum over lists of 1 / (rrf_k + rank), rank 1-based (Cormack et al. 2009). Returns the top
    ``k``; ``score`` is normalised to [0, 1] by the best possible fused score.
    """
    fused: dict[str, float] = {}
    first: dict[str, Chunk] = {}
    for ranking in rankings:
        for rank, chunk in enumerate(ranking, 1):
            fused[chunk.id] = fused.get(chunk.id, 0.0) + 1.0 / (rrf_k + rank)
            first.setdefault(chunk.id, chunk)
    best = len(rankings) / (rrf_k + 1)
    order = sorted(fused, key=lambda cid: -fused[cid])[:k]
    return [first[cid].model_copy(update={"score": round(fused[cid] / best, 4)}) for cid in order]


def retrieve(kb, query: str, k: int, mode: RetrievalMode = "bm25") -> list[Chunk]:
    """The ``k`` best chunks for ``query``, best first (fewer when the KB is small).

    ``dense``: cosine similarity in Chroma. ``bm25``: lexical BM25. ``hybrid``: both, each
    asked for max(20, 4k) candidates, fused by reciprocal rank fusion.
    Raises ValueError for an unknown mode.
    """
    if mode == "dense":
        return kb.query(query, k)
    if mode == "bm25":
        return lexical_index(kb).search(kb, query, k)
    if mode == "hybrid":
        n = max(20, 4 * k)
        return reciprocal_rank_fusion([kb.query(query, n), lexical_index(kb).search(kb, query, n)], k)
    raise ValueError(f"unknown retrieval mode {mode!r}; use dense, bm25 or hybrid")
