"""The BM25 index of a knowledge base (bm25s) and the corpus statistics the offline engine needs.

The index persists under the data directory and is rebuilt only when the knowledge base changes.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import threading
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rag.models import Chunk
from rag.store.chroma import PAGE_SIZE
from rag.text import terms

INDEX_FORMAT = 2
"""Version of the on-disk BM25 layout, of the tokenizer (:func:`rag.text.terms`) it was
built with and of what it holds (2: complete documents only): an index saved under another
version is rebuilt."""


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
    """A BM25 index (bm25s, Lucene variant, k1=1.5, b=0.75) over chunk ids, with its term statistics.

    It holds ids and token statistics only; the chunks themselves are read back from the knowledge base for
    each hit, so the store stays the one source of text.
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

    # -- persistence ---------------------------------------------------------------------
    def save(self, path: Path, key: dict) -> None:
        """Write the index to the directory ``path``.

        (replaced whole, atomically enough that a reader sees the old index, the new one, or none), tagged
        with ``key``.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".{path.name}.{uuid.uuid4().hex[:8]}.tmp"
        tmp.mkdir()
        try:
            if self._bm25 is not None:
                self._bm25.save(str(tmp / "bm25s"), show_progress=False)
            (tmp / "ids.json").write_text(json.dumps(self.ids))
            (tmp / "meta.json").write_text(json.dumps({**key, "n_docs": self.stats.n_docs}))
            old = None
            if path.exists():
                old = path.parent / f".{path.name}.{uuid.uuid4().hex[:8]}.old"
                os.replace(path, old)
            os.replace(tmp, path)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    @classmethod
    def load(cls, path: Path, key: dict) -> LexicalIndex | None:
        """The index saved at ``path`` if it was saved with exactly ``key``, else None.

        (also when it is missing or unreadable: the caller rebuilds). Document frequencies come from the BM25
        matrix itself (non-zero entries per term column).
        """
        import bm25s
        import numpy as np

        path = Path(path)
        try:
            meta = json.loads((path / "meta.json").read_text())
            if {k: meta.get(k) for k in key} != key:
                return None
            ids = json.loads((path / "ids.json").read_text())
            if not ids:
                return cls([], None, LexicalStats(0, {}))
            bm25 = bm25s.BM25.load(str(path / "bm25s"), show_progress=False)
            df_by_col = np.diff(bm25.scores["indptr"])
            df = {t: int(df_by_col[i]) for t, i in bm25.vocab_dict.items()
                  if t and i < len(df_by_col)}
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if len(ids) != int(meta.get("n_docs", -1)):
            return None
        return cls(ids, bm25, LexicalStats(n_docs=len(ids), df=df))


_lock = threading.Lock()


def _index_key(kb) -> dict:
    name, revision, count = kb.fingerprint()  # an interrupted ingest changes count, not revision
    return {"format": INDEX_FORMAT, "collection_id": str(kb.collection.id), "name": name,
            "revision": revision, "count": count}


def index_path(kb) -> Path | None:
    """Where ``kb``'s BM25 index persists.

    ``<data_dir>/bm25/<name>/``, or None when the knowledge base has no data directory.
    """
    data_dir = getattr(kb, "data_dir", None)
    return None if data_dir is None else Path(data_dir) / "bm25" / kb.name


def _read_rows(kb) -> Iterable[tuple[str, str]]:
    """(chunk id, text) of every chunk of a complete document.

    The chunks of an incomplete document (no completion record, see :mod:`rag.store.chroma`) are never
    indexed.
    """
    complete = kb.complete_documents()
    offset = 0
    while True:
        got = kb._get_page(limit=PAGE_SIZE, offset=offset, include=["documents", "metadatas"])
        if not got["ids"]:
            return
        for cid, text, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=False):
            if (meta or {}).get("doc_sha") in complete:
                yield cid, text
        offset += len(got["ids"])


def lexical_index(kb) -> LexicalIndex:
    """``kb``'s BM25 index over the chunks of its complete documents, consistent with its current contents.

    Kept in memory on the knowledge base object and on disk (:func:`index_path`), both
    tagged with the collection's id, revision and chunk count: a new process loads the saved
    index instead of rebuilding it; any add or delete (from any process) changes the tag,
    and the next call rebuilds from the whole collection and saves again.
    """
    key = _index_key(kb)
    with _lock:
        cached = getattr(kb, "_lexical_index", None)
        if cached and cached[0] == key:
            return cached[1]
    path = index_path(kb)
    index = LexicalIndex.load(path, key) if path is not None else None
    if index is None:
        index = LexicalIndex.build(_read_rows(kb))
        if path is not None:
            # a read-only data dir costs a rebuild per process, never a wrong answer
            with contextlib.suppress(OSError):
                index.save(path, key)
    with _lock:
        kb._lexical_index = (key, index)
    return index


def lexical_stats(kb) -> LexicalStats:
    """Term statistics of ``kb``'s chunks (see :func:`lexical_index`)."""
    return lexical_index(kb).stats
