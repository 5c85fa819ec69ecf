"""Recall@k of each retrieval mode alone (dense, BM25, hybrid), without the graph.

On a BEIR dataset indexed one passage per chunk; the first mode is the baseline.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import cast

from rag.bench.data import BeirData, Progress, mean, percentile, recall
from rag.store.retrieval import RetrievalMode, retrieve


def retrieval_recall(kb, data: BeirData, chunk_to_doc: dict[str, str], *, k: int = 6,
                     modes: Sequence[str] = ("dense", "bm25", "hybrid"),
                     on_progress: Progress = None) -> list[dict]:
    """Recall@k of each retrieval mode alone (no graph).

    Args:
        kb: the ``KnowledgeBase`` holding the corpus.
        data: the questions and their qrels.
        chunk_to_doc: chunk id -> corpus id.
        k: chunks retrieved per question.
        modes: retrieval modes, in order.
        on_progress: ``(done, total)`` in queries over all modes.

    Returns:
        One row per mode: ``mode``, ``k``, ``questions``, ``recall_all``, ``recall_any``,
        ``recall_mean`` (share of supporting ids found, averaged) and query latency
        ``latency_ms_p50``/``_p95`` (ms).

    Raises:
        ValueError: an unknown mode.
    """
    out = []
    total = len(modes) * len(data.queries)
    done = 0
    for mode in modes:
        alls, anys, shares, lat = [], [], [], []
        for q in data.queries:
            started = time.perf_counter()
            chunks = retrieve(kb, q["text"], k, cast(RetrievalMode, mode))  # ValueError if unknown
            lat.append((time.perf_counter() - started) * 1000)
            a, b, s = recall([chunk_to_doc.get(c.id, c.id) for c in chunks], data.qrels[q["_id"]])
            alls.append(a)
            anys.append(b)
            shares.append(s)
            done += 1
            if on_progress:
                on_progress(done, total)
        out.append({"mode": mode, "k": k, "questions": len(data.queries),
                    "recall_all": round(mean(alls), 4), "recall_any": round(mean(anys), 4),
                    "recall_mean": round(mean(shares), 4),
                    "latency_ms_p50": round(percentile(lat, 50), 2),
                    "latency_ms_p95": round(percentile(lat, 95), 2)})
    return out
