"""Retrieval over a knowledge base (dense) and the corpus statistics the offline engine needs."""

from __future__ import annotations

import math
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from rag.graph.state import Chunk
from rag.text import terms


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
        df: Counter[str] = Counter()
        n = 0
        for text in texts:
            df.update(set(terms(text)))
            n += 1
        return cls(n_docs=n, df=dict(df))

    def idf(self, term: str) -> float:
        df = self.df.get(term, 0)
        return math.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5))


_stats_lock = threading.Lock()


def lexical_stats(kb) -> LexicalStats:
    """Statistics of ``kb``'s chunks, cached on the knowledge base until its contents change."""
    key = kb.fingerprint()
    with _stats_lock:
        cached = getattr(kb, "_lexical_stats", None)
        if cached and cached[0] == key:
            return cached[1]
    stats = LexicalStats.from_texts(c.text for c in kb.iter_chunks())
    with _stats_lock:
        kb._lexical_stats = (key, stats)
    return stats


def retrieve_dense(kb, query: str, k: int) -> list[Chunk]:
    """The ``k`` chunks nearest to ``query`` in embedding space, best first (may be fewer)."""
    return kb.query(query, k)
