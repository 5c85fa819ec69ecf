"""The offline hashing embeddings: the vectorised ``embed_terms`` is the per-feature sum, bit for bit.

Stored knowledge bases were built by summing features one by one, so their vectors must not move.
"""

from __future__ import annotations

import json
import math
import zlib
from collections import Counter

import numpy as np
import pytest

from rag.store.embeddings import HashingEmbeddingFunction
from rag.text import terms
from tests.conftest import DATA

HOTPOT = DATA / "hotpotqa" / "corpus.jsonl"


def reference(toks: list[str], dim: int) -> np.ndarray:
    """The per-feature definition, summed one feature at a time in feature order.

    Each distinct term weighs 1 + ln tf and each distinct adjacent pair 0.5, into its signed CRC-32 slot.
    """
    features = [(t, 1.0 + math.log(tf)) for t, tf in Counter(toks).items()]
    features += [(p, 0.5) for p in dict.fromkeys(f"{a} {b}" for a, b in zip(toks, toks[1:], strict=False))]
    vec = np.zeros(dim, dtype=np.float64)
    if not features:
        vec[0] = 1.0
        return vec.astype(np.float32)
    slots, weights = [], []
    for feature, weight in features:
        h = zlib.crc32(feature.encode("utf-8"))
        slots.append(h % dim)
        weights.append(weight if (h >> 31) & 1 else -weight)
    out = np.bincount(np.array(slots), weights=np.array(weights), minlength=dim).astype(np.float32)
    norm = float(np.linalg.norm(out))
    if norm == 0.0:
        out[0] = 1.0
        return out
    return out / norm


def texts(limit: int = 400) -> list[str]:
    out = []
    with HOTPOT.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            out.append(f"{row.get('title', '')} {row.get('text', '')}")
            if len(out) == limit:
                break
    return out


@pytest.mark.skipif(not HOTPOT.exists(), reason="../shared/data/hotpotqa is not there")
@pytest.mark.parametrize("dim", [16, 1024])
def test_vectors_equal_the_per_feature_sum_on_real_text(dim):
    ef = HashingEmbeddingFunction(dim)
    corpus = texts()
    assert len(corpus) == 400
    for text in corpus:
        toks = terms(text)
        got, want = ef.embed_terms(toks), reference(toks, dim)
        assert got.dtype == np.float32 and got.shape == (dim,)
        assert np.array_equal(got, want), text[:80]
        assert abs(float(np.linalg.norm(got)) - 1.0) < 1e-5


@pytest.mark.parametrize("toks", [[], ["rag"], ["rag", "rag", "rag"], ["检", "索", "检索", "索器"],
                                  ["a", "b", "a", "b", "a"]])
def test_edge_cases_match_the_definition(toks):
    ef = HashingEmbeddingFunction(64)
    got = ef.embed_terms(toks)
    assert np.array_equal(got, reference(toks, 64))
    if not toks:
        assert got[0] == 1.0 and float(np.abs(got).sum()) == 1.0


def test_the_same_text_through_chroma_protocol_and_terms():
    ef = HashingEmbeddingFunction(1024)
    text = "Retrieval-augmented generation retrieves passages, then generates an answer."
    assert np.array_equal(ef([text])[0], ef.embed_terms(terms(text)))
    assert np.array_equal(ef.embed_one(text), reference(terms(text), 1024))
