"""An ingest stores what it stored before the ingestion speed work of issue 22, bit for bit.

Two papers and the BRK 10-K (streamed range by range by the workers), in one process and with two workers:
the chunk ids, metadata (but the time added) and the keyword index (each chunk's terms, and each term's
postings as (chunk id, tf, length)) hash to the digests the code before it gave (commit 3c59c62). A change of
PDFium's text or of the tokenizer changes them too: then check the change, and take the new digests.

Each stored vector is what the knowledge base's embedding function gives for the chunk's text now, but for
the last bits of its float32 weights: the workers and the store's batches change nothing. The vectors are not
compared with a digest, since those last bits depend on the processor (numpy's SIMD ``log``, the BLAS norm):
the digest taken on an AMD EPYC machine (e6816996fdaa0d5d) was 19dfb79be5be8f54 on an Intel Xeon with
AVX-512, for the same code.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from rag.ingest.pipeline import ingest_files
from rag.store.bm25 import keyword_index
from rag.store.embeddings import HashingEmbeddingFunction
from rag.store.keyword_db import sql
from tests.conftest import LEWIS, SELF_RAG, TRICKY

BRK = TRICKY / "darinzRAG__brk_2024_10-k_sec.pdf"
EXPECTED = {"chunks": 909, "ids": "e6dad52b660044b6", "metadata": "a4cf9e07bb87680a",
            "keyword_chunks": "4e845fd55c52334e", "keyword_postings": "cad98e992d6de071"}
"""Round 15 dropped trademark signs before NFKC: three chunks of the 10-K (pages 17, 21 and 23) lost the "TM"
NFKC had glued to names ("SquishmallowsTM"), and the normalised-text spans after them moved; every chunk id
and every span in PDFium's text (``pdf_start``/``pdf_end``) stayed the same. Before it (commit 3c59c62 to
b99fc63): metadata f042a6b998bf4af7, vectors b374d6557669a1ab, keyword chunks e2cdf7fdfcb49904, postings
81d92a4e561bae71."""


def digest(kb) -> dict:
    """Hashes of what ``kb`` holds (sha256, 16 hex digits), whatever the order it was written in."""
    got = kb.collection.get(include=["metadatas"])
    h = {k: hashlib.sha256() for k in ("ids", "metadata", "keyword_chunks", "keyword_postings")}
    for cid, meta in sorted(zip(got["ids"], got["metadatas"], strict=True), key=lambda r: r[0]):
        h["ids"].update(cid.encode() + b"\n")
        h["metadata"].update(json.dumps({k: v for k, v in meta.items() if k != "added_at"},
                                        sort_keys=True).encode())
    with keyword_index(kb).store.read() as db:
        names = {}
        for row, cid, sha, length, toks in db.execute(sql(
                "SELECT row, chunk_id, doc_sha, length, terms FROM keyword_chunks ORDER BY chunk_id")):
            names[row] = cid
            h["keyword_chunks"].update(f"{cid}|{sha}|{length}|{toks}\n".encode())
        lists: dict[str, bytes] = {}  # a term's segments, joined
        for term, blob in db.execute(sql("SELECT term, rows FROM keyword_segments ORDER BY term, seg")):
            lists[term] = lists.get(term, b"") + bytes(blob)
        for term, blob in lists.items():
            posts = sorted((names[int(r)], int(tf), int(n))
                           for r, tf, n in np.frombuffer(blob, dtype=np.int32).reshape(-1, 3))
            h["keyword_postings"].update(term.encode() + b"|" + json.dumps(posts).encode())
    return {"chunks": len(got["ids"]), **{k: v.hexdigest()[:16] for k, v in h.items()}}


@pytest.mark.slow
@pytest.mark.skipif(not BRK.exists(), reason="../shared/data is not there")
@pytest.mark.parametrize("workers", [1, 2])
def test_an_ingest_stores_what_it_stored_before(kb, workers):
    reports = ingest_files(kb, [LEWIS, SELF_RAG, BRK], workers=workers)
    assert [r.status for r in reports] == ["ingested"] * 3
    assert digest(kb) == EXPECTED
    got = kb.collection.get(include=["embeddings"])
    text = {c.id: c.text for c in kb.iter_chunks()}
    stored = np.asarray(got["embeddings"], dtype=np.float32)
    embedded = np.asarray(HashingEmbeddingFunction()([text[i] for i in got["ids"]]), dtype=np.float32)
    assert stored.shape == (EXPECTED["chunks"], 1024)
    # the same features in the same slots: only the last bits of the float32 weights may differ (measured: at
    # most 3e-8 here); a feature of another weight, or in another slot, would differ by 0.01 or more
    assert np.abs(stored - embedded).max() < 1e-6 and (np.sign(stored) == np.sign(embedded)).all()
