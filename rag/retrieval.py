"""Retrieval over a knowledge base: dense (Chroma), BM25 (bm25s) and hybrid by reciprocal rank
fusion; plus the corpus statistics the offline engine needs."""

from __future__ import annotations

import math
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Literal

from rag.graph.state import Chunk
from rag.text import terms

RetrievalMode = Literal["dense", "bm25", "hybrid"]
RRF_K = 60
"""The rank constant of reciprocal rank fusion (Cormack, Clarke & Buettcher 2009)."""


@dataclass(frozen=True)
class LexicalStats:
    """Document frequencies of index terms over a set of chunks.

    ``idf`` is the BM25 form ln(1 + (N - df + 0.5) / (df + 0.5)) (Robertson & Zaragoza 2009),
    always > 0; a term never seen gets the idf of df = 0.
    """

    n_docs: int
    df: dict[str, int]

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> "LexicalStats":
        return cls.from_terms(terms(t) for t in texts)

    @classmethod
    def from_terms(cls, docs: Iterable[list[str]]) -> "LexicalStats":
        df: Counter[str] = Counter()
        n = 0
        for toks in docs:
            df.update(set(toks))
            n += 1
        return cls(n_docs=n, df=dict(df))

    def idf(self, term: str) -> float:
        df = self.df.get(term, 0)
        return math.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5))


class LexicalIndex:
    """A BM25 index (bm25s, Lucene variant, k1=1.5, b=0.75) over every chunk of a knowledge
    base, with its term statistics. Built in memory from the store's contents."""

    def __init__(self, chunks: list[Chunk]) -> None:
        import bm25s

        self.chunks = chunks
        tokens = [terms(c.text) for c in chunks]
        self.stats = LexicalStats.from_terms(tokens)
        self._bm25 = None
        if chunks:
            self._bm25 = bm25s.BM25()
            self._bm25.index(tokens, show_progress=False)

    def search(self, query: str, k: int) -> list[Chunk]:
        """The ``k`` best chunks by BM25, best first; ``score`` is the raw BM25 score (>= 0)."""
        q = [t for t in terms(query) if t in self.stats.df]
        if self._bm25 is None or not q or k <= 0:
            return []
        docs, scores = self._bm25.retrieve([q], k=min(k, len(self.chunks)), show_progress=False)
        return [self.chunks[int(i)].model_copy(update={"score": round(float(s), 4)})
                for i, s in zip(docs[0], scores[0]) if s > 0]


_lock = threading.Lock()


def lexical_index(kb) -> LexicalIndex:
    """``kb``'s lexical index, cached on the knowledge base until its contents change."""
    key = kb.fingerprint()
    with _lock:
        cached = getattr(kb, "_lexical_index", None)
        if cached and cached[0] == key:
            return cached[1]
    index = LexicalIndex(list(kb.iter_chunks()))
    with _lock:
        kb._lexical_index = (key, index)
    return index


def lexical_stats(kb) -> LexicalStats:
    """Term statistics of ``kb``'s chunks (see :func:`lexical_index`)."""
    return lexical_index(kb).stats


def reciprocal_rank_fusion(rankings: list[list[Chunk]], k: int, *, rrf_k: int = RRF_K) -> list[Chunk]:
    """Fuse ranked lists by RRF: score(d) = sum over lists of 1 / (rrf_k + rank), rank 1-based
    (Cormack et al. 2009). Returns the top ``k``; ``score`` is normalised to [0, 1] by the
    best possible fused score."""
    fused: dict[str, float] = {}
    first: dict[str, Chunk] = {}
    for ranking in rankings:
        for rank, chunk in enumerate(ranking, 1):
            fused[chunk.id] = fused.get(chunk.id, 0.0) + 1.0 / (rrf_k + rank)
            first.setdefault(chunk.id, chunk)
    best = len(rankings) / (rrf_k + 1)
    order = sorted(fused, key=lambda cid: -fused[cid])[:k]
    return [first[cid].model_copy(update={"score": round(fused[cid] / best, 4)}) for cid in order]


def retrieve(kb, query: str, k: int, mode: RetrievalMode = "hybrid") -> list[Chunk]:
    """The ``k`` best chunks for ``query``, best first (fewer when the KB is small).

    ``dense``: cosine similarity in Chroma. ``bm25``: lexical BM25. ``hybrid``: both, each
    asked for max(20, 4k) candidates, fused by reciprocal rank fusion.
    Raises ValueError for an unknown mode.
    """
    if mode == "dense":
        return kb.query(query, k)
    if mode == "bm25":
        return lexical_index(kb).search(query, k)
    if mode == "hybrid":
        n = max(20, 4 * k)
        return reciprocal_rank_fusion([kb.query(query, n), lexical_index(kb).search(query, n)], k)
    raise ValueError(f"unknown retrieval mode {mode!r}; use dense, bm25 or hybrid")
