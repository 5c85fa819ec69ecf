"""BM25 in memory: corpus term statistics, and the whole-index ranking the keyword index is checked against.

:class:`LexicalStats` gives the offline engine its idf; :class:`LexicalIndex` is the ranking built whole with
bm25s, the reference :class:`rag.store.bm25.KeywordIndex` reproduces incrementally.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from rag.models import Chunk
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
    def from_texts(cls, texts: Iterable[str]) -> LexicalStats:
        """Statistics of ``texts``, tokenized with :func:`rag.text.terms`."""
        return cls.from_terms(terms(t) for t in texts)

    @classmethod
    def from_terms(cls, docs: Iterable[list[str]]) -> LexicalStats:
        """Statistics of documents given as term lists."""
        df: Counter[str] = Counter()
        n = 0
        for toks in docs:
            df.update(set(toks))
            n += 1
        return cls(n_docs=n, df=dict(df))

    def idf(self, term: str) -> float:
        """The BM25 idf of ``term`` (> 0; a term never seen gets the idf of df = 0)."""
        df = self.df.get(term, 0)
        return math.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5))


class LexicalIndex:
    """A BM25 index built whole in memory (bm25s, Lucene variant, k1=1.5, b=0.75) over chunk ids.

    The reference ranking :class:`KeywordIndex` reproduces incrementally. It holds ids and token statistics
    only; the chunks themselves are read back from the knowledge base for each hit.
    """

    def __init__(self, ids: list[str], bm25, stats: LexicalStats) -> None:
        """Wrap a built bm25s index over ``ids`` (in index order) with its term statistics."""
        self.ids = ids
        self.stats = stats
        self._bm25 = bm25

    @classmethod
    def build(cls, rows: Iterable[tuple[str, str]]) -> LexicalIndex:
        """Index ``(chunk id, text)`` rows; tokens are :func:`rag.text.terms` (stemmed, no stop words).

        An empty ``rows`` gives an index that finds nothing.
        """
        import bm25s

        ids: list[str] = []
        tokens: list[list[str]] = []
        for cid, text in rows:
            ids.append(cid)
            tokens.append(terms(text or ""))
        stats = LexicalStats.from_terms(tokens)
        bm25 = None
        if ids:
            bm25 = bm25s.BM25()
            bm25.index(tokens, show_progress=False)
        return cls(ids, bm25, stats)

    def search_ids(self, query: str, k: int) -> list[tuple[str, float]]:
        """The ``k`` best ``(chunk id, BM25 score)`` pairs for ``query``, best first.

        Only scores > 0 (chunks sharing at least one term with the query).
        """
        q = [t for t in terms(query) if t in self.stats.df]
        if self._bm25 is None or not q or k <= 0:
            return []
        docs, scores = self._bm25.retrieve([q], k=min(k, len(self.ids)), show_progress=False)
        hits = zip(docs[0], scores[0], strict=False)
        return [(self.ids[int(i)], round(float(s), 4)) for i, s in hits if s > 0]

    def search(self, kb, query: str, k: int) -> list[Chunk]:
        """The ``k`` best chunks of ``kb`` by BM25, best first; ``score`` is the raw BM25 score (> 0).

        Chunks deleted from ``kb`` since the index was built are left out.
        """
        hits = self.search_ids(query, k)
        if not hits:
            return []
        scores = dict(hits)
        return [c.model_copy(update={"score": scores[c.id]}) for c in kb.get_chunks(scores)]
