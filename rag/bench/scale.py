"""Retrieval latency in a store of many chunks.

Fill a store with synthetic chunks of real
prose, rebuild and reload the keyword index, time every retrieval mode (dense is the
baseline), then the first question after adding and after deleting one document.
"""

from __future__ import annotations

import hashlib
import random
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

from rag.bench.data import Progress, mean, percentile, ratio
from rag.ingest.types import ChunkRecord
from rag.store.bm25 import index_path, lexical_index
from rag.store.chroma import COMPLETE_KEY
from rag.store.kbs import fresh_metadata
from rag.store.records import TEXT_KEY
from rag.store.retrieval import RetrievalMode, retrieve
from rag.text import sentences
from rag.text import terms as text_terms


def synthetic_documents(corpus: Sequence[dict], n_chunks: int, *, seed: int = 0,
                        chunks_per_doc: int = 20) -> Iterator[tuple[list[ChunkRecord], int, int]]:
    """``n_chunks`` chunks of real prose for a scale test.

    Each is 4 to 8 sentences drawn at
    random (seeded) from ``corpus`` texts, about 600 characters, grouped into documents of
    ``chunks_per_doc`` chunks.

    Args:
        corpus: rows with a ``text``; sentences of 20 characters or fewer are not used.
        n_chunks: chunks in all.
        seed: the same seed gives the same ids and texts.
        chunks_per_doc: chunks per document (the last may have fewer).

    Yields:
        ``(chunks, pages, size_bytes)`` per document, ready for ``KnowledgeBase.add_documents``.

    Raises:
        ValueError: the corpus has no sentence to sample.
    """
    pool = [s for row in corpus for s in sentences(str(row.get("text", ""))) if len(s) > 20]
    if not pool:
        raise ValueError("the corpus has no sentences to sample")
    rng = random.Random(seed)
    made = 0
    doc_no = 0
    while made < n_chunks:
        sha = hashlib.sha256(f"retrace-scale/{seed}/{doc_no}".encode()).hexdigest()
        source = f"synthetic-{doc_no:06d}.txt"
        records = []
        for index in range(min(chunks_per_doc, n_chunks - made)):
            text = " ".join(rng.choice(pool) for _ in range(rng.randint(4, 8)))
            records.append(ChunkRecord(
                id=f"{sha[:16]}-{index:05d}", text=text, source=source, page=1, index=index,
                doc_sha=sha, metadata={"source": source, "page": 1, "chunk_index": index,
                                       "doc_sha": sha}))
        made += len(records)
        doc_no += 1
        yield records, 1, sum(len(r.text) for r in records)


def fill_store(kb, corpus: Sequence[dict], n_chunks: int, *, seed: int = 0,
               batch_docs: int = 50, mark: int | None = None, on_progress: Progress = None) -> dict:
    """Fill ``kb`` with :func:`synthetic_documents` up to ``n_chunks`` chunks.

    Documents already stored are skipped, so a filled store is reused.

    Args:
        kb: the ``KnowledgeBase`` to fill.
        corpus: the rows whose sentences are sampled.
        n_chunks: chunks in all.
        seed: the sampling seed.
        batch_docs: documents per store call.
        mark: also time the fill up to this many chunks (the first store call reaching it).
        on_progress: ``(done, total)`` in chunks.

    Returns:
        ``added`` (chunks), ``seconds`` and ``chunks_per_s`` (None when nothing was added); with
        ``mark``, ``mark_added``, ``mark_seconds`` and ``mark_chunks_per_s`` (chunks added, seconds and
        rate up to the mark; None when nothing was added by then).
    """
    started = time.perf_counter()
    added = 0
    batch: list = []
    seen = 0
    marked: dict = {}

    def at_mark() -> None:
        if mark is not None and not marked and seen >= mark:
            secs = time.perf_counter() - started
            marked.update(mark_added=added, mark_seconds=round(secs, 1),
                          mark_chunks_per_s=round(added / secs, 1) if added and secs else None)

    def flush() -> None:
        nonlocal added, batch
        shas = [d[0][0].doc_sha for d in batch]
        stored = {m["doc_sha"] for m in kb.collection.get(  # complete ones only (their record)
            where={"$and": [{"doc_sha": {"$in": shas}}, {COMPLETE_KEY: {"$gt": 0}}]},
            include=["metadatas"])["metadatas"]}
        todo = [d for d in batch if d[0][0].doc_sha not in stored]
        if todo:
            added += kb.add_documents(todo)
        batch = []

    for doc in synthetic_documents(corpus, n_chunks, seed=seed):
        batch.append(doc)
        seen += len(doc[0])
        if len(batch) >= batch_docs:
            flush()
            at_mark()
            if on_progress:
                on_progress(seen, n_chunks)
    if batch:
        flush()
        at_mark()
        if on_progress:
            on_progress(seen, n_chunks)
    seconds = time.perf_counter() - started
    return {"added": added, "seconds": round(seconds, 1),
            "chunks_per_s": round(added / seconds, 1) if added and seconds else None, **marked}


