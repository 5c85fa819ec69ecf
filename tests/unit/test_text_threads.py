"""The stemmer under concurrency: Compare runs pipelines in parallel threads over one engine."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rag.text import stem

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

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


def test_the_c_stemmer_gives_snowballs_stems_on_a_real_paper():
    """PyStemmer (C), which snowballstemmer runs when installed, stems exactly as Snowball's Python does.

    Keyword indexes store stems, so another stem for the same word would make old documents unmatchable.
    """
    import snowballstemmer
    import Stemmer
    from snowballstemmer.english_stemmer import EnglishStemmer

    from rag.ingest.loaders import load_document
    from rag.text import words

    assert snowballstemmer.stemmer is Stemmer.Stemmer  # the fast path is the one in use
    paper = DATA / "papers" / "2005.11401v4_lewis_rag.pdf"
    doc = load_document(paper.name, paper.read_bytes())
    vocab = sorted({w for p in doc.pages for w in words(p.text)})
    assert len(vocab) > 2000
    python = EnglishStemmer()
    assert [stem(w) for w in vocab] == [python.stemWord(w) for w in vocab]
