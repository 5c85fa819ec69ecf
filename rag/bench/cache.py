"""``bench cache``: the semantic cache on paraphrased questions: hit rate, time saved, and no stale result.

On a BEIR corpus (HotpotQA by default) and a paraphrase set (``tests/data/paraphrases.jsonl``: each line
``{"id", "question", "paraphrases": [{"text", "kind"}]}``, ``kind`` ``surface`` for the same words
differently written, ``reworded`` for other words or another order). For each retrieval mode, in a cache
that starts empty:

1. each original question is retrieved through the cache (a miss: it is cached);
2. each paraphrase is retrieved through the cache and, on a second knowledge-base object of the same
   collection (its own query-embedding memo), without it: a hit reuses the original's chunks, and
   saves the fresh retrieval's time less the lookup's;
3. every other question of the data set goes through the cache too: a hit there is a false reuse;
4. a document is added (the first question's own words, so it ranks first for it), every original and
   paraphrase is asked again through the cache and compared with a fresh retrieval; then the document
   is deleted and they are asked again. A result that differs from the fresh one is stale.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

from rag.bench.data import BeirData, corpus_documents, mean, percentile
from rag.models import Chunk
from rag.store.cache_storage import SqlCacheStorage
from rag.store.retrieval import RetrievalMode, retrieve
from rag.store.semantic_cache import DEFAULT_THRESHOLD, CacheStorage, SemanticCache, SqliteCacheStorage

Progress = Callable[[int, int], None] | None
STORAGES: dict[str, Callable[[Path], CacheStorage]] = {"sqlite3": SqliteCacheStorage,
                                                     "sqlalchemy": SqlCacheStorage}
"""The cache storages ``bench cache --storage`` compares, each on a new SQLite file: the standard library's
(a data directory's default) and the SQLAlchemy one (the shared database's, here on a file)."""


def _ids(chunks: Sequence[Chunk]) -> list[str]:
    return [c.id for c in chunks]


def _searcher(kb, text: str, k: int, mode: RetrievalMode) -> Callable[[], list[Chunk]]:
    def search() -> list[Chunk]:
        return retrieve(kb, text, k, mode)
    return search


def bench_cache(kb, fresh_kb, items: list[dict], data: BeirData, *, k: int = 6,
                modes: Sequence[str] = ("bm25", "dense", "hybrid"), threshold: float = DEFAULT_THRESHOLD,
                on_progress: Progress = None,
                storage: Callable[[Path], CacheStorage] = SqliteCacheStorage) -> dict:
    """Measure the semantic cache on ``items`` (the paraphrase set) over ``kb`` (holding ``data.corpus``).

    ``fresh_kb`` is a second knowledge-base object on the same collection, for the uncached retrievals.
    Returns ``{"threshold", "k", "modes": [row per mode], "stale": {mode: ...}}``; a mode's row holds
    ``paraphrases``, ``hits``, ``hit_rate``, the hit rate per kind (``hit_rate_surface``,
    ``hit_rate_reworded``), ``same_top_k`` (share of reused chunks a fresh retrieval also returns),
    ``fresh_ms_p50``, ``hit_ms_p50``, ``miss_ms_p50`` (a lookup that missed, then searched and stored),
    ``saved_ms_total`` (over all paraphrases: fresh time less time through the cache; misses count their
    overhead), ``saved_ms_per_hit``, ``others`` and ``false_hits`` (other questions that reused
    something); ``stale`` is :func:`_stale_check`'s. Durations in ms. ``storage`` makes each mode's cache
    storage from a new SQLite file's path (:data:`STORAGES`). Raises ValueError for an unknown mode.
    """
    mine = {item["question"] for item in items}
    others = [q["text"] for q in data.queries if q["text"] not in mine]
    total = len(modes) * (len(items) + sum(len(i["paraphrases"]) for i in items) + len(others))
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if on_progress:
            on_progress(done, total)

    rows, stale = [], {}
    with tempfile.TemporaryDirectory(prefix="retrace-cache-bench-") as tmp:
        for mode in modes:
            m = cast(RetrievalMode, mode)
            retrieve(fresh_kb, "warm up", k, m)  # loads the keyword index once, outside the timings
            cache = SemanticCache(storage(Path(tmp) / f"{mode}.sqlite"), threshold)
            rows.append(_one_mode(kb, fresh_kb, cache, items, others, k, m, tick))
            stale[mode] = _stale_check(kb, fresh_kb, cache, items, k, m)
    return {"threshold": threshold, "k": k, "modes": rows, "stale": stale}


def _one_mode(kb, fresh_kb, cache: SemanticCache, items: list[dict], others: list[str], k: int,
              mode: RetrievalMode, tick: Callable[[], None]) -> dict:
    """One row of :func:`bench_cache`: the originals cached, the paraphrases timed, the others asked."""
    for item in items:
        cache.retrieve(kb, item["question"], k, mode, _searcher(kb, item["question"], k, mode))
        tick()
    hits: dict[str, list[bool]] = {}
    fresh_ms: list[float] = []
    hit_ms: list[float] = []
    miss_ms: list[float] = []
    same: list[float] = []
    saved: list[tuple[float, bool]] = []
    for item in items:
        for p in item["paraphrases"]:
            text = p["text"]
            started = time.perf_counter()
            fresh = retrieve(fresh_kb, text, k, mode)
            f_ms = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            got, reuse = cache.retrieve(kb, text, k, mode, _searcher(kb, text, k, mode))
            c_ms = (time.perf_counter() - started) * 1000
            hits.setdefault(p.get("kind", "surface"), []).append(reuse is not None)
            fresh_ms.append(f_ms)
            (hit_ms if reuse is not None else miss_ms).append(c_ms)
            saved.append((f_ms - c_ms, reuse is not None))
            if reuse is not None:
                same.append(len(set(_ids(got)) & set(_ids(fresh))) / max(1, len(fresh)))
            tick()
    false_hits = 0
    for text in others:
        false_hits += cache.retrieve(kb, text, k, mode, _searcher(kb, text, k, mode))[1] is not None
        tick()
    n_hits, n = sum(h for _, h in saved), len(saved)
    per_kind = {f"hit_rate_{kind}": round(mean([float(h) for h in v]), 3) for kind, v in sorted(hits.items())}
    return {"mode": mode, "paraphrases": n, "hits": n_hits, "hit_rate": round(n_hits / max(1, n), 3),
            **per_kind, "same_top_k": round(mean(same), 3) if same else None,
            "fresh_ms_p50": round(percentile(fresh_ms, 50), 2),
            "hit_ms_p50": round(percentile(hit_ms, 50), 2) if hit_ms else None,
            "miss_ms_p50": round(percentile(miss_ms, 50), 2) if miss_ms else None,
            "saved_ms_total": round(sum(s for s, _ in saved), 1),
            "saved_ms_per_hit": round(sum(s for s, h in saved if h) / max(1, n_hits), 2),
            "others": len(others), "false_hits": false_hits}


def _stale_check(kb, fresh_kb, cache: SemanticCache, items: list[dict], k: int, mode: RetrievalMode) -> dict:
    """Add a document, ask again, delete it, ask again: ``{after_add: {...}, after_delete: {...}}``.

    Each phase: ``asked``, ``reused`` (hits made after the change, in its new scope), ``reused_from_before``
    (originals, each asked first after the change, that were reused: only an entry from before the change
    could serve them, so 0 is right), ``stale`` (results
    that differ from what the store answers now for the question they were retrieved for: 0 is right),
    ``new_document_first`` (the added document ranks first for the first question: True after the add).
    """
    texts = [t for item in items for t in [item["question"], *(p["text"] for p in item["paraphrases"])]]
    first = items[0]["question"]
    (doc,) = corpus_documents([{"_id": f"stale-check-{time.time_ns()}", "title": "Stale check",
                                "text": f"{first} {first}"}])
    out = {}
    kb.add_documents([doc])
    originals = {item["question"] for item in items}  # each asked before its paraphrases
    for phase in ("after_add", "after_delete"):
        reused = wrong = from_before = 0
        for text in texts:
            got, reuse = cache.retrieve(kb, text, k, mode, _searcher(kb, text, k, mode))
            reused += reuse is not None
            from_before += reuse is not None and text in originals  # nothing in the new state held it yet
            # what the store answers now for the question whose chunks were served
            wrong += _ids(got) != _ids(retrieve(fresh_kb, reuse.question if reuse else text, k, mode))
        out[phase] = {"asked": len(texts), "reused": reused, "reused_from_before": from_before,
                      "stale": wrong,
                      "new_document_first": _ids(retrieve(fresh_kb, first, 1, mode)) == [doc[0][0].id]}
        if phase == "after_add":
            kb.delete_document(doc[0][0].doc_sha)
    return out