def chroma_add_rate(kb, corpus: Sequence[dict], n_chunks: int, *, seed: int = 0,
                    scratch_dir: Path | None = None) -> dict:
    """Chroma's own ``add`` of ``n_chunks`` precomputed vectors: the limit of :func:`fill_store`.

    The first ``n_chunks`` of :func:`synthetic_documents` (the fill's ids, vectors and metadata, text
    included) go to a scratch collection in batches of ``kb.max_batch_size()``. Each batch is embedded
    first, untimed; only the ``add`` calls are timed. With ``scratch_dir``, the collection is in a fresh
    ``PersistentClient`` there (an empty store, its directory removed after); else it sits beside
    ``kb``'s on its client and is deleted after.

    Returns:
        ``chunks``, ``seconds`` (the add calls), ``chunks_per_s``, ``embed_s`` (untimed above) and
        ``batch`` (records per add).
    """
    import chromadb

    ef = kb.embedding_function
    embed_terms = getattr(ef, "embed_terms", None)
    if scratch_dir is not None:
        shutil.rmtree(scratch_dir, ignore_errors=True)
        client = chromadb.PersistentClient(
            path=str(scratch_dir), settings=chromadb.config.Settings(anonymized_telemetry=False))
    else:
        client = kb.client
    name = f"{kb.name[:50]}-chroma-add"
    if name in [getattr(c, "name", c) for c in client.list_collections()]:
        client.delete_collection(name)
    col = client.create_collection(name, embedding_function=ef, metadata=fresh_metadata(ef))
    size = kb.max_batch_size()
    records = (r for chunks, _, _ in synthetic_documents(corpus, n_chunks, seed=seed) for r in chunks)
    add_s = embed_s = 0.0
    done = 0
    now = time.time()
    try:
        while True:
            batch = [r for _, r in zip(range(size), records, strict=False)]
            if not batch:
                break
            t = time.perf_counter()
            vectors = ([embed_terms(text_terms(r.text)) for r in batch] if embed_terms is not None
                       else list(ef([r.text for r in batch])))
            metadatas: list[Any] = [{**r.metadata, "pages": 1, "size_bytes": len(r.text), "added_at": now,
                          TEXT_KEY: r.text} for r in batch]
            embed_s += time.perf_counter() - t
            t = time.perf_counter()
            col.add(ids=[r.id for r in batch], embeddings=vectors, metadatas=metadatas)
            add_s += time.perf_counter() - t
            done += len(batch)
    finally:
        client.delete_collection(name)
        if scratch_dir is not None:
            del col, client
            shutil.rmtree(scratch_dir, ignore_errors=True)
    return {"chunks": done, "seconds": round(add_s, 1),
            "chunks_per_s": round(done / add_s, 1) if add_s else None, "embed_s": round(embed_s, 1),
            "batch": size}


def disk_mb(*paths: Path) -> float:
    """The size in MB (10^6 bytes) of the files under ``paths`` (those missing count 0)."""
    total = sum(f.stat().st_size for p in paths if p.exists() for f in p.rglob("*") if f.is_file())
    return round(total / 1e6, 1)


