"""The keyword index's posting lists, counted over a whole batch with numpy (rag/store/lexical.py).

:func:`build_postings` must give exactly the bytes the per-chunk loop it replaced gave (a ``Counter`` per
chunk, postings grouped by term in order of first appearance, rows ascending within a term): indexes built
before keep their layout, and a posting list is appended to by concatenation.
"""

from __future__ import annotations

import json
from array import array
from collections import Counter

import numpy as np
import pytest

from rag.store.lexical import build_postings
from rag.text import terms
from tests.conftest import DATA

HOTPOT = DATA / "hotpotqa" / "corpus.jsonl"


def reference(chunk_terms: list[list[str]], first_row: int) -> dict[str, bytes]:
    """The loop of the index before: term -> its postings as int32 (row, tf, length) bytes, in vocab order."""
    vocab: dict[str, int] = {}
    owners: list[int] = []
    triples: list[tuple[int, int, int]] = []
    for row, toks in enumerate(chunk_terms, first_row):
        for t, tf in Counter(toks).items():
            owners.append(vocab.setdefault(t, len(vocab)))
            triples.append((row, tf, len(toks)))
    lists: dict[str, array] = {t: array("i") for t in vocab}
    names = list(vocab)
    for owner, triple in zip(owners, triples, strict=True):
        lists[names[owner]].extend(triple)
    return {t: a.tobytes() for t, a in lists.items()}


def built(chunk_terms: list[list[str]], first_row: int) -> dict[str, bytes]:
    terms_, bounds, triples = build_postings(chunk_terms, first_row)
    assert triples.dtype == np.int32 and triples.shape == (int(bounds[-1]), 3)
    assert len(bounds) == len(terms_) + 1 and bounds[0] == 0
    return {t: triples[bounds[i]:bounds[i + 1]].tobytes() for i, t in enumerate(terms_)}


@pytest.mark.parametrize("chunk_terms", [
    [],
    [[]],
    [[], [], []],
    [["rag"]],
    [["rag", "rag", "rag"], [], ["rag", "index", "rag"]],
    [["检索", "索器"], ["检索"], ["a", "b", "a", "b", "a"]],
    [["b", "a"], ["a", "b"], ["c"], ["a"]],
])
def test_small_batches_match_the_per_chunk_loop(chunk_terms):
    for first_row in (1, 17):
        got, want = built(chunk_terms, first_row), reference(chunk_terms, first_row)
        assert list(got) == list(want)  # terms in order of first appearance
        assert got == want


def test_a_different_first_row_shifts_only_the_rows():
    chunk_terms = [["retrieval", "augment", "retrieval"], ["augment"]]
    _, _, one = build_postings(chunk_terms, 1)
    _, _, later = build_postings(chunk_terms, 1001)
    assert np.array_equal(later[:, 0], one[:, 0] + 1000)
    assert np.array_equal(later[:, 1:], one[:, 1:])
    assert one.tolist() == [[1, 2, 3], [1, 1, 3], [2, 1, 1]]  # retrieval: row 1 tf 2; augment: rows 1, 2


@pytest.mark.skipif(not HOTPOT.exists(), reason="../shared/data/hotpotqa is not there")
def test_real_text_matches_the_per_chunk_loop_byte_for_byte():
    with HOTPOT.open(encoding="utf-8") as fh:
        texts = [json.loads(line)["text"] for line, _ in zip(fh, range(2000), strict=False)]
    chunk_terms = [terms(t) for t in texts]
    assert len(chunk_terms) == 2000
    got, want = built(chunk_terms, 5), reference(chunk_terms, 5)
    assert len(got) > 10_000 and got == want
