"""BM25 in memory: corpus term statistics, and the whole-index ranking the keyword index is checked against.

:class:`LexicalStats` gives the offline engine its idf; :class:`LexicalIndex` is the ranking built whole with
bm25s, the reference :class:`rag.store.bm25.KeywordIndex` reproduces incrementally.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from rag.models import Chunk
from rag.text import terms

K1, B = 1.5, 0.75
"""BM25 parameters, bm25s' defaults (Lucene variant)."""


def unpack_postings(blob: bytes | None) -> np.ndarray:
    """A posting list blob as a (3, n) int32 view: chunk rows, term frequencies, chunk lengths."""
    if not blob:
        return np.zeros((3, 0), dtype=np.int32)
    return np.frombuffer(blob, dtype=np.int32).reshape(-1, 3).T


def build_postings(chunk_terms: Sequence[Sequence[str]], first_row: int
                   ) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The posting lists of chunks numbered ``first_row``, ``first_row + 1``, ... in the given order.

    ``chunk_terms`` holds each chunk's :func:`rag.text.terms`. Returns ``(terms, bounds, triples)``: the
    distinct terms in order of first appearance; ``bounds``, int64 of shape (len(terms) + 1,), where
    term ``i``'s postings are ``triples[bounds[i]:bounds[i + 1]]``; and ``triples``, int32 of shape
    (postings, 3), one (chunk row, term frequency, chunk length in terms) row per distinct term of a
    chunk, grouped by term and in ascending chunk row within each term. Counted with numpy over the whole
    batch (one sort), not chunk by chunk. Raises nothing.
    """
    n = len(chunk_terms)
    lengths = np.fromiter(map(len, chunk_terms), dtype=np.int64, count=n)
    flat = list(chain.from_iterable(chunk_terms))
    vocab = {t: i for i, t in enumerate(dict.fromkeys(flat))}
    if not flat:
        return [], np.zeros(1, dtype=np.int64), np.zeros((0, 3), dtype=np.int32)
    term_ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    keys, tf = np.unique(term_ids * n + np.repeat(np.arange(n, dtype=np.int64), lengths), return_counts=True)
    owners, chunk = np.divmod(keys, n)  # sorted by term, then chunk
    triples = np.empty((len(keys), 3), dtype=np.int32)
    triples[:, 0] = chunk + first_row
    triples[:, 1] = tf
    triples[:, 2] = lengths[chunk]
    return list(vocab), np.searchsorted(owners, np.arange(len(vocab) + 1)), triples


def bm25_top(postings: list[np.ndarray], weights: list[int], n: int, avgdl: float, k: int
             ) -> tuple[list[int], np.ndarray]:
    """The ``k`` best chunk rows by Lucene BM25 over the posting lists of a question's terms.

    ``postings`` holds one (3, m) int32 array per term (chunk rows, term frequencies, chunk lengths) and
    ``weights`` how often the question repeats that term; ``n`` is the number of chunks, ``avgdl`` their
    mean length in terms. Returns ``(rows best first, scores indexed by row)``: only rows scoring > 0, ties
    in row order.
    """
    lists = [p for p in postings if p.shape[1]]
    if not lists:
        return [], np.zeros(0)
    acc = np.zeros(max(int(p[0].max()) for p in lists) + 1, dtype=np.float64)
    for weight, (rows, tf, dl) in zip(weights, postings, strict=True):
        if len(rows):
            idf = math.log(1.0 + (n - len(rows) + 0.5) / (len(rows) + 0.5))
            acc[rows] += weight * idf * tf / (tf + K1 * (1 - B + B * dl / avgdl))
    best = np.flatnonzero(acc > 0)
    if len(best) > k:
        cut = np.partition(acc[best], len(best) - k)[len(best) - k]
        best = best[acc[best] >= cut]  # the k best, with any ties at the cut
    return sorted(best.tolist(), key=lambda r: (-acc[r], r))[:k], acc


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