def bench_scale(kb, queries: Sequence[str], *, k: int = 6,
                modes: Sequence[str] = ("dense", "bm25", "hybrid"),
                reopen: Callable[[], object] | None = None,
                corpus: Sequence[dict] | None = None,
                on_progress: Progress = None) -> dict:
    """Query latency of each retrieval mode over ``kb``, and what changes to the store cost.

    The keyword index's build and load times, and the wait of the first question after adding (and after
    deleting) one document. Every query runs once per mode, after 5 warm-up queries, each checking the store
    for changes (:meth:`KnowledgeBase.forget_fingerprint` first: questions seconds apart each pay that
    check, the retrievals within one question share it). The keyword index is
    first rebuilt from the whole store (forced: its file is removed; an index in the shared database,
    ``bm25_shared``, is only checked against the store); when ``reopen`` is given, the fresh
    KnowledgeBase object it returns on the same store (a restart) opens it from disk. With ``corpus``, for
    each mode one new document of 20 synthetic chunks is added (:meth:`KnowledgeBase.add_documents`), the
    next question is timed, the document is deleted and the next question timed again: each beside that
    mode's median and slowest question of the same run. The store is left as it was.

    Args:
        kb: the ``KnowledgeBase`` to query.
        queries: question texts.
        k: chunks per query.
        modes: retrieval modes; dense, when present, is the baseline of the ratios.
        reopen: returns a new ``KnowledgeBase`` on the same store.
        corpus: rows with a ``text`` to sample the added documents from.
        on_progress: ``(done, total)`` in queries over all modes.

    Returns:
        ``chunks``, ``k``, ``queries``, ``bm25_shared``, ``bm25_build_s``, with ``reopen`` also
        ``bm25_load_s`` and ``bm25_build_vs_load``; ``modes``: per mode ``latency_ms_p50``/``_p95``/
        ``_max``/``_mean`` (ms) and ``p50_vs_dense``; with ``corpus`` ``after_change``: per mode and
        change (``add``, ``delete``) ``change_ms`` (the store call), ``first_ms`` (the next question),
        ``extra_ms`` (first_ms - p50), ``extra_vs_max_ms`` (first_ms - the slowest question) and
        ``first_vs_p50``.
    """
    out: dict = {"chunks": kb.count(), "k": k, "queries": len(queries)}
    old = kb.__dict__.pop("_keyword_index", None)
    if old is not None:
        old.close()
    shared = bool(getattr(kb, "database_url", None))
    out["bm25_shared"] = shared  # in the shared database the index is never rebuilt: only checked
    path = None if shared else index_path(kb)
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)
    t = time.perf_counter()
    lexical_index(kb)
    out["bm25_build_s"] = round(time.perf_counter() - t, 2)
    if reopen is not None:
        fresh = reopen()
        t = time.perf_counter()
        lexical_index(fresh)
        out["bm25_load_s"] = round(time.perf_counter() - t, 3)
        out["bm25_build_vs_load"] = ratio(out["bm25_build_s"], out["bm25_load_s"])
    total = len(modes) * len(queries)
    done = 0
    modes_out: dict[str, dict] = {}
    for mode in modes:
        for q in list(queries)[:5]:
            retrieve(kb, q, k, cast(RetrievalMode, mode))  # retrieve refuses an unknown mode
        lat = []
        for q in queries:
            kb.forget_fingerprint()  # each question checks the store for changes, as one seconds later does
            started = time.perf_counter()
            retrieve(kb, q, k, cast(RetrievalMode, mode))
            lat.append((time.perf_counter() - started) * 1000)
            done += 1
            if on_progress:
                on_progress(done, total)
        modes_out[mode] = {"latency_ms_p50": round(percentile(lat, 50), 2),
                           "latency_ms_p95": round(percentile(lat, 95), 2),
                           "latency_ms_max": round(max(lat), 2),
                           "latency_ms_mean": round(mean(lat), 2)}
    base = modes_out.get("dense", {}).get("latency_ms_p50", 0.0)
    for row in modes_out.values():
        row["p50_vs_dense"] = ratio(row["latency_ms_p50"], base)
    out["modes"] = modes_out
    if corpus is not None and queries:
        out["after_change"] = _first_question_after_change(kb, queries, k, modes_out, corpus)
    return out


def _first_question_after_change(kb, queries: Sequence[str], k: int, modes_out: dict[str, dict],
                                 corpus: Sequence[dict]) -> list[dict]:
    """Add one document, time the next question, delete it, time the next one (per mode)."""
    rows = []
    for i, mode in enumerate(modes_out):
        [doc] = list(synthetic_documents(corpus, 20, seed=1_000_000 + i))
        stats = modes_out[mode]
        for change in ("add", "delete"):
            started = time.perf_counter()
            if change == "add":
                kb.add_documents([doc])
            else:
                kb.delete_document(doc[0][0].doc_sha)
            change_ms = (time.perf_counter() - started) * 1000
            kb.forget_fingerprint()  # as for every timed question: the store is checked for changes
            started = time.perf_counter()
            retrieve(kb, queries[i % len(queries)], k, cast(RetrievalMode, mode))
            first = (time.perf_counter() - started) * 1000
            rows.append({"mode": mode, "change": change, "change_ms": round(change_ms, 1),
                         "first_ms": round(first, 2), "p50_ms": stats["latency_ms_p50"],
                         "max_ms": stats["latency_ms_max"],
                         "extra_ms": round(first - stats["latency_ms_p50"], 2),
                         "extra_vs_max_ms": round(first - stats["latency_ms_max"], 2),
                         "first_vs_p50": ratio(first, stats["latency_ms_p50"])})
    return rows
