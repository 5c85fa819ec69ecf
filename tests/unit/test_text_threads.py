"""The stemmer under concurrency: Compare runs pipelines in parallel threads over one engine."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

from rag.text import stem

BASES = [
    "retrieval",
    "augmented",
    "generation",
    "trains",
    "retriever",
    "jointly",
    "generator",
    "grading",
    "documents",
    "rewriting",
    "queries",
    "searching",
    "checking",
    "grounding",
    "answering",
]


def test_stems_are_the_same_from_many_threads():
    # Distinct words in every thread, so the stem cache cannot hide a shared stemmer's state.
    words = [[f"{b}{'x' * (i % 7)}ations{t}{i}" for i, b in enumerate(BASES * 150)] for t in range(8)]
    expected = [[stem.__wrapped__(w) for w in ws] for ws in words]
    stem.cache_clear()
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(lambda ws: [stem(w) for w in ws], words))
    finally:
        sys.setswitchinterval(old)
    assert results == expected
